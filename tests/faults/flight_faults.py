"""The fault suite's flight-recorder scenarios: each class of collective mismatch made by a
real 2-rank job (DDPSCOPE_FAULT on rank 1's loss allreduce of iteration 3), with the
words of every timeout message replaced (DDPSCOPE_TEST_GARBLE_TIMEOUTS=1), so the verdict
the launcher prints can only come from the flight recorder's records. Each checks the
class and that rank 1 is named first as the culprit, and that the records of both ranks
are in the run file (streamed, or merged from the dumps a timeout or a signal wrote)."""
import os
import sqlite3

GARBLE = {"DDPSCOPE_TEST_GARBLE_TIMEOUTS": "1"}

# key: (fault action, what rank 1 does, the verdict's class and first culprit sentence)
MISMATCHES = {
    "flight-skip": ("skip", "skips the loss allreduce of iteration 3",
                    r"diagnosis: Group 'world' collective #\d+: size mismatch\. Rank 1 skipped a collective: it "
                    r"never called allreduce f64\[\] in loss allreduce of iteration 3"),
    "flight-wrong-op": ("wrong_op", "broadcasts where rank 0 allreduces the loss (iteration 3)",
                        r"diagnosis: Group 'world' collective #\d+: collective type mismatch\. Rank 1 called "
                        r"broadcast f64\[\] in loss allreduce of iteration 3 where rank 0 called allreduce f64\[\]"),
    "flight-wrong-size": ("wrong_size", "allreduces 2 elements where rank 0 allreduces 1 (the loss, iteration 3)",
                          r"diagnosis: Group 'world' collective #\d+: size mismatch\. Rank 1 called allreduce "
                          r"f64\[2\] in loss allreduce of iteration 3 where rank 0 called allreduce f64\[\]"),
    "flight-wrong-dtype": ("wrong_dtype", "allreduces f32 where rank 0 allreduces f64 (the loss, iteration 3)",
                           r"diagnosis: Group 'world' collective #\d+: dtype mismatch\. Rank 1 called allreduce "
                           r"f32\[\] in loss allreduce of iteration 3 where rank 0 called allreduce f64\[\]"),
}


def records_of(run):
    """Each rank's highest collective number in the run file's records."""
    try:
        db = sqlite3.connect(f"file:{run}?mode=ro", uri=True)
        return dict(db.execute("SELECT rank, MAX(collective_seq) FROM collectives GROUP BY rank").fetchall())
    except sqlite3.Error:
        return {}


def scenarios(h):
    """The scenarios by key; `h` is run_faults (Job, Result, check_common, ...)."""

    def mismatch(build, work, key):
        action, what, verdict = MISMATCHES[key]
        r = h.Result(f"rank 1 {what} ({action}; timeout messages garbled)",
                     "the verdict, from records alone, names the class and rank 1 first; job fails; file sound")
        run = os.path.join(work, f"{key}.ddprun")
        job = h.Job(build, h.train_args(run, iters=10),
                    {**GARBLE, "DDPSCOPE_FAULT": f"rank=1,iter=3,phase=allreduce,{action}"})
        code = job.wait(60)
        r.detection = job.lines[-1][0] if job.lines else None
        problems = h.check_common(r, job, code, run, 60, names=(verdict,))
        seen = records_of(run)
        if sorted(seen) != [0, 1]:
            problems.append(f"records of ranks {sorted(seen)} in the run file")
        return r.conclude(problems, f"exit {code}: {h.diagnosis_line(job)[:330]}")

    def stopped(build, work):
        r = h.Result("rank 1 stopped (SIGSTOP) inside training past the timeout (4 s; timeout messages garbled)",
                     "rank 0 times out; the verdict, from records alone, names rank 1 the likely culprit")
        run = os.path.join(work, "flight-stopped.ddprun")
        job = h.Job(build, h.train_args(run, iters=100000), GARBLE)
        pid = h.wait_for_pid(job.tag, "ddpscope-worker", rank=1)
        h.wait_training(job)
        if pid:
            os.kill(pid, h.signal.SIGSTOP)
        code = job.wait(60)
        if pid:
            try:
                os.kill(pid, h.signal.SIGCONT)
            except OSError:
                pass
        problems = h.check_common(r, job, code, run, 60, names=(
            # Stopped between issuing a collective and starting it, rank 1 leaves it scheduled.
            r"diagnosis: Group 'world' collective #\d+: (missing ranks\. Rank 1 never called|state mismatch\. "
            r"Rank 1 (never )?(completed|started)|fully matched\. .*Rank 1 (did not run for|never timed out))",))
        if problems:
            problems.append(h.diagnosis_line(job)[:400])
        return r.conclude(problems, f"exit {code}: {h.diagnosis_line(job)[:330]}")

    def killed(build, work):
        r = h.Result("rank 1 SIGKILLed in backward while rank 0 waits (records)",
                     "rank 1's last records are in the run file; the verdict names rank 1 missing from the "
                     "collective rank 0 waits in, with its signal")
        run = os.path.join(work, "flight-killed.ddprun")
        job = h.Job(build, h.train_args(run), {"DDPSCOPE_FAULT": "rank=1,iter=5,phase=backward,kill"})
        code = job.wait(60)
        problems = h.check_common(r, job, code, run, 60, names=(
            r"diagnosis: Group 'world' collective #\d+: missing ranks\. Rank 1 died by signal 9 \(Killed\) after #\d+ "
            r"allreduce f64\[\] in loss allreduce of iteration 4 \(completed\) \(the likely culprit\)\. Rank 1 never "
            r"called allreduce f32\[\d+\] #\d+, which rank 0 called in backward of iteration 5 \(started\)",))
        seen = records_of(run)
        if seen.get(1) is None or seen.get(0) is None or seen[1] != seen[0] - 1:
            problems.append(f"highest collective per rank in the run file: {seen} (want rank 1 one behind rank 0)")
        return r.conclude(problems, f"exit {code}: {h.diagnosis_line(job)[:330]}")

    out = {key: (lambda b, w, key=key: mismatch(b, w, key)) for key in MISMATCHES}
    out["flight-stopped"] = stopped
    out["flight-killed"] = killed
    return out
