#!/usr/bin/python3
"""Our engine's ranks' native stacks in a hang (issue 66), on real 2-rank jobs under
`ddpscope-cli train --np 2` that end at the process group's 6 s timeout: rank 1 stalled by
`--inject-stall` (its stack must name the trainer's stall, rank 0's the training step it waits
in), and rank 1 leaving the loop early (`--inject-uneven`: it waits in the closing barrier while
rank 0 waits in an allreduce). The verdict of `hang` names the culprit's function; `hang --json`
carries every thread's frames, marked native. A rank stopped by SIGSTOP cannot answer: `hang` on
the running job says so, with its pid, and so does `hang` after the job was stopped by hand
(the launcher noted the rank's state before ending it). `hang --ask` on a running job gets every rank's stack now.

Usage: test_native_stacks.py BUILD_DIR
"""
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
CLI = os.path.join(BUILD, "bin", "ddpscope-cli")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", DDPSCOPE_STACKS_AFTER_S="2",
           DDPSCOPE_PG_TIMEOUT_MS="6000")


def failed_job(tmp, *options):
    """A job that must end at the group's timeout; returns `hang` as text and as JSON."""
    run = os.path.join(tmp, "job.ddprun")
    job = subprocess.run([CLI, "train", "--np", "2", "--iters", "12", "--progress", "lines", "--out", run, *options],
                         env=ENV, capture_output=True, text=True, timeout=240)
    assert job.returncode != 0, "the job should fail at the group's timeout: " + job.stdout[-2000:]
    text = subprocess.run([CLI, "hang", run], capture_output=True, text=True, timeout=60, check=True).stdout
    report = subprocess.run([CLI, "hang", "--json", run], capture_output=True, text=True, timeout=60, check=True)
    return text, json.loads(report.stdout)


