#!/usr/bin/python3
"""The fault suite: real jobs, faults injected on purpose, outcomes measured.

Each scenario runs `ddpscope-cli train` (2 ranks under mpirun, probes on), or an unchanged
PyTorch script under `ddpscope-cli torchrun` (torch_faults.py), and injects one
fault: a rank killed by SIGKILL or SIGSEGV in a given phase (DDPSCOPE_FAULT), a rank
stopped past the collective timeout, the collector killed or stopped, the launcher
killed or stopped, a host cut off, a disk that fills, bad runs of the CLI. Each checks:
  - the job ends within its time limit, with the exit status it must have;
  - its message names the rank (and the op or phase where one applies);
  - the run file passes PRAGMA integrity_check;
  - no process of the job is left behind (found by a tag in their environment).
It writes a table, scenario | expected | observed | time to detection, to
tests/FAULTS.md (--out), and exits 1 when a scenario that must hold failed. Scenarios
still open (known gaps) are listed as such and do not fail the suite. --readme also writes
the table's short form between the FAULTS markers of docs/faults.md (or of the page named).
The harness every scenario shares (the tagged job, its processes, the checks) is
fault_harness.py, beside this file; this file holds the scenarios and the table.

    /usr/bin/python3 tests/faults/run_faults.py build [--out tests/FAULTS.md] [--only NAME] [--readme [PAGE]]

CTest runs it in parts (--part K/N, the host cut alone: it needs the simulated cluster's
bridge), side by side with other tests; each part writes its rows to the build folder.
"""
import argparse
import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probes", "python"))
from ddpscope import open_run  # noqa: E402  (spans are queried through the SQLite extension)

from fault_harness import (  # the jobs, their processes and the shared checks, beside this file
    Job, Result, check_common, diagnosis_line, integrity, last_error_line, leftovers, listening_loopback_ports,
    remote_args, run_status, stack_problems, train_args, typed_failure_problems, unanswering_problems, wait_for_pid,
    wait_for_line, wait_training)
import cluster_faults  # a host cut off from a simulated cluster, beside this file
import flight_faults  # the flight recorder's mismatch scenarios, beside this file
import stop_faults  # stopping the launcher by any sequence of signals, beside this file
import torch_faults  # the PyTorch scenarios (ddpscope-cli torchrun), beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def scenario_rank_signal(build, work, phase, sig):
    name = f"rank 1 {sig} in {phase}"
    r = Result(name, f"job fails; message names rank 1 and signal {9 if sig == 'SIGKILL' else 11}; file sound, "
                     "status failed; no process left")
    run = os.path.join(work, f"{phase}-{sig}.ddprun")
    action = "kill" if sig == "SIGKILL" else "segv"
    job = Job(build, train_args(run), {"DDPSCOPE_FAULT": f"rank=1,iter=5,phase={phase},{action}"})
    code = job.wait(60)
    signo = "9" if sig == "SIGKILL" else "11"
    problems = check_common(r, job, code, run, 60, names=(r"rank 1", rf"signal {signo}|{sig}"))
    status, message = run_status(run)
    if status != "failed":
        problems.append(f"run status {status}")
    raised = job.first_time(r"raised SIG")
    if raised is not None and code is not None:
        r.detection = job.lines[-1][0] - raised
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def stopped_until_the_end(r, job, pid, limit):
    """Stops `pid` (SIGSTOP), waits at most `limit` s for the job to end, counts the time to
    detection into `r`, then continues the process (mpirun may have left it stopped)."""
    t0 = time.monotonic()
    if pid:
        os.kill(pid, signal.SIGSTOP)
    code = job.wait(limit)
    if code is not None:
        r.detection = time.monotonic() - t0
    if pid:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    return code


def scenario_rank_stopped(build, work):
    r = Result("rank 1 stopped (SIGSTOP) past the collective timeout (4 s)",
               "rank 0 times out within ~4 s naming the op and the group; the diagnosis names rank 1 as the "
               "culprit and says it did not answer, stopped by a signal; job fails; file sound")
    run = os.path.join(work, "stopped.ddprun")
    job = Job(build, train_args(run, iters=100000))
    pid = wait_for_pid(job.tag, "ddpscope-worker", rank=1)
    # Training, not still starting (a rank stopped in MPI's start-up is the next scenario).
    wait_training(job)
    code = stopped_until_the_end(r, job, pid, 60)
    # The timeout is reported by rank 0; the diagnosis names the culprit, rank 1.
    problems = check_common(r, job, code, run, 60, names=(
        r"timeout|timed out", r"diagnosis: Group 'world' collective #\d+: (missing ranks\. Rank 1 never called|state "
                              r"mismatch\. Rank 1 (never )?(completed|started)|fully matched\. .*Rank 1 (did not run for|never timed out))"))
    # The launcher noted rank 1 stopped as the job was ended: the finished run still says so.
    problems += unanswering_problems(build, run, {1: "was stopped by a signal"})
    # Rank 0 typed its failure (the collective it waited in, out of time): the verdict reads that.
    problems += typed_failure_problems(run, 0, "", build=build)
    r.ok = pid is not None and not problems
    diagnosis = next((l for _, l in job.lines if l.startswith("diagnosis:")), "no diagnosis")
    r.observed = "; ".join(problems + [diagnosis[:200]]) if problems else f"exit {code}: {diagnosis[:300]}"
    return r


