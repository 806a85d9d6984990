#!/usr/bin/python3
"""RPC benchmark: ours (ddpscope-cli rpc-ping, 2 workers under mpirun) against
PyTorch 1.13's RPC (TensorPipe) in the same invocation, alternating ROUNDS times; prints
the medians and the ratios as JSON.
  latency_ratio    = ours / PyTorch median round trip of a 3x3 f32 add   (target <= 0.1)
  zeromq_floor_ratio = a bare ZeroMQ ping-pong / PyTorch: the lowest latency_ratio the
                     transport allows on this machine
  throughput_ratio = ours / PyTorch echo throughput at 1 MiB and 16 MiB  (target >= 2 at 1 MiB)
Usage: run_rpc.py BUILD_DIR [ROUNDS]"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [1 << 20, 16 << 20]
CALLS = 1000


def ours(build):
    cli = os.path.join(build, "bin", "ddpscope-cli")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = {"throughput_mb_s": {}}
    for b in SIZES:
        line = subprocess.run([cli, "rpc-ping", "--np", "2", "--calls", str(CALLS), "--bytes", str(b), "--json"],
                              env=env, check=True, capture_output=True, text=True).stdout
        r = json.loads([l for l in line.splitlines() if l.startswith("{")][-1])
        out["median_round_trip_us"] = min(out.get("median_round_trip_us", 1e18), r["median_round_trip_us"])
        out["allocations_per_call"] = r["peers"][0]["allocations_per_call"]
        out["zeromq_round_trip_us"] = min(out.get("zeromq_round_trip_us", 1e18), r["zeromq_round_trip_us"])
        out["throughput_mb_s"][str(b)] = r["throughput_mb_s"]
    return out


def torch_rpc():
    line = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "rpc_torch.py"), str(CALLS)] + [str(b) for b in SIZES],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(line.strip().splitlines()[-1])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    lat, thr = [], {str(b): [] for b in SIZES}
    rows = []
    for _ in range(rounds):
        o, t = ours(build), torch_rpc()
        rows.append({"ours": o, "pytorch": t})
        lat.append(o["median_round_trip_us"] / t["median_round_trip_us"])
        for b in SIZES:
            thr[str(b)].append(o["throughput_mb_s"][str(b)] / t["throughput_mb_s"][str(b)])
    result = {
        "rounds": rows,
        "ours_median_round_trip_us": statistics.median(r["ours"]["median_round_trip_us"] for r in rows),
        "pytorch_median_round_trip_us": statistics.median(r["pytorch"]["median_round_trip_us"] for r in rows),
        "latency_ratio": statistics.median(lat),
        # The transport's own floor against PyTorch: the best latency ratio ZeroMQ allows here.
        "ours_zeromq_round_trip_us": statistics.median(r["ours"]["zeromq_round_trip_us"] for r in rows),
        "zeromq_floor_ratio": statistics.median(r["ours"]["zeromq_round_trip_us"] / r["pytorch"]["median_round_trip_us"]
                                                for r in rows),
        "throughput_ratio": {b: statistics.median(v) for b, v in thr.items()},
        "ours_allocations_per_small_call": rows[-1]["ours"]["allocations_per_call"],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
