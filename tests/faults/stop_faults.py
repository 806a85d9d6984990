"""The fault suite's stopping scenarios (issue 49): sequences of SIGINT, SIGTERM and SIGKILL
sent to the launcher (`ddpscope-cli train`, `example`, `torchrun`) or to its process group,
as a user's Ctrl-C's and `timeout` send them. Each must leave no rank, worker, collector or
mpirun behind within 10 s (ps, through the job's tag), and a sound run file; a sequence
without SIGKILL must leave it saying "stopped". The helpers are run_faults.py's."""
import os
import signal
import time

PYTHON = "/usr/bin/python3"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_SCRIPT = os.path.join(ROOT, "tests", "torch", "ddp_unchanged_script.py")


def scenarios(h):
    def job_args(kind, run):
        if kind == "train":
            return h.train_args(run, iters=100000)
        if kind == "example":
            return ["example", "seed", "--np", "2", "--repeat", "1000000", "--out", run]
        return ["torchrun", "--np", "2", "--python", PYTHON, "--progress", "lines", "--log-every", "1000", "--out", run,
                TORCH_SCRIPT, "--iters", "100000"]

    def sequence(kind, steps, label):
        def run_it(build, work):
            r = h.Result(f"{label} ({kind})",
                         "no rank, worker, collector or mpirun left within 10 s; file sound" +
                         ("" if any(s == signal.SIGKILL for _, s, _ in steps) else ", status stopped"))
            if kind == "torch" and os.system(f"{PYTHON} -c 'import torch' 2>/dev/null") != 0:
                r.observed, r.skipped = f"SKIP: {PYTHON} has no torch", True
                return r
            run = os.path.join(work, f"stop-{kind}-{len(steps)}-{steps[-1][1]}.ddprun")
            job = h.Job(build, job_args(kind, run))
            # Mid-job: its ranks running (and, for torch, training).
            worker = "python3" if kind == "torch" else "ddpscope-worker"
            h.wait_for_pid(job.tag, worker, rank=1, limit=60)
            time.sleep(8 if kind == "torch" else 2)
            t0 = time.monotonic()
            for delay, sig, target in steps:
                time.sleep(delay)
                try:
                    if target == "group":
                        os.killpg(job.proc.pid, sig)  # the launcher's own group, as timeout(1) signals it
                    else:
                        os.kill(job.proc.pid, sig)
                except OSError:
                    pass
            job.wait(30)
            left = h.leftovers(job.tag, grace=10)
            r.detection = time.monotonic() - t0
            problems = []
            if left:
                problems.append("left running: " + ", ".join(f"{c} {p}" for p, c in left))
            verdict = h.integrity(run)
            if verdict != "ok":
                problems.append(f"integrity_check: {verdict}")
            status, message = h.run_status(run)
            if not any(s == signal.SIGKILL for _, s, _ in steps) and status != "stopped":
                problems.append(f"run status {status} ({message})")
            return r.conclude(problems, f"every process gone after {r.detection:.1f} s; status {status}")
        return run_it

    INT, TERM, KILL = signal.SIGINT, signal.SIGTERM, signal.SIGKILL
    twice = [(0, INT, "cli"), (0.3, INT, "cli")]
    return {
        "stop-twice-train": sequence("train", twice, "two Ctrl-C's 0.3 s apart"),
        "stop-int-term-group-train": sequence("train", [(0, INT, "group"), (0.2, TERM, "group")],
                                              "SIGINT, then SIGTERM 0.2 s later, to the launcher's process group"),
        "stop-int-kill-train": sequence("train", [(0, INT, "cli"), (0.5, KILL, "cli")],
                                        "Ctrl-C, then SIGKILL 0.5 s later"),
        "stop-twice-example": sequence("example", twice, "two Ctrl-C's 0.3 s apart"),
        "stop-twice-torch": sequence("torch", twice, "two Ctrl-C's 0.3 s apart"),
        "stop-int-kill-torch": sequence("torch", [(0, INT, "cli"), (0.5, KILL, "cli")],
                                        "Ctrl-C, then SIGKILL 0.5 s later"),
    }
