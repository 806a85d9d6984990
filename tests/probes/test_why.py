#!/usr/bin/python3
"""`ddpscope-cli why` (issue 65) against causes the test makes: one rank slept in one phase of
every iteration, on our engine and on an unchanged PyTorch script, at 2 and 4 ranks (a seeded
random sample of the matrix tests/bench/run_why_matrix.py runs whole); healthy runs, which
must not get a cause; a rank kept from its core by busy loops, which must be said to be late
for want of a CPU; the what-if against a re-run without the slowdown; a 2 s stall, named
with its iteration and left out; runs that cannot have a verdict. Every run of the sample, and
the healthy ones, is also opened in the app, whose pages must name the same rank.

Usage: test_why.py BUILD_DIR   (DDPSCOPE_WHY_SEED picks another sample; it is printed on failure)
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import why_cases  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
CLI = os.path.join(BUILD, "bin", "ddpscope-cli")
GUI_TESTS = os.path.join(BUILD, "tests", "gui_tests")
SEED = int(os.environ.get("DDPSCOPE_WHY_SEED", "65"))


def on_every_page(test, run, rank):
    """The app's pages on a run `why` named `rank` for (-1: none): they must name the same
    (tst_one_verdict's testARealRunOnEveryPage, offscreen). A build without the app skips it."""
    if not os.path.exists(GUI_TESTS):
        return
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", DDPSCOPE_VERDICT_RUN=run, DDPSCOPE_VERDICT_RANK=str(rank))
    done = subprocess.run([GUI_TESTS, "tst_one_verdict", "testARealRunOnEveryPage"], env=env, capture_output=True,
                          text=True, timeout=120)
    test.assertIn("PASS   : TestOneVerdict::testARealRunOnEveryPage()", done.stdout,
                  "the app's pages on %s (rank %d): %s" % (run, rank, (done.stdout + done.stderr)[-3000:]))


def stats_agree(test, run, verdict):
    """`stats` on the same run names the same late ranks, iteration by iteration, and the same
    straggler (its "late", in words and JSON): one analysis. (Its first-bucket rule before
    missed a rank slow in the middle of backward.)"""
    stats = json.loads(subprocess.run([CLI, "stats", "--json", run], capture_output=True, text=True,
                                      check=True).stdout)
    late = stats["late"]
    straggler = verdict["straggler"]["rank"] if verdict["straggler"] else None
    test.assertEqual(late["straggler"], straggler, late)
    test.assertEqual([(r["iteration"], r["rank"]) for r in late["by_iteration"]],
                     [(r["iteration"], r["rank"]) for r in verdict["by_iteration"] if r["rank"] is not None])
    text = subprocess.run([CLI, "stats", "--summary", run], capture_output=True, text=True, check=True).stdout
    if straggler is not None:
        test.assertIn("rank %d is the one the job waits for" % straggler, text)


# The least slowdown the sample asks for when ranks outnumber the cores, before it is
# stretched: CI at -j3 (beside the fuzzers and the memory bombs) missed 'torch --np 4, rank
# 3:forward' at 7 ms stretched to 14 twice, in iterations of 48-52 ms where the ranks waited
# 9-10 ms per iteration for each other by turns. A rank that sleeps frees its core for the
# others, so on shared cores its lead shrinks; 12 ms stretched to 24 stays over that noise.
OVERSUBSCRIBED_FLOOR_MS = 12


def oversubscribed(case):
    """The case with its slowdown raised to the floor and stretched by ranks per core when its
    ranks outnumber the cores."""
    cores = os.cpu_count() or 1
    if case.ranks > cores:
        case.ms = round(max(case.ms, OVERSUBSCRIBED_FLOOR_MS) * case.ranks / cores)
    return case


class WhyTest(unittest.TestCase):
    def test_a_random_sample_of_slow_ranks_is_named_with_its_phase(self):
        # A second run of a case that missed (no rank named, or another): a test beside this one
        # on two cores can take a rank's core for long enough to hide 5 ms in a run of 18
        # iterations, or to make another rank the slower one. The benchmark counts misses and
        # blamed waiting ranks at one run a case.
        # Ranks beyond the cores share them, which stretches their phases and their jitter
        # alike, so the slowdown is stretched too (times ranks per core): CI at -j3 missed an
        # 8 ms slowdown twice on 4 ranks whose iterations took 46-60 ms with 10 ms of waiting by
        # turns. The matrix (tests/bench/run_why_matrix.py) measures the hit rate at 5-40 ms.
        cases = [oversubscribed(case) for case in why_cases.random_cases(SEED, 6)]
        misses = []
        with tempfile.TemporaryDirectory() as tmp:
            for case in cases:
                said = []
                for _ in range(2):
                    verdict = why_cases.verdict_of(CLI, tmp, case)
                    blamed = " (a waiting rank blamed)" if why_cases.blames_a_waiting_rank(case, verdict) else ""
                    said.append(verdict["verdict"] + blamed)
                    if why_cases.named_right(case, verdict):
                        on_every_page(self, os.path.join(tmp, "case.ddprun"), case.rank)
                        stats_agree(self, os.path.join(tmp, "case.ddprun"), verdict)
                        break
                else:
                    misses.append("%s: %s" % (case, " / ".join(said)))
        self.assertEqual(misses, [], "seed %d (DDPSCOPE_WHY_SEED)" % SEED)

    def test_the_verdict_names_cause_waiters_and_what_if(self):
        with tempfile.TemporaryDirectory() as tmp:
            case = why_cases.Case("engine", 2, 1, "backward@layers.4", 30)
            verdict = why_cases.verdict_of(CLI, tmp, case)
            s = verdict["straggler"]
            self.assertEqual((s["rank"], s["phase"], s["where"]), (1, "backward", "module.layers.4"), verdict)
            stats_agree(self, os.path.join(tmp, "case.ddprun"), verdict)
            # Rank 1 slept 30 ms an iteration: its backward is longer by about that.
            self.assertGreater(s["extra_ms_per_iteration"], 20, verdict)
            self.assertLess(s["extra_ms_per_iteration"], 45, verdict)
            self.assertGreaterEqual(s["iterations"], 0.8 * verdict["iterations"], verdict)
            waits = {w["rank"]: w["wait_ms_per_iteration"] for w in verdict["waits"]}
            self.assertGreater(waits[0], 15, verdict)
            self.assertLess(waits[1], waits[0] / 3, verdict)
            self.assertLess(verdict["what_if_ms"], verdict["iteration_ms"] - 15, verdict)
            text = subprocess.run([CLI, "why", os.path.join(tmp, "case.ddprun")], capture_output=True, text=True,
                                  check=True).stdout
            # "in those, ": when rank 1 gated fewer than all the iterations (one was another rank's).
            self.assertRegex(text, r"^Rank 1 gates \d+ of \d+ iterations: (in those, )?it spends [\d.]+ ms per "
                                   r"iteration in backward, most of it before the gradient of 'module.layers.4' was ready, where "
                                   r"the other rank spends [\d.]+ ms\. Rank 0 waits [\d.]+ ms per iteration for it in "
                                   r"allreduce\. Without that, an iteration would take about [\d.]+ ms instead of "
                                   r"[\d.]+ ms \((give or take [\d.]+ ms: in this run its ranks waited that long per "
                                   r"iteration for a core, and without the slowdown they would wait more or less|or "
                                   r"somewhat more: these ranks share a host's cores, which they would then compute on "
                                   r"at the same time)\)\.\n")
            # Both ranks on this machine's CPUs: the what-if may be off by their wait for a core
            # (the engine records it), said with the figure the JSON has; else it is a floor.
            self.assertTrue(verdict["ranks_share_cores"], verdict)
            band = verdict["what_if_give_or_take_ms"]
            if band is not None:
                self.assertIn("(give or take %.1f ms:" % band, text)
                self.assertGreater(band, 0, verdict)
            # It slept: it was not kept from a core (the test below makes one that was).
            self.assertFalse(s["for_want_of_cpu"], verdict)
            self.assertLess(s["cpu_wait_ms"], s["extra_ms_per_iteration"] / 4, verdict)

    def test_a_slow_optimizer_is_named_under_zero_and_the_fused_optimizer(self):
        # Under --zero the slowdown sat outside every span (read: outside the step, "input
        # loading?"); under --fused-optimizer it never ran.
        for extra in (["--zero"], ["--zero-overlap"], ["--fused-optimizer"]):
            with self.subTest(extra=extra), tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "opt.ddprun")
                cmd = why_cases.job_command(CLI, out, "engine", 2, "1:optimizer:15", iters=20) + extra
                subprocess.run(cmd, env=dict(os.environ, **why_cases.MPI_AS_ROOT), capture_output=True, check=True,
                               timeout=300)
                verdict = why_cases.why(CLI, out)
                s = verdict["straggler"] or {}
                self.assertEqual((s.get("rank"), s.get("phase")), (1, "optimizer"), verdict["verdict"])
                self.assertGreater(s["extra_ms_per_iteration"], 10, verdict["verdict"])

    def test_a_rank_out_of_data_under_join_is_left_out_not_blamed_on_the_others(self):
        # Rank 1's data ends after iteration 20 of 40 (--inject-uneven): under join it only
        # shadows rank 0's allreduces, arriving first at each, and rank 0, the one still
        # training, was named ("gates 27 of 38 ... in backward").
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "join.ddprun")
            cmd = why_cases.job_command(CLI, out, "engine", 2, iters=40) + ["--join", "--inject-uneven", "1:20"]
            subprocess.run(cmd, env=dict(os.environ, **why_cases.MPI_AS_ROOT), capture_output=True, check=True,
                           timeout=300)
            verdict = why_cases.why(CLI, out)
            self.assertIsNone(verdict["straggler"], verdict["verdict"])
            left = verdict["not_every_rank"]
            self.assertEqual(left["absent_ranks"], [1], verdict)
            self.assertEqual(left["iterations"], list(range(21, 40)), verdict)
            self.assertIn("Iterations 21 to 39 left out: rank 1 did not run them (under join, a rank out of data "
                          "only shadows the others' collectives).", verdict["verdict"])

    def test_short_windows_of_a_healthy_run_blame_no_rank_for_jitter(self):
        # The Live tab's last 3 iterations: a rank late by over the noise whose phases took the
        # others' time is the machine's jitter. Before, healthy runs' windows named a rank in 3
        # to 12 of 35 ("it spends 0.3 ms per iteration outside the training step ... where the
        # other rank spends 0.2 ms"). A window may name a rank whose phase did take longer
        # (on a loaded machine a rank kept from its core for a few ms is the one waited for,
        # and said to be), not one late for no longer work.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "healthy.ddprun")
            why_cases.run_job(CLI, out, "engine", 2, iters=40)
            for until in range(5, 39):
                done = subprocess.run([CLI, "why", "--json", "--last", "3", "--until", str(until), out],
                                      capture_output=True, text=True, check=True)
                verdict = json.loads(done.stdout)
                s = verdict["straggler"]
                if s:
                    self.assertGreaterEqual(s["extra_ms_per_iteration"], 0.5 * verdict["noise_ms"],
                                            "--until %d: %s" % (until, verdict["verdict"]))

    def hogged_verdict(self, kind, tmp):
        """`why --json` on a 2-rank job whose rank 1 is kept from its core once it trains: its
        training thread shares core 1 with three busy loops, at nice 5 (a third of their
        weight: beside other tests on the machine it stays the starved one), and everything
        else of the job (rank 0, rank 1's other threads, the collector) runs on core 0."""
        out = os.path.join(tmp, "hogged.ddprun")
        if os.path.exists(out):
            os.remove(out)
        tag = "why-cpu-%d-%s" % (os.getpid(), kind)
        job = subprocess.Popen(why_cases.job_command(CLI, out, kind, 2, iters=40),
                               env=dict(os.environ, DDPSCOPE_TEST_TAG=tag, **why_cases.MPI_AS_ROOT),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        hogs, said = [], []
        try:
            # After its first iteration every thread of a rank has started.
            for line in job.stdout:
                said.append(line)
                if re.match(r"iter 1\b", line):
                    break
            ranks = why_cases.ranks_tagged(tag, 2, timeout=60)
            for pid in ranks.values():
                why_cases.pin_every_thread(pid, {0})
            os.sched_setaffinity(ranks[1], {1})  # its main thread: the one that trains
            os.setpriority(os.PRIO_PROCESS, ranks[1], 5)  # that thread only (Linux)
            hogs = [subprocess.Popen([why_cases.PYTHON, "-c", "while True: pass"],
                                     preexec_fn=lambda: os.sched_setaffinity(0, {1})) for _ in range(3)]
            said.append(job.communicate(timeout=300)[0])
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
            if job.poll() is None:
                job.kill()
                job.wait()
        self.assertEqual(job.returncode, 0, "".join(said)[-3000:])
        return why_cases.why(CLI, out)

    def test_a_rank_kept_from_its_core_is_late_for_want_of_a_cpu(self):
        # Rank 1 computes on a sliver of a core (hogged_verdict), so its phases take many times
        # as long, for want of the core, not for more work. The verdict must say so, not name
        # the phase as the cause. On our engine and on an unchanged PyTorch script; a second
        # run when the first names no one (beside the full suite both ranks once waited 18 ms
        # an iteration for a core and took turns).
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("needs two cores")
        for kind in ("engine", "torch"):
            with self.subTest(kind=kind), tempfile.TemporaryDirectory() as tmp:
                verdict = self.hogged_verdict(kind, tmp)
                if verdict["straggler"] is None:
                    verdict = self.hogged_verdict(kind, tmp)
                s = verdict["straggler"] or {}
                self.assertEqual(s.get("rank"), 1, verdict["verdict"])
                self.assertTrue(s["for_want_of_cpu"], verdict)
                self.assertGreater(s["cpu_wait_ms"], s["extra_ms_per_iteration"] / 2, verdict)
                self.assertIn(" It is late for want of a CPU: its threads waited for a core ", verdict["verdict"])
                self.assertNotIn("input loading", verdict["verdict"])
                waits = {w["rank"]: w["wait_ms_per_iteration"] for w in verdict["waits"]}
                self.assertGreater(waits[0], 3 * waits[1], verdict)  # rank 0 waits for it

    @unittest.skipUnless(os.environ.get("DDPSCOPE_WHY_ALONE") == "1",
                         "run alone by CTest's test_why_what_if (DDPSCOPE_WHY_ALONE=1)")
    def test_what_if_is_near_a_run_without_the_slowdown(self):
        # Slow and healthy runs in turn, twice, of a model wide enough that an iteration takes
        # over 10 ms: the machine's load changes between runs. Alone (RUN_SERIAL): beside three
        # other tests on two cores the healthy re-runs took 50-56 ms against a what-if of 24-34
        # ms, since the slow rank's sleep frees a core the re-run's two ranks then share with
        # the other tests. The benchmark reports the error on a quiet machine.
        with tempfile.TemporaryDirectory() as tmp:
            predicted, healthy = [], []
            for attempt in range(2):
                slow = why_cases.verdict_of(CLI, tmp, why_cases.Case("engine", 2, 1, "forward", 20, width=512))
                predicted.append(slow["what_if_ms"])
                out = os.path.join(tmp, "healthy%d.ddprun" % attempt)
                why_cases.run_job(CLI, out, "engine", 2, width=512)
                healthy.append(why_cases.why(CLI, out)["iteration_ms"])
            error = abs(sum(predicted) - sum(healthy)) / sum(healthy)
            self.assertLess(error, 0.35, "what-if %s ms, re-runs %s ms" % (predicted, healthy))

    def test_a_stall_is_named_with_its_iteration_and_left_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "stall.ddprun")
            # Both ranks on one core, as the healthy runs: on two cores shared with the
            # collector and the launcher, iterations of 1.5 ms had one rank 1 ms later outside
            # the step in 19 of 27 (a straggler the stall test does not ask about), 1 run in 3.
            done = subprocess.run(["taskset", "-c", "0", CLI, "train", "--np", "2", "--iters", "30", "--progress",
                                   "lines", "--out", out, "--inject-stall", "1:10:2"],
                                  env=dict(os.environ, **why_cases.MPI_AS_ROOT), capture_output=True, text=True,
                                  timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            verdict = why_cases.why(CLI, out)
            self.assertEqual(len(verdict["stalls"]), 1, verdict)
            stall = verdict["stalls"][0]
            self.assertEqual((stall["iteration"], stall["rank"], stall["waiting_rank"]), (10, 1, 0), verdict)
            self.assertGreater(stall["lost_ms"], 1800, verdict)
            self.assertIn("allreduce #", stall["waited_in"])
            self.assertEqual(verdict["iterations"], 27, verdict)  # 2..29 but 10
            self.assertIsNone(verdict["straggler"], verdict)  # one stall is not a slow rank
            text = subprocess.run([CLI, "why", out], capture_output=True, text=True, check=True).stdout
            self.assertRegex(text, r"\nStall: iteration 10: rank 1 stalled [12]\.\d s \([a-z_]+\); rank 0 waited in "
                                   r"allreduce #\d+\. Left out of the means\.\n")
            # `stats` names it too and leaves it out of its means (2 s over 28 iterations would
            # add 70 ms to a mean of a fraction of a millisecond).
            stats = json.loads(subprocess.run([CLI, "stats", "--json", out], capture_output=True, text=True,
                                              check=True).stdout)
            self.assertEqual([(s["iteration"], s["rank"]) for s in stats["stalls"]], [(10, 1)], stats["stalls"])
            for row in stats["summary"]:
                self.assertLess(row["mean_iteration_ms"], 20, stats["summary"])
                self.assertEqual(row["iterations"], 28, stats["summary"])
            text = subprocess.run([CLI, "stats", "--summary", out], capture_output=True, text=True, check=True).stdout
            self.assertRegex(text, r"\nStalled \(left out of the means; ddpscope-cli why says more\): iteration 10, "
                                   r"rank 1, [12]\.\d s, rank 0 waited in allreduce #\d+\n")

    def test_a_rank_that_becomes_slow_is_named_within_two_iterations(self):
        # Rank 1 sleeps 30 ms in forward from iteration 150 on, while `why --last 3` reads the
        # growing run (as the Live tab does): once the run holds two slow iterations, the
        # verdict names rank 1 in forward.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "live.ddprun")
            job = subprocess.Popen([CLI, "train", "--np", "2", "--iters", "260", "--width", "256", "--depth", "6",
                                    "--batch", "64", "--bucket-cap-mb", "1", "--progress", "lines", "--out", out,
                                    "--inject-slow", "1:forward:30:150"], env=dict(os.environ, **why_cases.MPI_AS_ROOT),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seen = []  # (the last iteration analysed, the rank named, its phase)
            try:
                while job.poll() is None:
                    done = subprocess.run([CLI, "why", "--last", "3", "--json", out], capture_output=True, text=True)
                    if done.returncode == 0:
                        v = json.loads(done.stdout)
                        s = v["straggler"] or {}
                        if v.get("last_iteration") is not None:
                            seen.append((v["last_iteration"], s.get("rank"), s.get("phase")))
                    time.sleep(0.05)
            finally:
                job.wait(timeout=300)
            self.assertEqual(job.returncode, 0)
            # The verdict as it stood at iteration 151 (150 and 151 slow: two of the last three),
            # read after the job: when the poller reads is up to the machine's load (beside
            # other tests one `why` once took 26 iterations' time), this is not.
            done = subprocess.run([CLI, "why", "--last", "3", "--until", "151", "--json", out], capture_output=True,
                                  text=True, check=True)
            then = json.loads(done.stdout)
            self.assertEqual((then["last_iteration"], (then["straggler"] or {}).get("rank"),
                              (then["straggler"] or {}).get("phase")), (151, 1, "forward"), then["verdict"])
            # And while the job ran, every reading past 151 named rank 1 in forward.
            after = [x for x in seen if x[0] >= 151]
            self.assertTrue(after, "no reading while the job ran after the slowdown began: %s" % seen)
            wrong = [x for x in after if (x[1], x[2]) != (1, "forward")]
            self.assertEqual(wrong, [], "readings after iteration 151 that do not name rank 1 in forward: %s" % seen)
            # The whole run's verdict: rank 1 gated 110 of its 258 iterations, not 2/3 of them, but
            # all of those since 150: the verdict is over them, and says when they began; the
            # iterations before, measured, are faster by about the 30 ms slept (half of it, here).
            done = subprocess.run([CLI, "why", "--json", out], capture_output=True, text=True, check=True)
            whole = json.loads(done.stdout)
            self.assertEqual(((whole["straggler"] or {}).get("rank"), (whole["straggler"] or {}).get("phase")),
                             (1, "forward"), whole["verdict"])
            spell = whole["spell"] or {}
            # The onset, within two iterations (an iteration before 150 that rank 1 gated by much,
            # beside other tests, would join the stretch).
            self.assertTrue(148 <= (spell.get("first_iteration") or 0) <= 151, whole["verdict"])
            self.assertTrue(spell.get("to_the_end"), whole["verdict"])
            self.assertLess(spell["other_iterations_ms"], whole["iteration_ms"] - 15, whole["verdict"])
            self.assertRegex(whole["verdict"], r"^From iteration 1(4[89]|5[01]) on \(\d+ of the \d+ iterations\), rank 1 ")

    def test_runs_without_a_verdict_say_why(self):
        with tempfile.TemporaryDirectory() as tmp:
            one = os.path.join(tmp, "one.ddprun")
            why_cases.run_job(CLI, one, "engine", 1)
            done = subprocess.run([CLI, "why", one], capture_output=True, text=True)
            self.assertEqual((done.returncode, done.stdout),
                             (0, "No verdict: the run has one rank: no rank waits for another.\n"))
            not_a_run = os.path.join(tmp, "notes.txt")
            with open(not_a_run, "w") as f:
                f.write("not a run\n")
            done = subprocess.run([CLI, "why", not_a_run], capture_output=True, text=True)
            self.assertEqual(done.returncode, 2, done.stdout)
            self.assertIn(not_a_run, done.stderr)


if __name__ == "__main__":
    unittest.main()
