#!/usr/bin/python3
"""`ddpscope-cli torchrun` when a PyTorch job goes wrong: a rank that stops before an
iteration (the verdict and how long the other waited, exactly), a script with no process
group (and arguments the launcher also knows), a script or interpreter that is not there,
an import error. A rank killed or stopped by a signal, a script that raises and a restart
are in the fault suite (tests/faults/torch_faults.py).

Usage: test_torchrun_faults.py BUILD_DIR
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_instrumentation as harness  # noqa: E402  (BUILD_DIR is taken from argv)


def hang_report(run):
    return subprocess.run([harness.CLI, "hang", run], capture_output=True, text=True, check=True).stdout


def run_status(run):
    db = sqlite3.connect(run)
    try:
        return db.execute("SELECT status, message FROM runs").fetchone()
    finally:
        db.close()


class TorchrunFaultTest(unittest.TestCase):
    def test_a_rank_stopped_past_the_collective_timeout_is_named_with_the_collective(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Rank 1 sleeps before iteration 3's forward; rank 0 waits in that iteration's
            # first bucket allreduce until gloo's 5 s timeout raises.
            run, done = harness.torchrun(tmp, "--stall-rank", "1", "--stall-at", "3", "--stall-seconds", "120",
                                         "--timeout", "5")
            self.assertNotEqual(done.returncode, 0, done.stdout)
            # gloo's own words, without torch's wrapping of a callback's error. gloo words its
            # timeout one of two ways, by which of its threads sees it first; when a thread of
            # its own raises it, the process aborts (SIGABRT) and is not the culprit.
            self.assertRegex(done.stderr, r"error: the job failed: rank 0: RuntimeError: (\[[^]]*\] Timed out "
                                          r"waiting 5000ms for recv operation to complete|Application timeout "
                                          r"caused pair closure)\n")
            # Rank 1 finished iteration 2's optimizer step and never started iteration 3.
            self.assertRegex(done.stderr, r"diagnosis: Rank 1 never entered allreduce #\d+, which rank 0 waited in; "
                                          r"rank 1 was in iteration 2 \(after backward\), last event optimizer")
            hang = hang_report(run)
            self.assertRegex(hang, r"Rank 1 never entered allreduce #\d+")
            # How long rank 0 waited: until gloo's timeout, marked when the allreduce failed.
            self.assertRegex(hang, r"rank 0 (waits in allreduce #\d+ \(1 MiB\) since|waited in allreduce #\d+ "
                                   r"\(1 MiB\) for) [5-9](\.\d)? s")
            self.assertEqual(run_status(run)[0], "failed")

    def test_a_script_without_a_process_group_runs_and_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "no_group.py")
            with open(script, "w") as f:
                f.write("import os, sys\nimport torch\nprint('rank', os.environ['RANK'], 'of', "
                        "os.environ['WORLD_SIZE'], 'args', sys.argv[1:])\n"
                        "import time\nend = time.time() + 2\ni = 0\nwhile time.time() < end or i < 100:\n"
                        "    print('rank', os.environ['RANK'], 'says', i, 'in', 7, 'pieces')\n"
                        "    i += 1\n    time.sleep(0.0005)\n"
                        "print('rank', os.environ['RANK'], 'ends with', 'y' * 9000)\n")
            run, done = harness.torchrun(tmp, "--np", "--out", "x", script=script)
            self.assertEqual(done.returncode, 0, done.stderr)
            # The script's own arguments stay the script's, even ones the launcher also has.
            self.assertIn("rank 0 of 2 args ['--np', '--out', 'x']", done.stdout)
            self.assertIn("rank 1 of 2 args", done.stdout)
            # Both ranks print at once; each line still arrives whole (print() writes a line in
            # pieces, and unbuffered pieces from two ranks interleave mid-line).
            said = [line for line in done.stdout.splitlines() if " says " in line]
            self.assertGreaterEqual(len(said), 200, done.stdout[-2000:])
            for line in said:
                self.assertRegex(line, r"^rank [01] says \d+ in 7 pieces$")
            # A line longer than mpirun's 4 KiB chunks arrives whole too.
            ends = [line for line in done.stdout.splitlines() if " ends with " in line]
            self.assertEqual(sorted(line[:6] for line in ends), ["rank 0", "rank 1"], done.stdout[-2000:])
            for line in ends:
                self.assertRegex(line, r"^rank [01] ends with y{9000}$")
            self.assertIn("note: the script ran no DistributedDataParallel forward", done.stdout)
            self.assertEqual(run_status(run)[0], "finished")

    def test_a_missing_script_or_interpreter_is_refused_before_anything_starts(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "never.ddprun")
            missing = subprocess.run([harness.CLI, "torchrun", "--out", out, os.path.join(tmp, "nope.py")],
                                     capture_output=True, text=True, timeout=60)
            self.assertEqual(missing.returncode, 2)
            self.assertIn("the script '%s' does not exist" % os.path.join(tmp, "nope.py"), missing.stderr)
            no_python = subprocess.run([harness.CLI, "torchrun", "--python", "/no/python3", harness.SCRIPT],
                                       capture_output=True, text=True, timeout=60)
            self.assertEqual(no_python.returncode, 2)
            self.assertIn("--python: '/no/python3' is not an interpreter that can be run", no_python.stderr)
            self.assertFalse(os.path.exists(out))

    def test_check_accepts_a_script_or_a_module_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "never.ddprun")
            for target in (["--", harness.SCRIPT, "--iters", "3"], ["-m", "json.tool"]):
                done = subprocess.run([harness.CLI, "torchrun", "--np", "2", "--out", out, "--check", *target],
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual((done.returncode, done.stdout), (0, "ok\n"), done.stderr)
            self.assertFalse(os.path.exists(out))

    def test_a_module_runs_as_python_m_with_the_users_pythonpath(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "my_trainer.py"), "w") as f:
                f.write("import os, sys\nprint('module rank', os.environ['RANK'], 'args', sys.argv[1:])\n")
            done = subprocess.run([harness.CLI, "torchrun", "--np", "2", "--out", os.path.join(tmp, "m.ddprun"),
                                   "-m", "my_trainer", "--lr", "0.1"],
                                  env=dict(os.environ, PYTHONPATH=tmp, **harness.MPI_AS_ROOT), capture_output=True,
                                  text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            for rank in (0, 1):
                self.assertIn("module rank %d args ['--lr', '0.1']" % rank, done.stdout)

    def test_an_import_error_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "needs_torch.py")
            with open(script, "w") as f:
                f.write("import torch_that_is_not_there\n")
            run, done = harness.torchrun(tmp, script=script)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("ModuleNotFoundError: No module named 'torch_that_is_not_there'", done.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
