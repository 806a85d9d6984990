#!/usr/bin/python3
"""What recording costs a training job: the DDP step benchmark (8 x Linear(1024) MLP,
batch 64, 2 ranks under mpirun, bucket cap 25 MiB) with probes on, shipping every event
to a collector as a launched job does, against the same benchmark built with
DDPSCOPE_PROBES=OFF (every probe compiled out). Rounds alternate between the two in the
same run; prints the ratio of median iteration times (target <= 1.03). A third variant,
the probes-on binary with nothing recording (no collector), separates the cost of
recording from the difference between the two builds. Iteration times on a shared
2-core machine vary by +-10% from run to run: use enough rounds.

The probes-off build goes to <build>-noprobes the first time (a few minutes).

    /usr/bin/python3 tests/bench/run_probe_overhead.py --build build
"""
import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile

from two_rank_bench import built

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_without_probes(build):
    out = build.rstrip("/") + "-noprobes"
    binary = os.path.join(out, "tests", "bench", "bench_ddp_step")
    if not os.path.exists(binary):
        print(f"building the probes-off benchmark in {out} (once) ...", file=sys.stderr)
        subprocess.run(["cmake", "-S", ROOT, "-B", out, "-DCMAKE_BUILD_TYPE=Release",
                        "-DDDPSCOPE_PROBES=OFF", "-DDDPSCOPE_WITH_CUDA=OFF", "-DDDPSCOPE_WITH_GUI=OFF"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", out, "-j2", "--target", "bench_ddp_step"], check=True,
                       stdout=subprocess.DEVNULL)
    return binary


def mpirun(binary, steps, env):
    cmd = ["mpirun", "-np", "2", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for var in ("DDPSCOPE_COLLECTOR", "DDPSCOPE_COLLECTOR_CLOCK", "DDPSCOPE_RUN_TOKEN"):
        if var in env:
            cmd += ["-x", var]
    out = subprocess.run(cmd + [binary, str(steps), "--ddp-only"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_with_collector(build, binary, steps, env, run_file):
    token = secrets.token_hex(16)
    cenv = dict(env, DDPSCOPE_RUN_TOKEN=token)
    collector = subprocess.Popen([os.path.join(build, "bin", "ddpscope-collector"), "--out", run_file,
                                  "--world-size", "2", "--model", "bench_mlp"],
                                 env=cenv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
    hello = json.loads(collector.stdout.readline().split(" ", 1)[1])
    result = mpirun(binary, steps, dict(cenv, DDPSCOPE_COLLECTOR=hello["batch"],
                                        DDPSCOPE_COLLECTOR_CLOCK=hello["clock"]))
    collector.communicate(json.dumps({"status": "finished"}) + "\n", timeout=60)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    probes_on = built(args.build, "bench_ddp_step")
    probes_off = build_without_probes(args.build)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    on, off, idle, shipped, dropped = [], [], [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            res = run_with_collector(args.build, probes_on, args.steps, env, os.path.join(tmp, f"r{r}.ddprun"))
            assert res["probes_compiled_in"], "the probes-on binary has no probes"
            on.append(res["modes"][0]["median_ms"])
            shipped += res["events_shipped"]
            dropped += res["events_dropped"]
            res = mpirun(probes_off, args.steps, env)
            assert not res["probes_compiled_in"], "the probes-off binary has probes"
            off.append(res["modes"][0]["median_ms"])
            idle.append(mpirun(probes_on, args.steps, env)["modes"][0]["median_ms"])
    on_ms, off_ms, idle_ms = statistics.median(on), statistics.median(off), statistics.median(idle)
    print(json.dumps({
        "benchmark": "ddp_step_probe_overhead_mlp_8x1024_batch64_2ranks",
        "probes_on_median_ms": round(on_ms, 3),
        "probes_compiled_out_median_ms": round(off_ms, 3),
        "ratio_on_over_compiled_out": round(on_ms / off_ms, 4),
        "target_ratio": 1.03,
        "probes_compiled_in_not_recording_median_ms": round(idle_ms, 3),
        "ratio_on_over_not_recording": round(on_ms / idle_ms, 4),
        "rounds_on_ms": [round(x, 3) for x in on],
        "rounds_off_ms": [round(x, 3) for x in off],
        "rounds_not_recording_ms": [round(x, 3) for x in idle],
        "rank0_events_shipped": shipped,
        "rank0_events_dropped": dropped,
    }, indent=2))


if __name__ == "__main__":
    main()
