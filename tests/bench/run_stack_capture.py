#!/usr/bin/python3
"""How long every rank's stack takes after the ask (issue 66: at most 2 s for 64 ranks): a
job of 64 idle Python ranks (tests/bench/idle_rank.py, no torch) under `ddpscope-cli torchrun
--np 64 --oversubscribe` on this machine's cores, with the stall captures off, asked by
`ddpscope-cli hang --ask` (SIGUSR2 to the launcher, the collector, each rank's watcher, the
stacks shipped and stored in the run file, then judged). The baseline, in the same job and the
same round: what a user does by hand, faulthandler's dump of every thread on SIGUSR1 sent to
each rank's pid, timed until all 64 files are written (no shipping, no run file). Rounds
alternate; prints the medians and the ratio.

    /usr/bin/python3 tests/bench/run_stack_capture.py --build build [--ranks 64] [--rounds 5]
"""
import argparse
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rank_pids(run, ranks, limit_s=120):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect("file:%s?mode=ro" % run, uri=True) as db:
                rows = db.execute("SELECT rank, pid FROM ranks").fetchall()
            if len(rows) == ranks and all(pid for _, pid in rows):
                return [pid for _, pid in sorted(rows)]
        except sqlite3.Error:
            pass
        time.sleep(0.5)
    sys.exit("the %d ranks never all reached the run file %s" % (ranks, run))


def ask(cli, run, ranks):
    """Seconds until every rank's stack is in the run file, as `hang --ask` measures them."""
    start = time.monotonic()
    done = subprocess.run([cli, "hang", "--ask", run], capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - start
    said = re.search(r"asked (\d+) ranks for their stacks: (\d+) answered in ([\d.]+) s", done.stderr)
    if done.returncode != 0 or not said or int(said.group(2)) != ranks:
        sys.exit("hang --ask: %s" % (done.stderr[-1000:] or done.stdout[-1000:]))
    return float(said.group(3)), wall


def faulthandler_dumps(folder, pids):
    """Seconds until every rank has written its faulthandler dump after SIGUSR1."""
    files = [os.path.join(folder, "rank%d.txt" % r) for r in range(len(pids))]
    sizes = [os.path.getsize(f) for f in files]
    start = time.monotonic()
    for pid in pids:
        os.kill(pid, signal.SIGUSR1)
    while any(os.path.getsize(f) <= s for f, s in zip(files, sizes)):
        if time.monotonic() - start > 60:
            sys.exit("faulthandler: not every rank dumped within 60 s")
        time.sleep(0.01)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cli = os.path.join(os.path.abspath(args.build), "bin", "ddpscope-cli")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               DDPSCOPE_STACKS_AFTER_S="0")
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "idle.ddprun")
        job = subprocess.Popen([cli, "torchrun", "--np", str(args.ranks), "--oversubscribe", "--out", run,
                                "--python", "/usr/bin/python3", os.path.join(HERE, "idle_rank.py"), tmp, "600"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            pids = rank_pids(run, args.ranks)
            time.sleep(2)  # every rank's watcher started
            ours, walls, theirs = [], [], []
            for _ in range(args.rounds):
                answered, wall = ask(cli, run, args.ranks)
                ours.append(answered)
                walls.append(wall)
                theirs.append(faulthandler_dumps(tmp, pids))
        finally:
            job.send_signal(signal.SIGINT)
            job.wait(120)
    print("%d idle Python ranks on %d cores, %d rounds" % (args.ranks, os.cpu_count(), args.rounds))
    print("hang --ask, every rank's stack in the run file: median %.2f s (max %.2f s; the whole command %.2f s)"
          % (statistics.median(ours), max(ours), statistics.median(walls)))
    print("faulthandler on SIGUSR1, every rank's dump in its file: median %.2f s (max %.2f s)"
          % (statistics.median(theirs), max(theirs)))
    print("ratio ours / faulthandler: %.1f (target: ours <= 2 s)" % (statistics.median(ours) / statistics.median(theirs)))


if __name__ == "__main__":
    main()