def scenario_rank_stopped_starting(build, work):
    r = Result("rank 1 stopped (SIGSTOP) as it starts, before training (MPI initialisation has no timeout)",
               "the launcher ends the job at its start timeout (5 s here), saying no training started and which "
               "ranks never reached the collector; file sound; no process left")
    run = os.path.join(work, "stopped-starting.ddprun")
    job = Job(build, train_args(run, iters=100), {"DDPSCOPE_START_TIMEOUT_MS": "5000"})
    pid = wait_for_pid(job.tag, "ddpscope-worker", rank=1)
    t0 = time.monotonic()
    if pid:
        os.kill(pid, signal.SIGSTOP)
    code = job.wait(60)
    if code is not None:
        r.detection = time.monotonic() - t0
    # Stopped before its process group was up, rank 1 (and rank 0, waiting for it in MPI's
    # start-up) never reached the collector; stopped just after, the hang analysis names it.
    problems = check_common(r, job, code, run, 60, names=(
        r"had not started training 5 s after launch",
        r"never reached the run's collector: .*1|every rank reached the run's collector\. Rank 1 never entered"))
    if pid is None:
        problems.append("rank 1 never appeared")
    status, _ = run_status(run)
    if status != "failed":
        problems.append(f"run status {status}")
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def scenario_rank_stopped_ending(build, work):
    r = Result("rank 1 stopped (SIGSTOP) after training, before MPI_Finalize (which has no timeout)",
               "the launcher ends the job at its end timeout (3 s here), naming rank 1 as the rank that never "
               "reported its end; every event of training kept; file sound; no process left")
    run = os.path.join(work, "stopped-ending.ddprun")
    job = Job(build, train_args(run, iters=20), {"DDPSCOPE_END_TIMEOUT_MS": "3000",
                                                 "DDPSCOPE_FAULT": "rank=1,iter=20,phase=end,stop"})
    code = job.wait(60)
    stopped = job.first_time(r"rank 1 raises SIGSTOP after training")
    if code is not None and stopped is not None:
        r.detection = job.lines[-1][0] - stopped
    problems = check_common(r, job, code, run, 60, names=(
        r"training finished, but the job had not exited 3 s after the first rank ended",
        r"rank 1 never reported its end"))
    status, _ = run_status(run)
    if status != "failed":
        problems.append(f"run status {status}")
    try:
        db = open_run(run)
        iterations = db.execute("SELECT rank, COUNT(*) FROM spans WHERE kind = "
                                "(SELECT kind FROM kinds WHERE name = 'iteration') GROUP BY rank").fetchall()
    except sqlite3.Error as e:
        iterations = [("error", str(e))]
    if sorted(iterations) != [(0, 20), (1, 20)]:
        problems.append(f"iterations per rank in the file: {iterations}")
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def scenario_collector(build, work, how):
    if how == "kill":
        r = Result("the collector killed (SIGKILL) mid-run",
                   "training is not held up; the job reports the collector's loss; file sound; no process left")
    else:
        r = Result("the collector stopped (SIGSTOP) for 3 s, longer than the shipping interval",
                   "training goes on; every event the collector acknowledged is stored, and what the ranks' "
                   "full buffers could not ship is counted; job finishes; file sound")
    run = os.path.join(work, f"collector-{how}.ddprun")
    job = Job(build, train_args(run, iters=3000 if how == "kill" else 6000))
    pid = wait_for_pid(job.tag, "ddpscope-collec")
    time.sleep(1.5)
    t0 = time.monotonic()
    if pid:
        os.kill(pid, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        if how == "stop":
            time.sleep(3)
            os.kill(pid, signal.SIGCONT)
    code = job.wait(120)
    problems = check_common(r, job, code, run, 120, want_failure=False)
    if code is not None:
        r.detection = time.monotonic() - t0
    if how == "stop" and not problems:
        db = open_run(run)
        got = db.execute("SELECT SUM(events_received), SUM(events_dropped) FROM ranks").fetchone()
        spans = db.execute("SELECT COUNT(*) FROM spans").fetchone()[0]
        if got[0] != spans:
            problems.append(f"{got[0]} events received, {spans} stored")
        r.observed = f"finished; {spans} spans stored, {got[1] or 0} dropped"
    if how == "kill" and not problems:
        status, message = run_status(run)
        r.observed = f"exit {code}; run status {status}: {(message or '')[:120]}"
        if not re.search(r"collector", job.text()):
            problems.append("the job did not say the collector was lost")
        if status == "running":
            problems.append("the run file still says running")
        if os.path.exists(run + "-reserve"):
            problems.append("the collector's reserve file (room for the end record) was left beside the run")
    r.ok = pid is not None and not problems
    if problems:
        r.observed = "; ".join(problems)
    return r


def scenario_launcher(build, work, how):
    if how == "kill":
        r = Result("the launcher killed (SIGKILL)", "mpirun and the ranks end (no orphans) within 10 s; file sound")
    else:
        r = Result("the launcher stopped (SIGSTOP) for 8 s", "detected within ~2 s and reported on the job's "
                                                             "terminal and in the run's message, not a silent stall")
    run = os.path.join(work, f"launcher-{how}.ddprun")
    job = Job(build, train_args(run, iters=100000))
    wait_for_pid(job.tag, "ddpscope-worker", rank=1)
    time.sleep(1.5)
    t0 = time.monotonic()
    if how == "kill":
        os.kill(job.proc.pid, signal.SIGKILL)
        job.wait(10)
        left = leftovers(job.tag, grace=10)
        r.detection = time.monotonic() - t0
        verdict = integrity(run)
        problems = []
        if left:
            problems.append("left running: " + ", ".join(f"{c} {p}" for p, c in left))
        if verdict != "ok":
            problems.append(f"integrity_check: {verdict}")
        return r.conclude(problems, f"every process gone after {r.detection:.1f} s")
    os.kill(job.proc.pid, signal.SIGSTOP)
    time.sleep(8)
    seen = job.first_time(r"the launcher \(pid \d+\) is stopped")
    os.kill(job.proc.pid, signal.SIGCONT)
    if seen is not None:
        r.detection = seen - (t0 - job.start)
    os.killpg(job.proc.pid, signal.SIGTERM)
    job.wait(30)
    left = leftovers(job.tag)
    problems = []
    if seen is None:
        problems.append("not detected")
    if left:
        problems.append("left behind: " + ", ".join(f"{c} {p}" for p, c in left))
    if integrity(run) != "ok":
        problems.append("integrity_check failed")
    r.ok = not problems
    r.observed = "; ".join(problems) if problems else "the collector said so on the job's terminal: " + \
        next(l for _, l in job.lines if "is stopped" in l).strip()[:160]
    return r


def scenario_same_out(build, work):
    r = Result("two jobs given the same --out at once", "the second is refused at start, naming the first; "
                                                        "the first finishes")
    run = os.path.join(work, "shared.ddprun")
    first = Job(build, train_args(run, iters=300))
    wait_for_pid(first.tag, "ddpscope-worker", rank=1)
    t0 = time.monotonic()
    second = Job(build, train_args(run, iters=10))
    code2 = second.wait(30)
    r.detection = time.monotonic() - t0
    code1 = first.wait(120)
    problems = []
    if code2 in (None, 0):
        problems.append(f"second job exit {code2}")
    if not re.search(r"being written by another job \(pid \d+", second.text()):
        problems.append("the refusal does not name the holder")
    if code1 != 0:
        problems.append(f"first job exit {code1}")
    if integrity(run) != "ok":
        problems.append("integrity_check failed")
    problems += [f"left: {l}" for l in leftovers(first.tag) + leftovers(second.tag)]
    return r.conclude(problems, f"second refused: {last_error_line(second)}")


def scenario_existing(build, work):
    r = Result("a new run given an existing run's file", "refused without --force (the old run kept); "
                                                         "replaced with --force")
    run = os.path.join(work, "existing.ddprun")
    Job(build, train_args(run, iters=20)).wait(60)
    before = open_run(run).execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    t0 = time.monotonic()
    refused = Job(build, train_args(run, iters=5))
    code = refused.wait(30)
    r.detection = time.monotonic() - t0
    after = open_run(run).execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    forced = Job(build, train_args(run, iters=5, extra=["--force"]))
    code_forced = forced.wait(60)
    its = open_run(run).execute(
        "SELECT COUNT(*) FROM spans WHERE kind = 0 AND rank = 0").fetchone()[0]
    problems = []
    if code in (None, 0):
        problems.append(f"exit {code} without --force")
    if after != before:
        problems.append("the old run changed")
    if code_forced != 0 or its != 5:
        problems.append(f"--force: exit {code_forced}, {its} iterations")
    return r.conclude(problems, f"refused: {last_error_line(refused)}")


def scenario_nonfinite(build, work):
    r = Result("the loss becomes NaN/infinite (--lr inf)", "kept in the run file; the first non-finite iteration "
                                                           "flagged in stats and the progress line",
               )
    run = os.path.join(work, "nan.ddprun")
    job = Job(build, train_args(run, iters=10, extra=["--lr", "inf"]))
    code = job.wait(60)
    problems = check_common(r, job, code, run, 60, want_failure=False, names=(r"not finite|non-finite|nan",))
    stats = subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "stats", "--summary", run],
                           capture_output=True, text=True)
    if "nonfinite" not in stats.stdout and "non-finite" not in stats.stdout:
        problems.append("stats does not flag it")
    return r.conclude(problems, "flagged in the progress line and stats")


