#!/usr/bin/python3
"""DDP step benchmark: ddpscope (mpirun, 2 ranks) against PyTorch 1.13 DDP on gloo
(2 processes), same model and batch, one compute thread per rank, in the same run.
Prints the ratio ours/PyTorch of median iteration times (target <= 0.6), ddpscope's
no-overlap baseline, and its bucket_cap_mb sweep with the overlap ratio (the share of
backward communication time that ran while gradients were still being computed).

Both sides get OPENBLAS_NUM_THREADS=1, and PyTorch gets the OpenBLAS kernels
ddpscope chose (OPENBLAS_CORETYPE), so the engines are compared on equal GEMMs.

    /usr/bin/python3 tests/bench/run_ddp_step.py --build build
"""
import json
import statistics

from two_rank_bench import arguments, built, run_ours, run_torch, single_thread_env


def main():
    args = arguments(default_steps=30)
    binary = built(args.build, "bench_ddp_step")
    env = single_thread_env()
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(run_ours(binary, [args.steps], env))
        core = ours[-1]["openblas_core"].upper()
        theirs.append(run_torch("ddp_step_torch.py", [args.steps], dict(env, OPENBLAS_CORETYPE=core), "DDP step"))

    def median_of(mode, cap=None):
        return statistics.median(
            m["median_ms"] for r in ours for m in r["modes"]
            if m["mode"] == mode and (cap is None or m.get("bucket_cap_mb") == cap))

    ddp_ms = median_of("ddp", 25.0)
    torch_ms = statistics.median(t["median_ms"] for t in theirs)
    print(json.dumps({
        "benchmark": "ddp_step_mlp_8x1024_batch64_2ranks_1thread",
        "openblas_core": ours[0]["openblas_core"],
        "ddpscope_ddp_median_ms": round(ddp_ms, 3),
        "pytorch_ddp_gloo_median_ms": round(torch_ms, 3),
        "ratio_ours_over_pytorch": round(ddp_ms / torch_ms, 3),
        "target_ratio": 0.6,
        "ddpscope_no_overlap_median_ms": round(median_of("no_overlap"), 3),
        # Of the 16 gradients, the Linear weights are computed straight into their bucket.
        "ddpscope_gradients_copied_into_buckets": next(
            m["gradients_copied"] for m in ours[0]["modes"] if m["mode"] == "ddp"),
        "bucket_cap_sweep": {
            str(c): {"median_ms": round(median_of("ddp", c), 3),
                     "overlap_ratio": round(statistics.mean(
                         m["overlap_ratio"] for r in ours for m in r["modes"]
                         if m["mode"] == "ddp" and m["bucket_cap_mb"] == c), 3)}
            for c in (1.0, 5.0, 25.0, 100.0)},
        "rounds": args.rounds,
    }, indent=2))


if __name__ == "__main__":
    main()
