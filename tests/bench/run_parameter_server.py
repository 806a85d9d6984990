#!/usr/bin/python3
"""Parameter-server step benchmark: `train --model transformer
--remote-embedding --np 3` (the token table on rank 0 behind RPC, the trunk under DDP on
two trainers, one DistributedOptimizer) against plain DDP on the same two trainers
(`train --np 2`), same model, batches and iterations, alternating ROUNDS times.
A step's time is the run file's iteration_ms on the first trainer, median over the
iterations after WARMUP. Prints JSON:
  ratio = parameter-server step / plain DDP step (what moving the table behind RPC costs)
Usage: run_parameter_server.py BUILD_DIR [ROUNDS] [ITERS]"""
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

WARMUP = 5
MODEL = ["--model", "transformer", "--width", "128", "--depth", "2", "--context", "32", "--batch", "32"]


def step_ms(build, ranks, extra, iters):
    cli = os.path.join(build, "bin", "ddpscope-cli")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run.ddprun")
        subprocess.run([cli, "train", "--np", str(ranks), "--iters", str(iters), "--progress", "lines",
                        "--log-every", str(iters), "--out", run] + MODEL + extra,
                       env=env, check=True, capture_output=True, text=True)
        trainer = 1 if "--remote-embedding" in extra else 0
        db = sqlite3.connect(run)
        rows = [v for (v,) in db.execute(
            "SELECT value FROM metrics WHERE name = 'iteration_ms' AND rank = ? ORDER BY iteration", (trainer,))]
        db.close()
    if len(rows) != iters:
        raise RuntimeError(f"expected {iters} iteration_ms rows, got {len(rows)}")
    return statistics.median(rows[WARMUP:])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    rows = []
    for _ in range(rounds):
        ps = step_ms(build, 3, ["--remote-embedding"], iters)
        ddp = step_ms(build, 2, [], iters)
        rows.append({"parameter_server_ms": ps, "plain_ddp_ms": ddp})
    print(json.dumps({
        "model": " ".join(MODEL),
        "rounds": rows,
        "parameter_server_median_ms": statistics.median(r["parameter_server_ms"] for r in rows),
        "plain_ddp_median_ms": statistics.median(r["plain_ddp_ms"] for r in rows),
        "ratio": statistics.median(r["parameter_server_ms"] / r["plain_ddp_ms"] for r in rows),
    }, indent=1))


if __name__ == "__main__":
    main()