def scenario_unused(build, work):
    r = Result("a parameter unused without --find-unused-parameters",
               "fails naming the rank and the parameter, suggesting --find-unused-parameters")
    run = os.path.join(work, "unused.ddprun")
    job = Job(build, train_args(run, iters=10, extra=["--inject-unused", "1"]))
    code = job.wait(60)
    problems = check_common(r, job, code, run, 60, names=(r"rank 1", r"find-unused-parameters", r"layers\."))
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def scenario_model_mismatch(build, work):
    r = Result("models that differ across ranks (--inject-model-mismatch 1)",
               "DDP refuses at construction, naming the parameter and both ranks' shapes; job fails at once")
    run = os.path.join(work, "mismatch-model.ddprun")
    t0 = time.monotonic()
    job = Job(build, train_args(run, iters=10, extra=["--inject-model-mismatch", "1"]))
    code = job.wait(60)
    r.detection = time.monotonic() - t0
    problems = check_common(r, job, code, run, 60, names=(r"parameter module\.layers\.0\.weight is f32\[25[67], 32\] on rank [01] "
                                                          r"but f32\[25[67], 32\] on rank [01]", r"same model"))
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def scenario_mismatched_collectives(build, work):
    r = Result("mismatched collectives under DDPSCOPE_DEBUG=detail (rank 1 skips the loss allreduce of iteration 3)",
               "every rank fails at the mismatch, naming both sides' op, number and shape; without detail (MPI's "
               "truncation error, or a timeout) the message or the diagnosis points to DDPSCOPE_DEBUG=detail")
    run = os.path.join(work, "mismatch-coll.ddprun")
    fault = {"DDPSCOPE_FAULT": "rank=1,iter=3,phase=allreduce,skip"}
    t0 = time.monotonic()
    job = Job(build, train_args(run, iters=10), {**fault, "DDPSCOPE_DEBUG": "detail"})
    code = job.wait(60)
    r.detection = time.monotonic() - t0
    problems = check_common(r, job, code, run, 60, names=(r"collective mismatch on group 'world': rank 0 allreduce "
                                                          r"#\d+ f64\[\] vs rank 1 allreduce #\d+ f32\[\d+\]",))
    plain_run = os.path.join(work, "mismatch-coll-plain.ddprun")
    plain = Job(build, train_args(plain_run, iters=10), fault)
    plain_code = plain.wait(60)
    problems += [f"without detail: {p}" for p in check_common(r, plain, plain_code, plain_run, 60,
                                                              names=(r"MPI_ERR_TRUNCATE|Ranks called different collectives",
                                                                     r"DDPSCOPE_DEBUG=detail"))]
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def scenario_uneven(build, work):
    r = Result("uneven inputs without join (--inject-uneven 1:20 of 40 iterations)",
               "ends at the collective timeout; the diagnosis names rank 1, the two different collectives and "
               "suggests --join; each rank's stack says where it waits (rank 1 in the worker's main, past the "
               "loop; rank 0 in the training step); with --join the same job finishes")
    run = os.path.join(work, "uneven.ddprun")
    t0 = time.monotonic()
    # Stacks after 2 s without progress, well before the group's 4 s timeout.
    job = Job(build, train_args(run, iters=40, extra=["--inject-uneven", "1:20"]), {"DDPSCOPE_STACKS_AFTER_S": "2"})
    code = job.wait(60)
    r.detection = time.monotonic() - t0
    problems = check_common(r, job, code, run, 60, names=(
        r"diagnosis: Group 'world' collective #\d+: collective type mismatch\. Rank 1 left the training loop \(its "
        r"#\d+ is barrier in iteration 20, outside any step\) while rank 0 called allreduce f32\[\d+\] in backward of "
        r"iteration 21", r"--join"))
    problems += stack_problems(build, run, {0: "ddpscope::apps::Trainer::step in ddpscope-worker", 1: "main in"})
    joined_run = os.path.join(work, "uneven-join.ddprun")
    joined = Job(build, train_args(joined_run, iters=40, extra=["--inject-uneven", "1:20", "--join"]))
    joined_code = joined.wait(60)
    problems += [f"with --join: {p}" for p in check_common(r, joined, joined_code, joined_run, 60, want_failure=False)]
    if not problems:
        its = open_run(joined_run).execute(
            "SELECT rank, COUNT(*) FROM spans WHERE kind = 0 GROUP BY rank ORDER BY rank").fetchall()
        if its != [(0, 40), (1, 20)]:
            problems.append(f"with --join: iterations per rank {its}")
    return r.conclude(problems, diagnosis_line(job)[:260] + "; with --join: finished")


