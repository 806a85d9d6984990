#!/usr/bin/python3
"""A PyTorch job started by a launcher that is not ddpscope's, followed through
`ddpscope-cli collect`: a plain shell loop starts an unchanged 2-rank gloo DDP script with
the prefix collect printed, its ranks numbered in torchrun's words, then in Slurm's only,
then in Open MPI's only. Each run file must hold both ranks, numbered as the loop numbered
them, with the bucket allreduces the script's own comm hook counted, the launcher named,
and the world's size; a rank with the wrong token is refused and counted; --expect ends
the collection when the ranks have ended and names those that never came; a collector
killed mid-job leaves the job running to its end, each rank saying once what was lost.

Usage: test_foreign_launcher.py BUILD_DIR"""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
from collections import defaultdict

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.path.join(BUILD, "bin", "ddpscope-cli")
SCRIPT = os.path.join(HERE, "ddp_unchanged_script.py")
PYTHON = "/usr/bin/python3"


class Collect:
    """`ddpscope-cli collect --out RUN` running; env: what it printed for the job."""

    def __init__(self, run, *options, env=None):
        self.proc = subprocess.Popen([CLI, "collect", "--out", run, *options], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.env, self.prefix, self.printed = {}, None, []
        for line in self.proc.stdout:
            self.printed.append(line)
            m = re.match(r"\s+export (\w+)=(.*)$", line)
            if m:
                self.env[m.group(1)] = m.group(2)
            if line.strip().startswith("env DDPSCOPE_COLLECTOR="):
                self.prefix = line.strip()
            if line.startswith(("Ctrl-C", "Waiting for")):
                break

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, "".join(self.printed) + out, err

    def wait(self):
        """Its end without being asked (--expect)."""
        out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, "".join(self.printed) + out, err


def launcher_variables(launcher, rank, world, port):
    common = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    if launcher == "torchrun":
        return dict(common, RANK=str(rank), LOCAL_RANK=str(rank), GROUP_RANK="0", WORLD_SIZE=str(world))
    if launcher == "slurm":
        return dict(common, SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank), SLURM_NODEID="0",
                    SLURM_NTASKS=str(world))
    return dict(common, OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_RANK=str(rank),
                OMPI_COMM_WORLD_SIZE=str(world))