def rank_pid_once_training(run, rank, limit_s=60):
    """The rank's pid, from the run file once the job has recorded an iteration's metrics."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            with sqlite3.connect("file:%s?mode=ro" % run, uri=True) as db:
                row = db.execute("SELECT pid FROM ranks WHERE rank = ?", (rank,)).fetchone()
                trained = db.execute("SELECT count(*) FROM metrics").fetchone()[0] > 0
        except sqlite3.Error:
            continue  # not created yet
        if row and row[0] and trained:
            return row[0]
    raise AssertionError("rank %d never reached the run %s" % (rank, run))


def user_functions(capture):
    return [f["function"] for f in capture["threads"][0]["frames"] if not f["library"]]


def every_function(capture):
    return [f["function"] for t in capture["threads"] for f in t["frames"]]


class NativeStacksTest(unittest.TestCase):
    def test_a_stalled_rank_is_named_with_the_function_it_stalls_in(self):
        with tempfile.TemporaryDirectory() as tmp:
            text, report = failed_job(tmp, "--inject-stall", "1:5:20")
            stacks = {c["rank"]: c for c in report["stacks"]}
            self.assertEqual(sorted(stacks), [0, 1], report["stacks"])
            for capture in stacks.values():
                self.assertEqual(capture["language"], "native", capture)
                self.assertTrue(capture["current"], capture)
                self.assertGreaterEqual(capture["stalled_ms"], 1900, capture)
            # Rank 1 sleeps in the trainer's stall, called from the training step.
            self.assertEqual(user_functions(stacks[1])[:2],
                             ["ddpscope::apps::Trainer::inject_stall_if_asked()", "ddpscope::apps::Trainer::step()"],
                             stacks[1]["threads"][0])
            self.assertTrue(any("nanosleep" in f for f in every_function(stacks[1])), stacks[1])
            # Rank 0 waits in its backward's allreduce: the step is its own code; its group's
            # thread sleeps until every rank has come to the allreduce (on one host, on the
            # group's shared futex: c10d/host_arrival_board.h).
            self.assertEqual(user_functions(stacks[0])[0], "ddpscope::apps::Trainer::step()", stacks[0])
            self.assertTrue(any("HostArrivalBoard::arrive_and_wait" in f for f in every_function(stacks[0])),
                            every_function(stacks[0]))
            self.assertIn("Rank 1 is in ddpscope::apps::Trainer::inject_stall_if_asked in ddpscope-worker, called "
                          "from ddpscope::apps::Trainer::step in ddpscope-worker (its stack, after ", report["verdict"])
            self.assertRegex(report["verdict"], r"Rank 0 waits in allreduce #\d+, called from "
                                                r"ddpscope::apps::Trainer::step in ddpscope-worker\.")
            self.assertIn("rank 1's stack", text)
            self.assertIn("ddpscope::apps::Trainer::inject_stall_if_asked() in ", text)

    def test_a_rank_that_left_the_loop_waits_in_the_closing_barrier(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, report = failed_job(tmp, "--inject-uneven", "1:5")
            stacks = {c["rank"]: c for c in report["stacks"]}
            self.assertEqual(sorted(stacks), [0, 1], report["stacks"])
            # Rank 1 is in the worker's main, past its training loop, in MPI's barrier.
            self.assertEqual(user_functions(stacks[1])[0], "main", stacks[1]["threads"][0])
            self.assertTrue(any("arrier" in f for f in every_function(stacks[1])), every_function(stacks[1]))
            self.assertEqual(user_functions(stacks[0])[0], "ddpscope::apps::Trainer::step()", stacks[0])

    def test_a_stopped_rank_is_said_not_to_answer(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "stopped.ddprun")
            env = dict(ENV, DDPSCOPE_PG_TIMEOUT_MS="120000")
            job = subprocess.Popen([CLI, "train", "--np", "2", "--iters", "1000000", "--progress", "lines", "--out",
                                    run], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                pid = rank_pid_once_training(run, 1)
                os.kill(pid, signal.SIGSTOP)
                time.sleep(4)  # rank 0 waits, and takes its stack after 2 s without progress
                done = subprocess.run([CLI, "hang", "--json", run], capture_output=True, text=True, timeout=60,
                                      check=True)
                report = json.loads(done.stdout)
                # Stopped by hand while rank 1 is still stopped: the launcher notes its state
                # before mpirun ends it.
                job.send_signal(signal.SIGINT)
                job.wait(60)
            finally:
                if job.poll() is None:
                    os.kill(pid, signal.SIGCONT)
                    job.send_signal(signal.SIGINT)
                    job.wait(60)
            self.assertEqual(report["unanswering"],
                             [{"rank": 1, "why": "is stopped by a signal (SIGSTOP or SIGTSTP), so it runs no code"}],
                             report["verdict"])
            self.assertIn("Rank 1 did not answer: its process (pid %d) is stopped by a signal" % pid,
                          report["verdict"])
            stacks = {c["rank"]: c for c in report["stacks"]}
            self.assertNotIn(1, stacks, "a stopped rank took no stack")
            # Rank 0 waits in whichever collective of its step rank 1 was stopped before (the
            # backward's allreduce, or the loss's in Trainer::loss_over_ranks).
            self.assertIn("ddpscope::apps::Trainer::step()", user_functions(stacks[0]), stacks[0])
            # Once the job is over, the run still says so, in the past tense.
            after = json.loads(subprocess.run([CLI, "hang", "--json", run], capture_output=True, text=True,
                                              timeout=60, check=True).stdout)
            self.assertEqual(after["unanswering"],
                             [{"rank": 1, "why": "was stopped by a signal (SIGSTOP or SIGTSTP) when the job was "
                                                 "ended, so it ran no code"}], after["verdict"])
            self.assertIn("Rank 1 did not answer: its process (pid %d) was stopped by a signal" % pid,
                          after["verdict"])
            with sqlite3.connect("file:%s?mode=ro" % run, uri=True) as db:
                states = dict(db.execute("SELECT rank, end_state FROM ranks").fetchall())
            self.assertEqual(states[1], "T")
            self.assertIn(states[0], ("S", "R", "D"))

    def test_hang_ask_takes_every_ranks_stack_now(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "asked.ddprun")
            job = subprocess.Popen([CLI, "train", "--np", "2", "--iters", "1000000", "--progress", "lines", "--out",
                                    run], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                rank_pid_once_training(run, 1)
                done = subprocess.run([CLI, "hang", "--ask", "--json", run], capture_output=True, text=True,
                                      timeout=60)
            finally:
                job.send_signal(signal.SIGINT)
                job.wait(60)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertRegex(done.stderr, r"asked 2 ranks for their stacks: 2 answered in \d+\.\d s")
            stacks = {c["rank"]: c for c in json.loads(done.stdout)["stacks"]}
            self.assertEqual(sorted(stacks), [0, 1])
            for rank, capture in stacks.items():
                self.assertEqual(capture["reason"], "asked for by the user", capture)
                self.assertEqual(capture["language"], "native", capture)
                # A running rank is somewhere in its training loop.
                self.assertTrue(any(f.startswith("ddpscope::apps::") or f == "main" for f in user_functions(capture)),
                                capture["threads"][0])
            # A finished job cannot be asked.
            refused = subprocess.run([CLI, "hang", "--ask", run], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(refused.returncode, 0)
            self.assertIn("only a running job can be asked for its stacks", refused.stderr)

    def test_hang_ask_says_why_it_cannot_ask(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A run left "running" by a job that is gone (killed with its launcher): no one holds it.
            run = os.path.join(tmp, "orphan.ddprun")
            subprocess.run([CLI, "train", "--np", "2", "--iters", "3", "--progress", "lines", "--out", run], env=ENV,
                           capture_output=True, check=True, timeout=120)
            with sqlite3.connect(run) as db:
                db.execute("UPDATE runs SET status = 'running'")
            said = subprocess.run([CLI, "hang", "--ask", run], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(said.returncode, 0)
            self.assertIn("no job on this host records '%s'" % run, said.stderr)
            # Held by a process that is not ddpscope's launcher.
            with open(run, "rb") as held:
                fcntl.flock(held, fcntl.LOCK_EX)
                said = subprocess.run([CLI, "hang", "--ask", run], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(said.returncode, 0)
            self.assertIn("is held by pid %d (" % os.getpid(), said.stderr)
            self.assertIn("not by a ddpscope-cli launcher: its ranks cannot be asked", said.stderr)
            # Flight-recorder dumps have no job to ask.
            dumps = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch_2_11_flight",
                                 "gloo-4-size", "pickle")
            said = subprocess.run([CLI, "hang", "--ask", dumps], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(said.returncode, 0)
            self.assertIn("flight-recorder dumps cannot be asked", said.stderr)


if __name__ == "__main__":
    unittest.main()