# The server's records end where it was killed: in the collective it had started (a
# missing rank where the trainer had not yet called it), started and not completed while
# the trainer had (a state mismatch; seen under load), or between two collectives, every
# one matched (seen once, in a full ctest on this 2-core machine). Each way it is named as dead.
DEAD_SERVER = (r"diagnosis: (Group 'world' collective #\d+: (missing ranks|state mismatch)\. )?Rank 0 died by signal 9 "
               r"\(Killed\)")


def scenario_rpc_death(build, work, phase):
    if phase == "serve":
        r = Result("an RPC callee killed mid-call (the parameter server of --remote-embedding --np 2, in its 9th lookup)",
                   "the caller fails at once naming the worker and the call; the diagnosis names rank 0 as dead; "
                   "file sound; no process left")
        names = (r"connection to worker0 \(id 0\) broke .* call of 'train\.embed'", DEAD_SERVER)
    else:
        r = Result("a distributed backward whose worker dies (the parameter server of --remote-embedding --np 2, as call 9's gradient arrives)",
                   "the trainer's backward fails at once naming the worker and the backward call; the diagnosis "
                   "names rank 0 as dead; file sound; no process left")
        names = (r"connection to worker0 \(id 0\) broke .* call of '_ddpscope\.dist_backward'",
                 DEAD_SERVER)
    run = os.path.join(work, f"rpc-{phase}.ddprun")
    # One server and one trainer: the trainer is the caller the death reaches first (with
    # two, the other one's lookup may report first).
    job = Job(build, remote_args(run, np=2), {"DDPSCOPE_FAULT": f"rank=0,iter=9,phase={phase},kill"})
    code = job.wait(60)
    problems = check_common(r, job, code, run, 60, names=names)
    raised = job.first_time(r"raised SIG")
    reported = job.first_time(r"connection to worker0")
    if raised is not None and reported is not None:
        r.detection = max(0.0, reported - raised)
    # On a failure the table quotes the diagnosis too: its wording is what the row checks.
    return r.conclude(problems + ([f"said: {diagnosis_line(job)[:300]}"] if problems else []),
                      f"exit {code}: {last_error_line(job)}")


