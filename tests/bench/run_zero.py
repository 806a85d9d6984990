#!/usr/bin/python3
"""ZeRO and SyncBatchNorm benchmark: ddpscope (mpirun, 2 ranks; bench_zero) against PyTorch
1.13 on gloo (2 processes; zero_torch.py), the same 8 x Linear(1024) MLP with AdamW, in the
same run. Per mode, the median iteration time and the optimizer-state bytes a rank holds.
Prints, for the issue's targets:
  zero_overlap_over_ddp   ddpscope's ZeRO with overlap / its plain DDP    (target <= 1.05)
  ours_over_pytorch       ddpscope / PyTorch, per mode both can run       (target <= 0.5)
Modes PyTorch 1.13 refuses on CPU and gloo (overlap_with_ddp needs NCCL; SyncBatchNorm
needs GPU modules) are reported with its error, not compared.

Both sides get OPENBLAS_NUM_THREADS=1, and PyTorch gets the OpenBLAS kernels ddpscope
chose (OPENBLAS_CORETYPE), so the engines are compared on equal GEMMs. PyTorch runs with
its defaults otherwise.

    /usr/bin/python3 tests/bench/run_zero.py --build build
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("ddp", "zero", "zero_overlap", "batch_norm", "sync_bn")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ours(binary, steps, env):
    cmd = ["mpirun", "-np", "2", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    out = subprocess.run(cmd + [binary, str(steps)], env=env, check=True, capture_output=True, text=True).stdout
    return {m["mode"]: m for m in json.loads(out.strip().splitlines()[-1])["modes"]}, json.loads(
        out.strip().splitlines()[-1])["openblas_core"]


def run_torch(mode, steps, env):
    port = str(free_port())
    procs = []
    for rank in range(2):
        e = dict(env, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "zero_torch.py"), mode, str(steps)],
                                      env=e, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit(f"the PyTorch side failed in mode {mode}")
    return json.loads(outs[0].strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)  # this shared machine is noisy
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    binary = os.path.join(args.build, "tests", "bench", "bench_zero")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: build the project first (bash packaging/build.sh)")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    ours, theirs = {m: [] for m in MODES}, {m: [] for m in MODES}
    core = None
    for _ in range(args.rounds):
        modes, core = run_ours(binary, args.steps, env)
        for m in MODES:
            ours[m].append(modes[m])
        for m in MODES:
            theirs[m].append(run_torch(m, args.steps, dict(env, OPENBLAS_CORETYPE=core.upper())))

    def median(rows):
        return round(statistics.median(r["median_ms"] for r in rows), 3)

    table = {}
    for m in MODES:
        row = {"ddpscope_median_ms": median(ours[m]), "ddpscope_state_bytes_per_rank": ours[m][0]["state_bytes_per_rank"]}
        refused = next((t["refused"] for t in theirs[m] if "refused" in t), None)
        if refused:
            row["pytorch_refused"] = refused
        else:
            row["pytorch_median_ms"] = median(theirs[m])
            row["pytorch_state_bytes_per_rank"] = theirs[m][0]["state_bytes_per_rank"]
            row["ours_over_pytorch"] = round(row["ddpscope_median_ms"] / row["pytorch_median_ms"], 3)
        table[m] = row
    print(json.dumps({
        "benchmark": "zero_sync_bn_mlp_8x1024_adamw_batch64_2ranks_1thread",
        "openblas_core": core,
        "pytorch_version": next(t["version"] for t in theirs["ddp"]),
        "modes": table,
        "zero_overlap_over_ddp": round(table["zero_overlap"]["ddpscope_median_ms"] / table["ddp"]["ddpscope_median_ms"], 3),
        "zero_over_ddp": round(table["zero"]["ddpscope_median_ms"] / table["ddp"]["ddpscope_median_ms"], 3),
        "sync_bn_over_batch_norm": round(table["sync_bn"]["ddpscope_median_ms"] / table["batch_norm"]["ddpscope_median_ms"], 3),
        "targets": {"zero_overlap_over_ddp": 1.05, "ours_over_pytorch": 0.5},
        "rounds": args.rounds,
    }, indent=2))


if __name__ == "__main__":
    main()
