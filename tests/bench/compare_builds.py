#!/usr/bin/python3
"""Two builds' benchmarks in one run: each benchmark runs from build A, then from build B,
round after round, so both see the same machine (these are shared and noisy). Prints,
per benchmark, every figure both builds reported, the medians over the rounds and the
ratio B/A. For a refactor that must change nothing (a move of files into libraries, a
split of a window), ratios near 1 are the result; the rounds' spread says what "near" is.

    /usr/bin/python3 tests/bench/compare_builds.py OLD_BUILD NEW_BUILD [--rounds 3]
        [--only NAME] [--json FILE]

Each benchmark prints one JSON object last (tests/bench/*.cpp, run_*.py); its numeric
leaves are compared by their path ("sizes.2.reload_ms"). run_torch_import.py prints lines
("NAME wall S s cpu S s ... peak M MiB"): their wall, cpu and peak are compared.
"""
import argparse
import json
import re
import os
import statistics
import subprocess
import sys
import time

from two_rank_bench import built

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Two ranks on this host, as the tests run them (root needs OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment).
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2"]

# name: argv with {build} for the build folder. Sizes are those the benchmarks default to,
# or smaller where the default takes minutes a round.
BENCHMARKS = {
    "probe_cost": ["{build}/tests/bench/bench_probe_cost"],
    "collector_ingest": ["{build}/tests/bench/bench_collector_ingest", "2000000", "2"],
    "live_reload": ["{build}/tests/bench/bench_live_reload", "500000"],
    "rank_overview": ["{build}/tests/bench/bench_rank_overview", "1024", "200", "30"],
    "sequence": ["{build}/tests/bench/bench_sequence", "100000", "100"],
    "timeline": ["{build}/tests/bench/bench_timeline", "1000000", "100"],
    "torch_import": ["/usr/bin/python3", os.path.join(HERE, "run_torch_import.py"), "--build", "{build}",
                     "--ranks", "4", "--mb-per-rank", "32"],
    "flight_read": ["/usr/bin/python3", os.path.join(HERE, "run_flight_read.py"), "--build", "{build}",
                    "--entries", "100000"],
    # The engine's: one training step, a 2-rank DDP step, and allreduce against raw MPI.
    "mlp_step": ["{build}/tests/bench/bench_mlp_step"],
    "ddp_step": MPIRUN + ["{build}/tests/bench/bench_ddp_step", "20", "--ddp-only"],
    "allreduce": MPIRUN + ["{build}/tests/bench/bench_allreduce"],
    # RPC on each transport against raw TCP and shared memory (one round of its own a run).
    "rpc_floor": ["/usr/bin/python3", os.path.join(HERE, "run_rpc_floor.py"), "{build}", "1"],
}


def last_json(text):
    """The last top-level JSON object in `text` (a benchmark's report)."""
    for start in reversed([i for i, c in enumerate(text) if c == "{" and (i == 0 or text[i - 1] == "\n")]):
        try:
            return json.loads(text[start:])
        except json.JSONDecodeError:
            continue
    return None


# A report in lines ("NAME  wall 0.8 s  cpu 0.9 s ... peak 236 MiB"), as run_torch_import.py prints.
LINE = re.compile(r"^(\S.*?)\s+wall\s+([\d.]+) s\s+cpu\s+([\d.]+) s.*?peak\s+([\d.]+) MiB", re.M)


def line_figures(text):
    out = {}
    for name, wall, cpu, peak in LINE.findall(text):
        key = re.sub(r"\W+", "_", name.strip())
        out.update({f"{key}.wall_s": float(wall), f"{key}.cpu_s": float(cpu), f"{key}.peak_mib": float(peak)})
    return out


def leaves(value, path=""):
    """Numeric leaves of a JSON value by their dotted path."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, (int, float)):
        return {path: float(value)}
    out = {}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in items:
        out.update(leaves(child, f"{path}.{key}" if path else str(key)))
    return out


def run_once(argv, build):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    cmd = [a.replace("{build}", build) for a in argv]
    for a in argv:  # the benchmark programs are not in the default build
        if a.startswith("{build}/tests/bench/"):
            built(build, os.path.basename(a))
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    report = last_json(done.stdout)
    figures = leaves(report) if report is not None else line_figures(done.stdout)
    if done.returncode != 0 or not figures:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        raise BenchmarkFailed(f"{' '.join(cmd)} failed (exit {done.returncode}): {' / '.join(tail)}")
    return figures, time.monotonic() - started


class BenchmarkFailed(Exception):
    """A benchmark that exited with an error or printed no figures."""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", action="append", choices=sorted(BENCHMARKS))
    p.add_argument("--json", help="write every round's figures here")
    args = p.parse_args()
    results, failed = {}, []
    for name in args.only or BENCHMARKS:
        rounds = {"old": [], "new": []}
        try:
            for r in range(args.rounds):
                for side in ("old", "new"):
                    figures, seconds = run_once(BENCHMARKS[name], getattr(args, side))
                    rounds[side].append(figures)
                    print(f"[{name}] round {r + 1} {side}: {seconds:.1f} s", file=sys.stderr, flush=True)
        except BenchmarkFailed as e:
            # Said, and the others still run: one broken benchmark must not hide the rest.
            print(f"\n## {name}: not compared: {e}")
            failed.append(name)
            continue
        results[name] = rounds
        shared = sorted(set.intersection(*(set(f) for f in rounds["old"] + rounds["new"])))
        print(f"\n## {name} (median of {args.rounds} rounds each; B = {args.new}, A = {args.old})")
        print(f"{'figure':58} {'A':>12} {'B':>12} {'B/A':>7}")
        for key in shared:
            a = statistics.median(f[key] for f in rounds["old"])
            b = statistics.median(f[key] for f in rounds["new"])
            ratio = f"{b / a:7.3f}" if a else "      -"
            print(f"{key[:58]:58} {a:12.4g} {b:12.4g} {ratio}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if failed:
        raise SystemExit(f"compare_builds: not compared: {', '.join(failed)}")


if __name__ == "__main__":
    main()