def scenario_app_file(build, work, what):
    """The desktop app's side, as its own widget test (tst_run_file_watch, offscreen)."""
    fn = {"deleted": "testRunFileDeletedWhileShown", "replaced": "testRunFileReplacedWhileShown"}[what]
    if what == "deleted":
        r = Result("the run file deleted while the app shows it",
                   "the views keep the run; a banner says the file was deleted; the run can still be saved as "
                   "a copy and exported")
    else:
        r = Result("the run file replaced while the app shows it (moved over; rewritten in place)",
                   "the earlier run stays on screen; a banner names the new run and offers Reload; nothing "
                   "reads the new file as the old run")
    t0 = time.monotonic()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    p = subprocess.run([os.path.join(build, "tests", "gui_tests"), "tst_run_file_watch", fn], capture_output=True, text=True,
                       env=env, timeout=120)
    took = time.monotonic() - t0
    passed = p.returncode == 0 and f"PASS   : TestRunFileWatch::{fn}()" in p.stdout
    fails = [l.strip() for l in p.stdout.splitlines() if l.startswith("FAIL!")]
    return r.conclude([] if passed else (fails or [f"tst_run_file_watch exit {p.returncode}"])[:2],
                      f"tst_run_file_watch {fn} passed; the whole test, detection included, took {took:.1f} s "
                      "(the app looks 0.3 s after the file's change)")


