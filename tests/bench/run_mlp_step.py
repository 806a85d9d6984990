#!/usr/bin/python3
"""Runs the MLP training-step benchmark for ddpscope and PyTorch in the same invocation
and prints the ratio ours/PyTorch of the median step times (target <= 1.0).

Both sides use one thread. torch.set_num_threads(1) limits PyTorch's OpenMP pool but not
the OpenBLAS pthread pool its GEMMs run on, so OPENBLAS_NUM_THREADS=1 is set for both
processes as well; otherwise PyTorch would quietly use every core.
The two sides alternate for --rounds rounds so machine noise hits both alike.

OpenBLAS kernels: ddpscope replaces OpenBLAS's kernel choice when it is known to be slow
on this CPU (see engine/tensor/blas_kernels.h); PyTorch keeps OpenBLAS's own choice.
Two ratios are printed: "as_shipped" (each with its own kernel choice, what a user
gets) and "same_kernels" (PyTorch given the same OPENBLAS_CORETYPE as ours: the
engines compared on equal GEMMs). The target applies to both.

    /usr/bin/python3 tests/bench/run_mlp_step.py --build build
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from two_rank_bench import built

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

    ours_bin = built(args.build, "bench_mlp_step")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    torch_script = os.path.join(HERE, "mlp_step_torch.py")
    steps = ["--steps", str(args.steps)]
    ours, theirs, theirs_same = [], [], []
    for _ in range(args.rounds):
        ours.append(run([ours_bin] + steps, env))
        theirs.append(run(["/usr/bin/python3", torch_script] + steps, env))
        same_env = dict(env, OPENBLAS_CORETYPE=ours[-1]["openblas_core"].upper())
        theirs_same.append(run(["/usr/bin/python3", torch_script] + steps, same_env))
    ours_ms = statistics.median(r["median_ms"] for r in ours)
    theirs_ms = statistics.median(r["median_ms"] for r in theirs)
    theirs_same_ms = statistics.median(r["median_ms"] for r in theirs_same)
    result = {
        "benchmark": "mlp_step_8x1024_batch64_sgd_1thread",
        "ddpscope_openblas_core": ours[0]["openblas_core"],
        "ddpscope_median_ms": round(ours_ms, 3),
        "pytorch_median_ms": round(theirs_ms, 3),
        "pytorch_same_kernels_median_ms": round(theirs_same_ms, 3),
        "ratio_as_shipped": round(ours_ms / theirs_ms, 3),
        "ratio_same_kernels": round(ours_ms / theirs_same_ms, 3),
        "target_ratio": 1.0,
        "ddpscope_peak_rss_mb": round(max(r["peak_rss_mb"] for r in ours), 1),
        "ddpscope_peak_tensor_mb": round(max(r["peak_tensor_mb"] for r in ours), 1),
        "pytorch_peak_rss_mb": round(max(r["peak_rss_mb"] for r in theirs), 1),
        "rounds": args.rounds,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
