#!/usr/bin/python3
"""What ddpscope's instrumentation costs a PyTorch job: the DDP step benchmark's torch side
(ddp_step_torch.py: 8 x Linear(1024) MLP, batch 64, 2 ranks on gloo, bucket_cap_mb 25,
unchanged) run as its users run it (two processes with torchrun's environment and
OMP_NUM_THREADS=1, as torchrun sets) and under `ddpscope-cli torchrun --np 2` (recorded
into a run file: every gradient, bucket allreduce, barrier and phase shipped to the
collector). Rounds alternate in the same run; prints the ratio of median step times
(target <= 1.03). Steps are timed by the script itself, between its barriers, so the
launchers' start-up does not count.

Two ranks on this 2-core machine share the cores with gloo's threads: a round's median
moves by +-25% with where the scheduler puts them, for either side. So each round also
runs the job on one rank (DDP's reducer and hooks all run; the allreduce has no peer),
where the instrumentation's own cost is not lost in that noise, and the ratios of the
per-round minimums are printed beside the medians'.

    /usr/bin/python3 tests/bench/run_torchrun_cost.py --build build
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "ddp_step_torch.py")
PYTHON = "/usr/bin/python3"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def run_plain(steps, env, world):
    port = str(free_port())
    procs = []
    for rank in range(world):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([PYTHON, SCRIPT, str(steps)], env=e, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit("the plain PyTorch job failed")
    return last_json(outs[0])


def run_recorded(cli, steps, env, world, run_file):
    done = subprocess.run([cli, "torchrun", "--np", str(world), "--python", PYTHON, "--out", run_file, "--force",
                           "--progress", "lines", SCRIPT, str(steps)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("the recorded job failed:\n" + done.stdout + done.stderr)
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def summary(plain, recorded):
    """Median over rounds of each round's median and minimum step time, and their ratios."""
    def of(results, key):
        return statistics.median(r[key] for r in results)
    return {
        "plain_median_ms": round(of(plain, "median_ms"), 3),
        "recorded_median_ms": round(of(recorded, "median_ms"), 3),
        "ratio_of_medians": round(of(recorded, "median_ms") / of(plain, "median_ms"), 3),
        "plain_min_ms": round(of(plain, "min_ms"), 3),
        "recorded_min_ms": round(of(recorded, "min_ms"), 3),
        "ratio_of_minimums": round(of(recorded, "min_ms") / of(plain, "min_ms"), 3),
        "rounds_plain_median_ms": [round(r["median_ms"], 1) for r in plain],
        "rounds_recorded_median_ms": [round(r["median_ms"], 1) for r in recorded],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=5)  # this shared machine is noisy
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    cli = os.path.join(args.build, "bin", "ddpscope-cli")
    if not os.path.exists(cli):
        sys.exit(f"{cli} not found: build the project first (bash packaging/build.sh)")
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    results = {2: ([], []), 1: ([], [])}  # world size -> plain rounds, recorded rounds
    with tempfile.TemporaryDirectory() as tmp:
        run_file = os.path.join(tmp, "cost.ddprun")
        for _ in range(args.rounds):
            for world, (plain, recorded) in results.items():
                plain.append(run_plain(args.steps, env, world))
                recorded.append(run_recorded(cli, args.steps, env, world, run_file))
    print(json.dumps({
        "benchmark": "torch_ddp_step_mlp_8x1024_batch64_gloo_instrumented",
        "two_ranks": summary(*results[2]),
        "one_rank": summary(*results[1]),
        "target_ratio": 1.03,
        "rounds": args.rounds,
        "steps": args.steps,
    }, indent=2))


if __name__ == "__main__":
    main()