def rss_mib(pid, field="VmHWM"):
    """A process's peak resident memory so far in MiB (VmRSS: now; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) // 1024 for l in f if l.startswith(field + ":"))
    except (OSError, StopIteration):
        return 0


def scenario_foreign_rpc(build, work):
    r = Result("a foreign sender at a worker's RPC port (wrong token, no token, garbage; 5 of each; then a big "
               "frame behind a wrong token: 1 GiB claimed on TCP, 256 MiB sent on ZeroMQ)",
               "every message refused and counted (stats, the app's summary; on ZeroMQ the connection, at its "
               "handshake); the big frame read no further than its token, the worker's memory unchanged; the job "
               "finishes; the token is in no command line (ps) and not in the run file")
    run = os.path.join(work, "foreign.ddprun")
    # Long enough to outlast the sender on the faster transport too (tcp: about 1 s per 300).
    job = Job(build, remote_args(run, iters=1500))
    pid = wait_for_pid(job.tag, "ddpscope-worker", rank=1)
    problems, token, sent = [], None, ""
    ports = []
    end = time.monotonic() + 20
    while pid and not ports and time.monotonic() < end:
        ports = listening_loopback_ports(pid)
        time.sleep(0.1)
    if not ports:
        problems.append("no RPC port found for rank 1")
    else:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            env = {}  # the rank ended first: said below, as no token found
        token = env.get(b"DDPSCOPE_RUN_TOKEN")
        # The job's transport, as its workers chose it (DDPSCOPE_RPC_TRANSPORT).
        # shm and tcp both take the TCP transport's framing on their TCP port (shm_transport.h).
        scheme = "tcp" if os.environ.get("DDPSCOPE_RPC_TRANSPORT") == "zmq" else "ddptcp"
        for port in ports:
            p = subprocess.run([os.path.join(build, "tests", "foreign_rpc_sender"), f"{scheme}://127.0.0.1:{port}", "5"],
                               capture_output=True, text=True, timeout=30)
            sent += p.stdout.strip() + " "
        # A big frame behind a wrong token costs the worker nothing: TCP reads no further than
        # the token; ZeroMQ's handshake refuses the connection before any message.
        before = rss_mib(pid)
        p = subprocess.run([os.path.join(build, "tests", "foreign_rpc_sender"), f"{scheme}://127.0.0.1:{ports[0]}",
                            "big", "256"], capture_output=True, text=True, timeout=60)
        grown = rss_mib(pid) - before
        sent += p.stdout.strip() + f" (its memory grew {grown} MiB) "
        taken = re.search(r"took (\d+) of", p.stdout)
        if (scheme == "ddptcp" and (not taken or int(taken.group(1)) >= 64)) or grown >= 64:
            problems.append(f"a wrong token's big frame was read: {p.stdout.strip()}, memory grew {grown} MiB")
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True).stdout
        if token is None:
            problems.append("no DDPSCOPE_RUN_TOKEN in rank 1's environment")
        elif token in ps:
            problems.append("the token is on a command line")
    code = job.wait(120)
    problems += check_common(r, job, code, run, 120, want_failure=False)
    if not problems:
        stats = subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "stats", "--summary", "--json", run],
                               capture_output=True, text=True)
        import json
        rejected = json.loads(stats.stdout)["rejected"]
        refused = rejected["rpc_without_token"] + rejected["rpc_malformed"]
        # ZeroMQ refuses the sender's connections during its handshake (each counted), so none
        # of its messages is read; TCP reads each message to its token and refuses it.
        wanted = 1 if os.environ.get("DDPSCOPE_RPC_TRANSPORT") == "zmq" else 15
        if refused < wanted:
            problems.append(f"stats counts {refused} refused RPC messages or connections, {wanted} wanted")
        for path in (run, run + "-wal"):
            if token and os.path.exists(path) and token in open(path, "rb").read():
                problems.append(f"the token is in {os.path.basename(path)}")
        r.observed = (f"{sent.strip()}; stats: {rejected['rpc_without_token']} without the token, "
                      f"{rejected['rpc_malformed']} malformed, by rank {rejected['by_rank']}; job exit {code}; "
                      f"token ({len(token)} bytes) in no command line or run file")
    r.ok = not problems
    if problems:
        r.observed = "; ".join(problems)
    return r


def scenario_foreign_collector(build, work):
    r = Result("a foreign sender at the collector's ports (a 512 MiB frame behind a wrong token)",
               "the frame refused as it arrives (ZeroMQ's message limit): the collector's memory unchanged; "
               "the job finishes and its run is whole")
    run = os.path.join(work, "foreign-collector.ddprun")
    job = Job(build, train_args(run, iters=3000))
    pid = wait_for_pid(job.tag, "ddpscope-collec")  # its comm, cut to 15 characters
    problems, said = [], []
    ports = []
    end = time.monotonic() + 20
    while pid and len(ports) < 2 and time.monotonic() < end:
        ports = listening_loopback_ports(pid)
        time.sleep(0.1)
    if len(ports) < 2:
        problems.append(f"the collector's two ports not found (found {ports})")
    for port in ports:
        before = rss_mib(pid)
        p = subprocess.run([os.path.join(build, "tests", "foreign_rpc_sender"), f"tcp://127.0.0.1:{port}", "big",
                            "512"], capture_output=True, text=True, timeout=60)
        grown = rss_mib(pid) - before
        said.append(f"port {port}: its memory grew {grown} MiB")
        if p.returncode != 0 or grown >= 64:
            problems.append(f"port {port}: {p.stdout.strip()} {p.stderr.strip()[-200:]}; memory grew {grown} MiB")
    code = job.wait(120)
    problems += check_common(r, job, code, run, 120, want_failure=False)
    return r.conclude(problems, f"exit {code}; " + "; ".join(said))


def seed_example_and_worker_0(build, run, env):
    """The seed example repeated for as long as a row needs, and worker 0's pid once it exists."""
    job = Job(build, ["example", "seed", "--np", "2", "--repeat", "1000000", "--out", run], env)
    return job, wait_for_pid(job.tag, "ddpscope-worker", rank=0)


def scenario_rpc_worker_stopped(build, work):
    r = Result("RPC worker 0 stopped (SIGSTOP) mid-job (example seed; RPC and end timeouts 3 s)",
               "worker 1's calls time out and it ends; the end watchdog then ends the job naming worker 0, said "
               "stopped; no process left (it hung for ever before)")
    run = os.path.join(work, "rpc-stopped.ddprun")
    job, pid = seed_example_and_worker_0(build, run, {"DDPSCOPE_RPC_TIMEOUT_MS": "3000",
                                                      "DDPSCOPE_END_TIMEOUT_MS": "3000"})
    # Mid-job: every worker's RPC is up, and worker 0 times its forward and backward runs.
    # A fixed 2 s from the process's start once stopped it in MPI's start-up on a loaded
    # machine (the rpc-stopped-starting row's case).
    problems_before = [] if wait_for_line(job, r"every rank is up") else ["the job never said every rank is up"]
    time.sleep(1.0)
    code = stopped_until_the_end(r, job, pid, 90)
    problems = check_common(r, job, code, run, 90, names=(r"rank 0 never reported its end \(stopped, or stuck\)",))
    problems += unanswering_problems(build, run, {0: "was stopped by a signal"})
    if pid is None:
        problems.append("worker 0 was never found")
    return r.conclude(problems_before + problems, f"exit {code}: {last_error_line(job)}")


