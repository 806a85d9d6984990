#!/usr/bin/python3
"""Runs the MLP training-step benchmark for ddpscope and PyTorch in the same invocation
and prints the ratio ours/PyTorch of the median step times (target <= 1.0).

Both sides use one thread. torch.set_num_threads(1) limits PyTorch's OpenMP pool but not
the OpenBLAS pthread pool its GEMMs run on, so OPENBLAS_NUM_THREADS=1 is set for both
processes as well; otherwise PyTorch would quietly use every core.
The two sides alternate for --rounds rounds so machine noise hits both alike.

    /usr/bin/python3 tests/bench/run_mlp_step.py --build build
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build", help="CMake build folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    ours_bin = os.path.join(args.build, "tests", "bench", "bench_mlp_step")
    if not os.path.exists(ours_bin):
        sys.exit(f"{ours_bin} not found: build the project first (bash packaging/build.sh)")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(run([ours_bin, "--steps", str(args.steps)], env))
        theirs.append(run(["/usr/bin/python3", os.path.join(HERE, "mlp_step_torch.py"),
                           "--steps", str(args.steps)], env))
    ours_ms = statistics.median(r["median_ms"] for r in ours)
    theirs_ms = statistics.median(r["median_ms"] for r in theirs)
    result = {
        "benchmark": "mlp_step_8x1024_batch64_sgd_1thread",
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "(auto)"),
        "ddpscope_median_ms": round(ours_ms, 3),
        "pytorch_median_ms": round(theirs_ms, 3),
        "ratio_ours_over_pytorch": round(ours_ms / theirs_ms, 3),
        "target_ratio": 1.0,
        "ddpscope_peak_rss_mb": round(max(r["peak_rss_mb"] for r in ours), 1),
        "ddpscope_peak_tensor_mb": round(max(r["peak_tensor_mb"] for r in ours), 1),
        "pytorch_peak_rss_mb": round(max(r["peak_rss_mb"] for r in theirs), 1),
        "rounds": args.rounds,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
