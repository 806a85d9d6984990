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
chose (OPENBLAS_CORETYPE), so the engines are compared on equal GEMMs (here that makes
PyTorch faster); ddp and zero also run with PyTorch as shipped, its own kernels
(ours_over_pytorch_as_shipped). PyTorch runs with its defaults otherwise.

    /usr/bin/python3 tests/bench/run_zero.py --build build
"""
import json
import statistics

from two_rank_bench import arguments, built, run_ours, run_torch, single_thread_env

MODES = ("ddp", "zero", "zero_overlap", "batch_norm", "sync_bn")
# Also run as Debian ships it, with the OpenBLAS kernels PyTorch picks itself.
SHIPPED_MODES = ("ddp", "zero")


def main():
    args = arguments(default_steps=20)
    binary = built(args.build, "bench_zero")
    env = single_thread_env()
    ours, theirs = {m: [] for m in MODES}, {m: [] for m in MODES}
    shipped = {m: [] for m in SHIPPED_MODES}  # PyTorch as installed: its own OpenBLAS kernels
    core = None
    for _ in range(args.rounds):
        result = run_ours(binary, [args.steps], env)
        core = result["openblas_core"]
        for m in result["modes"]:
            ours[m["mode"]].append(m)
        for m in MODES:
            theirs[m].append(run_torch("zero_torch.py", [m, args.steps], dict(env, OPENBLAS_CORETYPE=core.upper()),
                                       f"mode {m}", quiet=True))
        for m in SHIPPED_MODES:
            shipped[m].append(run_torch("zero_torch.py", [m, args.steps], env, f"mode {m} as shipped", quiet=True))

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
        if m in SHIPPED_MODES:
            row["pytorch_as_shipped_median_ms"] = median(shipped[m])
            row["ours_over_pytorch_as_shipped"] = round(row["ddpscope_median_ms"] / median(shipped[m]), 3)
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