def scenario_rpc_worker_stopped_starting(build, work):
    r = Result("RPC worker 0 stopped (SIGSTOP) as it starts (example seed; start timeout 5 s)",
               "the launcher ends the job at its start timeout, saying a rank is stuck in its start-up; file sound; "
               "no process left (worker 1 waited in MPI's start-up for ever before)")
    run = os.path.join(work, "rpc-stopped-starting.ddprun")
    job, pid = seed_example_and_worker_0(build, run, {"DDPSCOPE_START_TIMEOUT_MS": "5000"})
    code = stopped_until_the_end(r, job, pid, 60)
    problems = check_common(r, job, code, run, 60, names=(r"had not started 5 s after launch: a rank is stuck in "
                                                          r"its start-up",))
    if job.first_time(r"every rank is up") is not None:
        problems.append("the job said every rank is up, though worker 0 was stopped as it started")
    if pid is None:
        problems.append("worker 0 was never found")
    status, _ = run_status(run)
    if status != "failed":
        problems.append(f"run status {status}")
    return r.conclude(problems, f"exit {code}: {last_error_line(job)}")


def scenario_rpc_shutdown_waits(build, work):
    r = Result("graceful RPC shutdown while worker 0 still works several times the RPC timeout (example seed "
               "--repeat 30000 on shm, 10000 on tcp; DDPSCOPE_RPC_TIMEOUT_MS=1000)",
               "worker 1 waits in shutdown until worker 0 is done; the job finishes, no warning (it gave up after "
               "the RPC timeout before, and the job failed)")
    problems, said = [], []
    for transport, repeat in (("shm", "30000"), ("tcp", "10000")):
        run = os.path.join(work, f"shutdown-{transport}.ddprun")
        t0 = time.monotonic()
        job = Job(build, ["example", "seed", "--np", "2", "--repeat", repeat, "--rpc-transport", transport,
                          "--out", run], {"DDPSCOPE_RPC_TIMEOUT_MS": "1000"})
        code = job.wait(120)
        problems += [f"{transport}: {p}" for p in check_common(r, job, code, run, 120, want_failure=False)]
        text = job.text()
        if "graceful shutdown" in text or "RPC is shut down" in text:
            problems.append(f"{transport}: {last_error_line(job)}")
        said.append(f"{transport}: exit {code} in {time.monotonic() - t0:.1f} s")
    return r.conclude(problems, "; ".join(said))


def scenario_disk_full(build, work):
    r = Result("the disk holding the run file fills up", "training goes on; the file stays sound; the events lost "
                                                         "are counted and reported; the run's end is recorded (status "
                                                         "incomplete)")
    if os.geteuid() != 0 or shutil.which("mount") is None:
        r.observed = "SKIP: needs root to mount a small tmpfs"
        r.skipped = True  # neither a pass nor a failure: the table says SKIP
        return r
    mnt = os.path.join(work, "small")
    os.makedirs(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], check=True)
    try:
        run = os.path.join(mnt, "full.ddprun")
        job = Job(build, train_args(run, iters=1500))
        code = job.wait(120)
        problems = check_common(r, job, code, run, 120, want_failure=False)
        lost = re.search(r"(\d+) events lost: the disk holding the run file is full", job.text())
        if not lost:
            problems.append("the lost events are not reported")
        # The end is recorded even on a full disk (the collector's reserve), and says what
        # was lost; the events stored before stay readable.
        status, message = run_status(run)
        if status != "incomplete" or not re.search(r"\d+ events lost", message or ""):
            problems.append(f"run status {status}: {message}")
        try:
            stored = open_run(run).execute("SELECT COUNT(*) FROM spans").fetchone()[0]
        except sqlite3.Error as e:
            stored = f"unreadable ({e})"
        if not isinstance(stored, int) or stored == 0:
            problems.append(f"spans stored before the disk filled: {stored}")
        if os.path.exists(run + "-reserve"):
            problems.append("the collector's reserve file was left beside the run")
        if os.path.exists(run + "-wal") and "-wal beside the run file" not in job.text():
            problems.append("a WAL was left beside the run file without a word")
        wal_note = " (its last part in the -wal beside it, as the job said)" if os.path.exists(run + "-wal") else ""
        r.ok = not problems
        r.observed = "; ".join(problems) if problems else (
            f"exit {code}: {lost.group(0)}; status incomplete, {stored} spans kept{wal_note}")
    finally:
        subprocess.run(["umount", "-l", mnt])
    return r


