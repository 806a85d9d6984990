"""The fault suite's PyTorch scenarios: an unchanged torch DDP script (2 ranks, gloo) run by
`ddpscope-cli torchrun`, one fault each: a rank killed, a rank stopped past the group's
collective timeout, a script that raises, a script that never makes a process group, a
worker that fails once under --max-restarts. The helpers (Job, Result, the common checks)
are run_faults.py's, passed in, so this file holds only the scenarios."""
import os
import signal
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "torch", "ddp_unchanged_script.py")
PYTHON = "/usr/bin/python3"


def torchrun_args(run, *script_args, launcher=()):
    return (["torchrun", "--np", "2", "--python", PYTHON, "--progress", "lines", "--log-every", "1000", "--out", run]
            + list(launcher) + [SCRIPT] + list(script_args))


def scenarios(h):
    """The scenarios by key; `h` is run_faults (Job, Result, check_common, ...)."""

    def no_torch(r):
        if os.system(f"{PYTHON} -c 'import torch' 2>/dev/null") != 0:
            r.observed, r.skipped = f"SKIP: {PYTHON} has no torch", True
            return True
        return False

    def training(job, limit=60):
        end = time.monotonic() + limit
        while job.first_time(r"^training ") is None and time.monotonic() < end and job.proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.5)

    def run_job(build, r, run, args, limit, names, want_failure=True):
        """A job that runs to its end by itself: its exit code and the common checks' problems."""
        job = h.Job(build, args)
        code = job.wait(limit)
        return job, code, h.check_common(r, job, code, run, limit, want_failure=want_failure, names=names)

    def diagnosis(job):
        return next((l for _, l in job.lines if l.startswith("diagnosis:")), "no diagnosis")

    def signalled(build, work, sig):
        killed = sig == signal.SIGKILL
        r = h.Result(f"torch: rank 1 {'SIGKILL' if killed else 'stopped (SIGSTOP) past the group timeout (4 s)'}",
                     "job fails; the message names rank 1 (killed: signal 9; stopped: rank 0's gloo timeout) and "
                     "the diagnosis names rank 1 and the collective; file sound, status failed; no process left" +
                     ("; rank 0's failure typed: its allreduce, not timed out" if killed else
                      "; rank 0's stack is in the script, where it waits; the finished run says "
                      "rank 1 did not answer, stopped by a signal"))
        if no_torch(r):
            return r
        run = os.path.join(work, f"torch-{sig}.ddprun")
        job = h.Job(build, torchrun_args(run, "--iters", "100000", "--timeout", "4"))
        pid = h.wait_for_pid(job.tag, "python3", rank=1)
        training(job)
        t0 = time.monotonic()
        if pid:
            os.kill(pid, sig)
        code = job.wait(60)
        if code is not None:
            r.detection = time.monotonic() - t0
        if pid and not killed:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        names = ((r"rank 1", r"signal 9", r"diagnosis: Rank 1 died") if killed else
                 # gloo says either "Timed out waiting 4000ms for recv ..." or "Application
                 # timeout caused pair closure", depending on where in the transfer rank 1 stopped.
                 (r"rank 0: RuntimeError: .*(Timed out|timeout)",
                  r"diagnosis: (Rank 1 never entered|Every rank entered .* Rank 1 never timed out)"))
        problems = h.check_common(r, job, code, run, 60, names=names)
        status, _ = h.run_status(run)
        if status != "failed":
            problems.append(f"run status {status}")
        if not killed:  # rank 0 took its Python stack while it waited (3 s without progress, or at the timeout)
            problems += h.stack_problems(build, run, {0: "ddp_unchanged_script.py"})
            # The launcher saw rank 1 stopped as it ended the job: the run still says so.
            problems += h.unanswering_problems(build, run, {1: "was stopped by a signal"})
            # Rank 0's probe typed its failure: the allreduce it waited in, out of time.
            problems += h.typed_failure_problems(run, 0, "allreduce", build=build)
        if killed:  # rank 0's probe typed its failure: the allreduce its peer's death ended, not a timeout
            problems += h.typed_failure_problems(run, 0, "allreduce", timed_out=False, build=build)
        if pid is None:
            problems.append("rank 1's interpreter was never found")
        # On a failure the table shows what the diagnosis said too: the wording is the question.
        return r.conclude(problems + ([f"said: {diagnosis(job)[:300]}"] if problems else []),
                          f"exit {code}: {diagnosis(job)[:300]}")

    def raises(build, work):
        r = h.Result("torch: the script raises on rank 1 (ValueError at iteration 3)",
                     "job fails at once; the message names rank 1 and the script's error; Python's traceback "
                     "shown; the run's message is the error; no process left")
        if no_torch(r):
            return r
        run = os.path.join(work, "torch-raises.ddprun")
        job, code, problems = run_job(build, r, run, torchrun_args(run, "--raise-at", "3"), 60, names=(
            r"error: the job failed: rank 1: ValueError: bad batch at iteration 3", r"Traceback"))
        status, message = h.run_status(run)
        # The error first; what mpirun noticed after it may follow in parentheses (rank 0's gloo
        # aborts on signal 6 when rank 1's end of the pair closes: a race, seen once in CI).
        if status != "failed" or not (message or "").startswith("ValueError: bad batch at iteration 3"):
            problems.append(f"run status {status}: {message}")
        raised = job.first_time(r"^Traceback")
        if raised is not None and code is not None:
            r.detection = job.lines[-1][0] - raised
        return r.conclude(problems, f"exit {code}: {h.last_error_line(job)}")

    def no_group(build, work):
        r = h.Result("torch: a script that never makes a process group",
                     "runs as it would under torchrun (exit 0, its output shown); a note says the run has no "
                     "iterations; file sound, status finished")
        if no_torch(r):
            return r
        script = os.path.join(work, "no_group.py")
        with open(script, "w") as f:
            # One write per line: two ranks share the terminal, and print's pieces interleaved
            # ("rankrank 0 without ...").
            f.write("import os, sys\nimport torch\n"
                    "sys.stdout.write('rank ' + os.environ['RANK'] + ' without a process group\\n')\n"
                    "sys.stdout.flush()\n")
        run = os.path.join(work, "torch-no-group.ddprun")
        job, code, problems = run_job(
            build, r, run, ["torchrun", "--np", "2", "--python", PYTHON, "--out", run, script], 60, want_failure=False,
            names=(r"rank 1 without a process group", r"note: the script ran no DistributedDataParallel forward"))
        status, _ = h.run_status(run)
        if status != "finished":
            problems.append(f"run status {status}")
        return r.conclude(problems, f"exit {code}; status {status}; the note shown")

    def restarted(build, work):
        r = h.Result("torch: a worker fails once, --max-restarts 1",
                     "the failure named (rank 1), the job restarted as torchrun does (every rank, "
                     "TORCHELASTIC_RESTART_COUNT 1) and finishes; each attempt has its run file")
        if no_torch(r):
            return r
        run = os.path.join(work, "torch-restart.ddprun")
        args = torchrun_args(run, "--fail-first-attempt-at", "3", launcher=("--max-restarts", "1"))
        job, code, problems = run_job(build, r, run, args, 120, want_failure=False, names=(
            r"rank 1: RuntimeError: worker lost at iteration 3", r"restarting the job \(restart 1 of 1",
            r"done: 8 iterations"))
        first, _ = h.run_status(run)
        second, _ = h.run_status(os.path.join(work, "torch-restart.restart1.ddprun"))
        if (first, second) != ("failed", "finished"):
            problems.append(f"run files: {first}, then {second}")
        failed_at, restarted_at = job.first_time(r"error: the job failed"), job.first_time(r"^restarting the job")
        if failed_at is not None and restarted_at is not None:
            r.detection = restarted_at - failed_at
        return r.conclude(problems, f"exit {code}; run files: {first}, then {second}")

    return {
        "torch-rank-killed": lambda b, w: signalled(b, w, signal.SIGKILL),
        "torch-rank-stopped": lambda b, w: signalled(b, w, signal.SIGSTOP),
        "torch-script-raises": raises,
        "torch-no-process-group": no_group,
        "torch-restart": restarted,
    }
