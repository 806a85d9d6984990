#!/usr/bin/python3
"""What ddpscope's instrumentation costs a PyTorch job: the DDP step benchmark's torch side
(ddp_step_torch.py: 8 x Linear(1024) MLP, batch 64, 2 ranks on gloo, bucket_cap_mb 25,
unchanged) run as its users run it (two processes with torchrun's environment and
OMP_NUM_THREADS=1, as torchrun sets) and under `ddpscope-cli torchrun --np 2` (recorded
into a run file: every gradient, bucket allreduce, barrier and phase shipped to the
collector). Rounds alternate in the same run; prints the ratio of median step times
(target <= 1.03). Steps are timed by the script itself, between its barriers, so the
launchers' start-up does not count.

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


def run_plain(steps, env):
    port = str(free_port())
    procs = []
    for rank in range(2):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([PYTHON, SCRIPT, str(steps)], env=e, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit("the plain PyTorch job failed")
    return last_json(outs[0])


def run_recorded(cli, steps, env, run_file):
    done = subprocess.run([cli, "torchrun", "--np", "2", "--python", PYTHON, "--out", run_file, "--force",
                           "--progress", "lines", SCRIPT, str(steps)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("the recorded job failed:\n" + done.stdout + done.stderr)
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


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
    plain, recorded = [], []
    with tempfile.TemporaryDirectory() as tmp:
        run_file = os.path.join(tmp, "cost.ddprun")
        for _ in range(args.rounds):
            plain.append(run_plain(args.steps, env)["median_ms"])
            recorded.append(run_recorded(cli, args.steps, env, run_file)["median_ms"])
        events = subprocess.run([os.path.join(args.build, "bin", "ddpscope-cli"), "stats", run_file, "--summary"],
                                capture_output=True, text=True, check=True).stdout
    plain_ms, recorded_ms = statistics.median(plain), statistics.median(recorded)
    print(json.dumps({
        "benchmark": "torch_ddp_step_mlp_8x1024_batch64_2ranks_gloo_instrumented",
        "plain_median_ms": round(plain_ms, 3),
        "recorded_median_ms": round(recorded_ms, 3),
        "ratio_recorded_over_plain": round(recorded_ms / plain_ms, 3),
        "target_ratio": 1.03,
        "rounds_plain_ms": [round(x, 3) for x in plain],
        "rounds_recorded_ms": [round(x, 3) for x in recorded],
        "last_run_ranks": len(json.loads(events)["ranks"]),
        "rounds": args.rounds,
        "steps": args.steps,
    }, indent=2))


if __name__ == "__main__":
    main()
