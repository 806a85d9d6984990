#!/usr/bin/python3
"""RPC against the machine's floor (issue 54), in one run, on the same payloads (8 B,
4 KiB, 1 MiB each way):
  - a raw TCP ping-pong and a shared-memory ping-pong written in C++ (bench_rpc_floor);
  - rpc_sync echoing a tensor of that many bytes on each of our transports (rpc-ping
    --echo-bytes, 2 workers under mpirun, DDPSCOPE_RPC_TRANSPORT=shm|tcp|zmq);
  - PyTorch 1.13's RPC with its defaults (TensorPipe), the same echo (rpc_torch_echo.py).
Rounds alternate; prints the medians and each ratio to raw TCP (target: rpc_sync at most
2x on one host), and the 1 MiB echo rate against raw TCP's one-way rate (target >= 1.5x,
which needs shared memory).
Usage: run_rpc_floor.py BUILD_DIR [ROUNDS]"""
import json
import os
import statistics
import subprocess
import sys

from two_rank_bench import built

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOADS = [8, 4096, 1 << 20]
CALLS = 2000
TRANSPORTS = ["shm", "tcp", "zmq"]


def calls_for(size):
    return CALLS if size < (1 << 20) else 100


def floor(build):
    out = subprocess.run([built(build, "bench_rpc_floor"), str(CALLS)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def ours(build, transport, size):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               DDPSCOPE_RPC_TRANSPORT=transport)
    line = subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "rpc-ping", "--np", "2", "--calls",
                           str(calls_for(size)), "--echo-bytes", str(size), "--bytes", str(1 << 20), "--json"],
                          env=env, check=True, capture_output=True, text=True).stdout
    r = json.loads([l for l in line.splitlines() if l.startswith("{")][-1])
    return r["median_round_trip_us"], r["throughput_mb_s"]


def torch_echo(size):
    line = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "rpc_torch.py"), str(calls_for(size)),
                           "--echo-bytes", str(size), str(1 << 20)], check=True, capture_output=True, text=True).stdout
    r = json.loads(line.strip().splitlines()[-1])
    return r["median_round_trip_us"], r["throughput_mb_s"][str(1 << 20)]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rows = []
    for _ in range(rounds):
        row = {"floor": floor(build), "rpc_sync_us": {}, "echo_1mib_mb_s": {}}
        for size in PAYLOADS:
            for t in TRANSPORTS:
                us, rate = ours(build, t, size)
                row["rpc_sync_us"].setdefault(t, {})[str(size)] = us
                row["echo_1mib_mb_s"][t] = rate
            us, rate = torch_echo(size)
            row["rpc_sync_us"].setdefault("pytorch", {})[str(size)] = us
            row["echo_1mib_mb_s"]["pytorch"] = rate
        rows.append(row)
    med = statistics.median
    result = {"rounds": len(rows), "payloads": {}}
    for size in PAYLOADS:
        key = str(size)
        tcp = med(r["floor"]["payloads"][key]["raw_tcp_round_trip_us"] for r in rows)
        entry = {"raw_tcp_round_trip_us": tcp,
                 "shm_round_trip_us": med(r["floor"]["payloads"][key]["shm_round_trip_us"] for r in rows)}
        for t in TRANSPORTS + ["pytorch"]:
            us = med(r["rpc_sync_us"][t][key] for r in rows)
            entry["rpc_sync_us_" + t] = us
            entry["ratio_to_raw_tcp_" + t] = us / tcp
        result["payloads"][key] = entry
    one_way = med(r["floor"]["raw_tcp_one_way_mb_s_1mib"] for r in rows)
    result["raw_tcp_one_way_mb_s_1mib"] = one_way
    for t in TRANSPORTS + ["pytorch"]:
        rate = med(r["echo_1mib_mb_s"][t] for r in rows)
        result["echo_1mib_mb_s_" + t] = rate
        result["echo_1mib_ratio_to_raw_tcp_one_way_" + t] = rate / one_way
    result["targets"] = {"rpc_sync_ratio_to_raw_tcp": 2.0, "echo_1mib_ratio_to_raw_tcp_one_way": 1.5}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