def shell_loop(tmp, prefix, launcher, port, counts, world=2, iters=4, background=False, extra=None,
               script_args=""):
    """What a site's own wrapper does: one process per rank, the prefix before each."""
    lines = ["set -e", "pids="]
    for r in range(world):
        variables = dict(launcher_variables(launcher, r, world, port), **(extra or {}))
        assignments = " ".join("%s=%s" % kv for kv in variables.items())
        lines.append("%s %s %s %s --user-hook --iters %d --counts %s --rank-from %s %s & pids=\"$pids $!\"" %
                     (prefix, assignments, PYTHON, SCRIPT, iters, counts, launcher, script_args))
    lines.append("for p in $pids; do wait $p; done")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "WORLD", "SLURM", "OMPI", "PMI"))}
    if background:
        return subprocess.Popen(["/bin/sh", "-c", "\n".join(lines)], cwd=tmp, env=clean, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(["/bin/sh", "-c", "\n".join(lines)], cwd=tmp, env=clean, capture_output=True, text=True,
                          timeout=300)


class ForeignLauncherTest(unittest.TestCase):
    def follow(self, launcher, port):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            collect = Collect(run)
            self.assertIsNotNone(collect.prefix, "".join(collect.printed))
            for name in ("DDPSCOPE_COLLECTOR", "DDPSCOPE_COLLECTOR_CLOCK", "DDPSCOPE_RUN_TOKEN", "PYTHONPATH",
                         "DDPSCOPE_PROBES_LIB"):
                self.assertIn(name, collect.env)
            counts = os.path.join(tmp, "counts")
            job = shell_loop(tmp, collect.prefix, launcher, port, counts)
            code, out, err = collect.stop()
            self.assertEqual(job.returncode, 0, job.stdout + job.stderr)
            self.assertEqual(code, 0, out + err)
            self.assertRegex(out, r"Stored \d+ batches in .*job\.ddprun \(0 refused")
            db = sqlite3.connect(run)
            world, config = db.execute("SELECT world_size, config_json FROM runs").fetchone()
            self.assertEqual(world, 2)
            self.assertEqual(json.loads(config)["launcher"], launcher)
            # Each rank's place as its launcher said it (Open MPI names no node), one attempt each.
            places = db.execute("SELECT rank, local_rank, node FROM ranks ORDER BY rank").fetchall()
            node = None if launcher == "openmpi" else 0
            self.assertEqual(places, [(0, 0, node), (1, 1, node)])
            attempts = db.execute("SELECT rank, attempt, host, launcher, outcome, first_iteration FROM attempts "
                                  "ORDER BY rank").fetchall()
            host = os.uname().nodename
            self.assertEqual(attempts, [(0, 0, host, launcher, "ended", 1), (1, 0, host, launcher, "ended", 1)])
            # The bucket allreduces each rank's own hook counted, by the rank the loop gave it.
            trace = os.path.join(tmp, "trace.json")
            subprocess.run([CLI, "export", run, "--chrome", trace], check=True, capture_output=True)
            with open(trace) as f:
                events = [e for e in json.load(f)["traceEvents"] if e.get("name") == "bucket allreduce"]
            recorded = defaultdict(list)
            for e in events:
                recorded[(e["pid"], e["args"]["iteration"])].append(e["args"]["bytes"])
            for rank in range(2):
                with open("%s.%d" % (counts, rank)) as f:
                    seen = json.load(f)
                self.assertEqual(len(seen["buckets"]), 4)
                for it, sizes in seen["buckets"].items():
                    self.assertEqual(sorted(recorded[(rank, int(it))]), sorted(sizes), (launcher, rank, it))

    def test_torchrun_variables(self):
        self.follow("torchrun", 29631)

    def test_slurm_variables_only(self):
        self.follow("slurm", 29632)

    def test_open_mpi_variables_only(self):
        self.follow("openmpi", 29633)

    def test_a_rank_with_the_wrong_token_is_refused_and_counted(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            collect = Collect(run)
            prefix = re.sub(r"DDPSCOPE_RUN_TOKEN='[^']*'", "DDPSCOPE_RUN_TOKEN='guessed'", collect.prefix)
            job = shell_loop(tmp, prefix, "torchrun", 29634, os.path.join(tmp, "counts"))
            code, out, err = collect.stop()
            self.assertEqual(job.returncode, 0, job.stdout + job.stderr)  # the job itself is untouched
            m = re.search(r"Stored (\d+) batches in .* \((\d+) refused", out)
            self.assertIsNotNone(m, out)
            self.assertEqual(m.group(1), "0")
            self.assertGreater(int(m.group(2)), 0)


    def test_follow_without_a_display_says_so_and_collects_on(self):
        """--follow on a machine with no display: a warning, and the collection goes on; the
        app's lines (--progress json) carry the same environment as the text."""
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
            collect = Collect(run, "--follow", "--progress", "json", "--expect", "2", env=env)
            said = [json.loads(l.split(" ", 1)[1]) for l in collect.printed if l.startswith("@ddpscope ")]
            self.assertEqual(said[0]["event"], "collect")
            self.assertEqual(said[0]["run"], os.path.realpath(run))
            self.assertEqual(said[0]["prefix"], collect.prefix)
            self.assertIn("export DDPSCOPE_RUN_TOKEN=%s" % collect.env["DDPSCOPE_RUN_TOKEN"], said[0]["exports"])
            job = shell_loop(tmp, collect.prefix, "torchrun", 29641, os.path.join(tmp, "counts"))
            code, out, err = collect.wait()
            self.assertEqual(job.returncode, 0, job.stdout + job.stderr)
            self.assertEqual(code, 0, out + err)
            self.assertIn("--follow: no display (DISPLAY is not set)", err)
            self.assertIn('@ddpscope {"ended":2,"event":"ranks","joined":2}', out)

    def test_expected_ranks_end_the_collection(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            collect = Collect(run, "--expect", "2")
            job = shell_loop(tmp, collect.prefix, "torchrun", 29635, os.path.join(tmp, "counts"))
            code, out, err = collect.wait()  # no Ctrl-C: both ranks ended
            self.assertEqual(job.returncode, 0, job.stdout + job.stderr)
            self.assertEqual(code, 0, out + err)
            self.assertIn("ranks: 2 joined, 2 ended", out)
            status, message = sqlite3.connect(run).execute("SELECT status, message FROM runs").fetchone()
            self.assertEqual((status, message or ""), ("finished", ""))

    def test_ranks_that_never_came_are_said(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            collect = Collect(run, "--expect", "3")
            job = shell_loop(tmp, collect.prefix, "torchrun", 29636, os.path.join(tmp, "counts"))
            code, out, err = collect.stop()
            self.assertEqual(job.returncode, 0, job.stdout + job.stderr)
            self.assertIn("expected 3 ranks; rank 2 never came", out)
            message = sqlite3.connect(run).execute("SELECT message FROM runs").fetchone()[0]
            self.assertIn("rank 2 never came", message)
            hang = subprocess.run([CLI, "hang", run], capture_output=True, text=True)
            self.assertIn("rank 2 of 3 never joined", hang.stdout, hang.stdout + hang.stderr)

    def test_a_collector_gone_mid_job_never_stops_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            collect = Collect(run)
            job = shell_loop(tmp, collect.prefix, "torchrun", 29637, os.path.join(tmp, "counts"), iters=60,
                             background=True)
            for line in collect.proc.stdout:
                if "2 joined" in line:
                    break
            collect.proc.kill()  # SIGKILL: no goodbye
            collect.proc.communicate()
            out, err = job.communicate(timeout=300)
            self.assertEqual(job.returncode, 0, out + err)  # the job's own exit code
            for rank in range(2):
                with open(os.path.join(tmp, "counts.%d" % rank)) as f:
                    self.assertEqual(len(json.load(f)["buckets"]), 60)  # it trained to the end
                said = [l for l in err.splitlines() if l.startswith("ddpscope: rank %d:" % rank)]
                self.assertEqual(len(said), 1, err)  # the loss said once
                self.assertIn("events were not stored", said[0])


    def test_a_restart_is_waited_for(self):
        """torchrun's elastic restart: the first attempt fails (rank 1 raises, rank 0 loses
        its peer) with a restart left, so --expect waits for the second attempt's ends."""
        self.restart("raise", 29638)

    def test_a_restart_after_sys_exit_is_waited_for(self):
        """The same when rank 1 ends its first attempt with sys.exit("...") (status 1)."""
        self.restart("exit", 29640)

    def restart(self, fail_by, port):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "job.ddprun")
            collect = Collect(run, "--expect", "2")
            failing = shell_loop(tmp, collect.prefix, "torchrun", port, os.path.join(tmp, "counts"),
                                 extra={"TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "1"},
                                 script_args="--fail-first-attempt-at 2 --timeout 30 --fail-by " + fail_by)
            self.assertNotEqual(failing.returncode, 0)
            time.sleep(1.5)  # the first attempt's last batches are in
            self.assertIsNone(collect.proc.poll(), "collect stopped after the failed first attempt")
            second = shell_loop(tmp, collect.prefix, "torchrun", port + 10, os.path.join(tmp, "counts"),
                                extra={"TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_MAX_RESTARTS": "1"},
                                script_args="--fail-first-attempt-at 2")
            self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
            code, out, err = collect.wait()
            self.assertEqual(code, 0, out + err)
            self.assertIn("ranks: 2 joined, 2 ended", out)
            # Two attempts in the one run: the first failed on rank 1 (rank 0 then lost its
            # peer), and the second's iterations follow the first's.
            db = sqlite3.connect(run)
            rows = db.execute("SELECT rank, attempt, outcome, first_iteration FROM attempts ORDER BY attempt, rank")
            rows = rows.fetchall()
            self.assertEqual([r[:3] for r in rows], [(0, 0, "failed"), (1, 0, "failed"), (0, 1, "ended"),
                                                     (1, 1, "ended")])
            first = rows[2][3]
            self.assertGreaterEqual(first, 2)  # the first attempt reached its iteration 2 at least
            hang = subprocess.run([CLI, "hang", run], capture_output=True, text=True).stdout
            self.assertIn("the job ran 2 attempts (torchrun restarted it 1 time): attempt 1 ended when rank 1 "
                          "failed (then rank 0); attempt 2's iterations are numbered from %d" % first, hang)
            trace = os.path.join(tmp, "trace.json")
            subprocess.run([CLI, "export", run, "--chrome", trace], check=True, capture_output=True)
            with open(trace) as f:
                iterations = {(e["pid"], e["args"]["iteration"]) for e in json.load(f)["traceEvents"]
                              if e.get("name") == "bucket allreduce"}
            for rank in range(2):  # 4 iterations of the second attempt, after the first's
                self.assertTrue({(rank, first + i) for i in range(4)} <= iterations, sorted(iterations))


if __name__ == "__main__":
    unittest.main()