SCENARIOS = {
    **{f"kill-{p}": (lambda b, w, p=p: scenario_rank_signal(b, w, p, "SIGKILL"))
       for p in ("forward", "backward", "allreduce", "optimizer")},
    **{f"segv-{p}": (lambda b, w, p=p: scenario_rank_signal(b, w, p, "SIGSEGV"))
       for p in ("forward", "backward", "allreduce", "optimizer")},
    "rank-stopped": scenario_rank_stopped,
    "rank-stopped-starting": scenario_rank_stopped_starting,
    "rank-stopped-ending": scenario_rank_stopped_ending,
    "collector-killed": lambda b, w: scenario_collector(b, w, "kill"),
    "collector-stopped": lambda b, w: scenario_collector(b, w, "stop"),
    "launcher-killed": lambda b, w: scenario_launcher(b, w, "kill"),
    "launcher-stopped": lambda b, w: scenario_launcher(b, w, "stop"),
    "same-out": scenario_same_out,
    "existing-run": scenario_existing,
    "nonfinite-loss": scenario_nonfinite,
    "unused-parameter": scenario_unused,
    "disk-full": scenario_disk_full,
    "model-mismatch": scenario_model_mismatch,
    "mismatched-collectives": scenario_mismatched_collectives,
    "uneven-inputs": scenario_uneven,
    "app-file-deleted": lambda b, w: scenario_app_file(b, w, "deleted"),
    "app-file-replaced": lambda b, w: scenario_app_file(b, w, "replaced"),
    **cluster_faults.scenarios(sys.modules[__name__]),
    "foreign-rpc-sender": scenario_foreign_rpc,
    "foreign-collector-sender": scenario_foreign_collector,
    "rpc-worker-stopped": scenario_rpc_worker_stopped,
    "rpc-stopped-starting": scenario_rpc_worker_stopped_starting,
    "rpc-shutdown-waits": scenario_rpc_shutdown_waits,
    "rpc-callee-killed": lambda b, w: scenario_rpc_death(b, w, "serve"),
    "dist-backward-worker-killed": lambda b, w: scenario_rpc_death(b, w, "backward"),
    **flight_faults.scenarios(sys.modules[__name__]),
    **torch_faults.scenarios(sys.modules[__name__]),
    **stop_faults.scenarios(sys.modules[__name__]),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "FAULTS.md"))
    parser.add_argument("--only", action="append")
    parser.add_argument("--skip", action="append", default=[], help="leave this scenario out (repeat it)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it: the rows' run files and logs")
    parser.add_argument("--part", metavar="K/N",
                        help="run every N-th scenario from the K-th (CTest runs the suite in parts, side by side: "
                        "each job carries its own tag, run folder and ports); the table then holds that part")
    parser.add_argument("--readme", nargs="?", const=os.path.join(ROOT, "docs", "faults.md"), metavar="PAGE",
                        help="also put the table, short, between the FAULTS markers of PAGE "
                        "(default: docs/faults.md)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    os.environ["DDPSCOPE_SQLITE_EXT"] = os.path.join(build, "lib", "libddpscope_sqlite.so")
    chosen = [k for k in SCENARIOS if (not args.only or k in args.only) and k not in args.skip]
    if args.part:
        k, n = (int(x) for x in args.part.split("/"))
        if not 1 <= k <= n:
            parser.error(f"--part {args.part}: K must be from 1 to N")
        chosen = chosen[k - 1::n]
    results = []
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    with (contextlib.nullcontext(os.path.abspath(args.keep)) if args.keep else tempfile.TemporaryDirectory()) as work:
        for key in chosen:
            fn = SCENARIOS[key]
            t = time.monotonic()
            r = fn(build, work)
            # The table reads the same wherever it ran: no temporary folders or build paths.
            r.observed = r.observed.replace(work + "/", "").replace(os.path.join(build, "bin") + "/", "")
            mark = r.mark()
            print(f"[{mark}] {r.name} ({time.monotonic() - t:.1f} s): {r.observed}", flush=True)
            results.append(r)
    lines = ["# Fault suite", "",
             "Generated by `tests/faults/run_faults.py` (CTest `fault_suite`): real 2-rank jobs, one fault each. "
             "Every row also checks that the run file passes `PRAGMA integrity_check` and that no process "
             "of the job is left behind. \"open\" marks a known gap.", "",
             "| scenario | expected | observed | time to detection | result |",
             "| --- | --- | --- | --- | --- |"]
    for r in results:
        det = f"{r.detection:.1f} s" if r.detection is not None else "–"
        mark = r.mark()
        obs = r.observed.replace("|", "/")
        lines.append(f"| {r.name} | {r.expected} | {obs} | {det} | {mark} |")
    whole = not args.only and not args.skip and not args.part
    if whole or args.part:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    if whole and args.readme:
        short = ["| scenario | time to detection | result |", "| --- | --- | --- |"]
        for r in results:
            short.append(f"| {r.name} | {f'{r.detection:.1f} s' if r.detection is not None else '–'} | {r.mark()} |")
        with open(args.readme) as f:
            text = f.read()
        begin = text.index("<!-- FAULTS BEGIN")
        begin = text.index("\n", begin) + 1
        end = text.index("<!-- FAULTS END -->")
        with open(args.readme, "w") as f:
            f.write(text[:begin] + "\n".join(short) + "\n" + text[end:])
        print(f"wrote the short table into {args.readme}")
    failed = [r for r in results if not r.ok and r.must_hold and not r.skipped]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
