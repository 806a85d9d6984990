"""Slow jobs made on purpose for `ddpscope-cli why` (issue 65): one rank made slow in one
phase, on our engine (`train --inject-slow`) or an unchanged PyTorch DDP script (its --slow
option, tests/torch/ddp_unchanged_script.py), and what `why --json` says about them. Shared by
tests/probes/test_why.py and tests/bench/run_why_matrix.py."""
import json
import os
import random
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(SOURCE, "tests", "torch", "ddp_unchanged_script.py")
MPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch
PHASES = ["outside_step", "forward", "backward@", "optimizer"]
# The layers a slow backward can sit in: the engine's MLP of depth 6 and the script's of depth 4.
LAYERS = {"engine": ["layers.%d" % i for i in range(0, 12, 2)], "torch": [str(i) for i in range(0, 8, 2)]}


class Case:
    """One rank slow by `ms` in `phase` ("backward@LAYER" for a layer) on `ranks` ranks."""

    def __init__(self, kind, ranks, rank, phase, ms, width=256):
        self.kind, self.ranks, self.rank, self.phase, self.ms, self.width = kind, ranks, rank, phase, ms, width

    def slow(self):
        return "%d:%s:%g" % (self.rank, self.phase, self.ms)

    def expected_phase(self):
        return self.phase.split("@")[0]

    def expected_where(self):
        """The layer as the run names DDP's parameters: module.<layer>."""
        return "module." + self.phase.split("@")[1] if "@" in self.phase else None

    def __str__(self):
        return "%s --np %d, rank %s" % (self.kind, self.ranks, self.slow())


def random_cases(seed, count, ranks=(2, 4), kinds=("engine", "torch"), ms=(5, 40)):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        kind, n = rng.choice(kinds), rng.choice(ranks)
        phase = rng.choice(PHASES)
        if phase == "backward@":
            phase += rng.choice(LAYERS[kind])
        cases.append(Case(kind, n, rng.randrange(n), phase, rng.randint(*ms)))
    return cases


def job_command(cli, out, kind, ranks, slow=None, iters=20, width=256):
    """The command of a job into `out`. Width 256: iterations of 5 to 20 ms on two cores,
    where a slowdown of 5 ms shows."""
    if kind == "engine":
        cmd = [cli, "train", "--np", str(ranks), "--iters", str(iters), "--width", str(width), "--depth", "6",
               "--batch", "64", "--bucket-cap-mb", "1", "--seed", "3", "--progress", "lines", "--out", out]
        cmd += ["--inject-slow", slow] if slow else []
    else:
        cmd = [cli, "torchrun", "--np", str(ranks), "--out", out, "--python", PYTHON, "--progress", "lines",
               SCRIPT, "--iters", str(iters), "--width", str(width)]
        cmd += ["--slow", slow] if slow else []
    return cmd


def run_job(cli, out, kind, ranks, slow=None, iters=20, width=256, one_core=False):
    """The job into `out` (job_command); raises with its output when it fails. `one_core`:
    every rank on core 0, so that whatever else runs on the machine slows them all alike
    (they take turns on it)."""
    cmd = job_command(cli, out, kind, ranks, slow, iters, width)
    if one_core:
        cmd = ["taskset", "-c", "0"] + cmd
    done = subprocess.run(cmd, env=dict(os.environ, **MPI_AS_ROOT), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), done.returncode, done.stdout[-2000:],
                                                          done.stderr[-2000:]))


def why(cli, run):
    done = subprocess.run([cli, "why", "--json", run], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError("why failed (%d): %s" % (done.returncode, done.stderr))
    return json.loads(done.stdout)


def verdict_of(cli, tmp, case, name="case", iters=20):
    out = os.path.join(tmp, name + ".ddprun")
    if os.path.exists(out):
        os.remove(out)
    run_job(cli, out, case.kind, case.ranks, case.slow(), iters=iters, width=case.width)
    return why(cli, out)


def named_right(case, verdict):
    s = verdict.get("straggler")
    return bool(s) and s["rank"] == case.rank and s["phase"] == case.expected_phase()


def blames_a_waiting_rank(case, verdict):
    """The verdict names a rank other than the slow one: every other rank of the case only
    waits for it (or for a busy machine)."""
    s = verdict.get("straggler")
    return bool(s) and s["rank"] != case.rank


def ranks_tagged(tag, count, timeout):
    """{rank: pid} of the `count` ranks whose environment carries DDPSCOPE_TEST_TAG=`tag`
    (mpirun hands its environment to the ranks it starts), once all have started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            except OSError:
                continue
            if env.get(b"DDPSCOPE_TEST_TAG") == tag.encode() and b"OMPI_COMM_WORLD_RANK" in env:
                found[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
        if len(found) == count:
            return found
        time.sleep(0.05)
    raise AssertionError("the job's %d ranks did not start within %d s" % (count, timeout))


def pin_every_thread(pid, cores):
    """Every thread of the process on `cores` (threads it starts later inherit it)."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            os.sched_setaffinity(int(tid), cores)
        except OSError:  # the thread ended
            pass
