#!/usr/bin/python3
"""ddpscope's PyTorch instrumentation on a real 2-rank gloo DDP job whose script knows
nothing of ddpscope, launched as users launch it: `ddpscope-cli torchrun --np 2 SCRIPT`
(mpirun, torchrun's environment, the package on PYTHONPATH, the job's collector). The run
file must hold what DDP really ran, and the launcher must show the job's progress.

Usage: test_torch_instrumentation.py BUILD_DIR

DDPSCOPE_TEST_PYTHON picks the interpreter (default /usr/bin/python3, Debian's torch 1.13);
DDPSCOPE_TEST_BACKEND=nccl runs the job on NCCL, one rank per GPU (world size: the GPUs,
at most 2), and exits 77 (CTest SKIP) when that torch sees no GPU.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from collections import defaultdict

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(BUILD, "bin")
CLI = os.path.join(BIN, "ddpscope-cli")
SCRIPT = os.path.join(HERE, "ddp_unchanged_script.py")
MPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
PYTHON = os.environ.get("DDPSCOPE_TEST_PYTHON", "/usr/bin/python3")
BACKEND = os.environ.get("DDPSCOPE_TEST_BACKEND", "gloo")


def gpus_seen_by_torch():
    out = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"],
                         capture_output=True, text=True)
    return int(out.stdout.strip() or 0) if out.returncode == 0 else 0


WORLD = 2 if BACKEND == "gloo" else min(gpus_seen_by_torch(), 2)


def backend_args(script):
    """The NCCL variant asks the test's own script for NCCL; other scripts run as they are."""
    return ["--backend", BACKEND] if script == SCRIPT and BACKEND != "gloo" else []


def torchrun(tmp, *script_args, world=WORLD, script=SCRIPT):
    """`ddpscope-cli torchrun` on the script; returns the run file and the finished process.
    script=None: `script_args` hold more launcher options, then the script and its own."""
    run = os.path.join(tmp, "torch.ddprun")
    done = subprocess.run([CLI, "torchrun", "--np", str(world), "--out", run, "--python", PYTHON,
                           "--progress", "lines", *([script] if script else []), *backend_args(script), *script_args],
                          env=dict(os.environ, **MPI_AS_ROOT), capture_output=True, text=True, timeout=300)
    return run, done


def run_job(tmp, *script_args, world=WORLD):
    """A job that must succeed; returns the run file, the launcher's output and what each
    rank's script saw."""
    counts = os.path.join(tmp, "counts")
    run, done = torchrun(tmp, "--counts", counts, *script_args, world=world)
    if done.returncode != 0:
        raise AssertionError("the job failed (%d):\n%s\n%s" % (done.returncode, done.stdout, done.stderr))
    seen = []
    for r in range(world):
        with open("%s.%d" % (counts, r)) as f:
            seen.append(json.load(f))
    return run, done.stdout, seen


def trace_events(tmp, run):
    trace = os.path.join(tmp, "trace.json")
    subprocess.run([os.path.join(BIN, "ddpscope-cli"), "export", run, "--chrome", trace], check=True,
                   capture_output=True)
    with open(trace) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") != "M"]


def stats(run):
    out = subprocess.run([os.path.join(BIN, "ddpscope-cli"), "stats", "--json", run], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


class TorchInstrumentationTest(unittest.TestCase):
    def test_buckets_are_the_allreduces_ddp_ran_through_the_users_hook(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, out, seen = run_job(tmp, "--user-hook")
            # No loss logged: the progress says none rather than a made-up one.
            self.assertRegex(out, r"\niter 8 samples/s [0-9.]+\n")
            self.assertRegex(out, r"\ndone: 8 iterations in [0-9.]+s, [0-9.]+ samples/s\n")
            events = trace_events(tmp, run)
            recorded = defaultdict(list)  # (rank, iteration) -> bucket bytes
            for e in events:
                if e["name"] == "bucket allreduce":
                    recorded[(e["pid"], e["args"]["iteration"])].append(e["args"]["bytes"])
            for rank, s in enumerate(seen):
                self.assertTrue(s["replicas_equal"], "the user's hook must still average the gradients")
                self.assertEqual(len(s["buckets"]), 8)
                for it, sizes in s["buckets"].items():
                    self.assertEqual(sorted(recorded[(rank, int(it))]), sorted(sizes), (rank, it))
                # 4 layers of 1 MiB weights, 0.25 MiB buckets (the first 1 MiB): several per iteration.
                self.assertGreaterEqual(len(s["buckets"]["2"]), 3)

    def test_each_track_is_named_by_what_runs_on_it(self):
        """The training thread is "compute"; the backend's callback threads are named after
        it and numbered, so no two of a rank's tracks read the same; the run names the
        backend (gloo), not just "torch"."""
        with tempfile.TemporaryDirectory() as tmp:
            run, _, _ = run_job(tmp)
            db = sqlite3.connect(run)
            self.assertEqual(db.execute("SELECT backend FROM runs").fetchone()[0], BACKEND)
            for rank in range(WORLD):
                names = [n for (n,) in db.execute("SELECT name FROM threads WHERE rank = ? ORDER BY thread", (rank,))]
                self.assertEqual(names[0], "compute", names)
                self.assertEqual(len(names), len(set(names)), "two tracks with one name: %s" % names)
                callbacks = sorted(n for n in names if n.startswith("comm: %s callbacks" % BACKEND))
                if BACKEND == "gloo":
                    self.assertGreaterEqual(len(callbacks), 1, names)
                    self.assertEqual(callbacks[0], "comm: gloo callbacks", names)
                    for k, n in enumerate(callbacks[1:], start=2):
                        self.assertEqual(n, "comm: gloo callbacks %d" % k, names)
            db.close()

    def test_a_callback_run_on_the_training_thread_does_not_rename_it(self):
        """gloo may complete a bucket's future inline, on the thread that launched it: the
        callback must not rename the rank's main track."""
        code = ("import sys; sys.path.insert(0, %r)\n"
                "from ddpscope._session import Session\n"
                "class Probes:\n"
                "    names = []\n"
                "    def set_thread_name(self, n): self.names.append(n)\n"
                "p = Probes(); s = Session(p, 0)\n"
                "s.name_callback_thread('comm: gloo callbacks')\n"
                "import threading\n"
                "t = [threading.Thread(target=s.name_callback_thread, args=('comm: gloo callbacks',)) for _ in range(2)]\n"
                "[x.start() for x in t]; [x.join() for x in t]\n"
                "print(p.names)\n" % os.path.join(SOURCE, "probes", "python"))
        out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "['compute', 'comm: gloo callbacks', 'comm: gloo callbacks 2']")

    def test_gradients_ready_inside_backward_and_overlap_per_iteration(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, out, _ = run_job(tmp, "--log-loss")
            # The launcher's progress, from what rank 0's instrumentation reports.
            self.assertIn("training Sequential (1.1M parameters) under DDP on %d rank%s (%s backend)"
                          % (WORLD, "s" if WORLD > 1 else "", BACKEND), out)
            self.assertRegex(out, r"iter 8 loss [0-9.]+ samples/s [0-9.]+")
            self.assertRegex(out, r"done: 8 iterations in [0-9.]+s, final loss [0-9.]+")
            events = trace_events(tmp, run)
            backward = {(e["pid"], e["args"]["iteration"]): (e["ts"], e["ts"] + e["dur"])
                        for e in events if e["name"] == "backward"}
            self.assertEqual(len(backward), WORLD * 8)
            # The script's own all_gather after its loop: one collective of the group, numbered
            # after DDP's bucket allreduces (one counter per group), the same on both ranks.
            gathers = {e["pid"]: e["args"]["seq"] for e in events if e["name"] == "all_gather" and e["cat"] == "pg_op"}
            last_bucket = max(e["args"]["seq"] for e in events if e["name"] == "allreduce" and e["cat"] == "pg_op")
            self.assertEqual(gathers, {r: last_bucket + 1 for r in range(WORLD)})
            ready = [e for e in events if e["name"] == "grad_ready"]
            self.assertEqual(len(ready), WORLD * 8 * 8)  # ranks x iterations x parameters
            for e in ready:
                begin, end = backward[(e["pid"], e["args"]["iteration"])]
                self.assertTrue(begin <= e["ts"] <= end, e)
            s = stats(run)
            self.assertEqual(s["run"]["status"], "finished")
            per_rank = defaultdict(list)
            for it in s["iterations"]:
                per_rank[it["rank"]].append(it)
            self.assertEqual(sorted(per_rank), list(range(WORLD)))
            for rank, its in per_rank.items():
                self.assertEqual([i["iteration"] for i in its], list(range(1, 9)))
                self.assertTrue(all(i["comm_ms"] > 0 and i["overlap_ratio"] is not None for i in its), its)
            db = sqlite3.connect(run)
            names = {n for (n,) in db.execute("SELECT name FROM params WHERE rank = 0")}
            losses = db.execute("SELECT COUNT(*) FROM metrics WHERE name = 'loss'").fetchone()[0]
            self.assertEqual(losses, WORLD * 8)  # ddpscope.log(loss=...) on each rank, each iteration
            (config,) = db.execute("SELECT config_json FROM runs").fetchone()
            db.close()
            config = json.loads(config)
            self.assertEqual(config["bucket_cap_mb"], 0.25)  # the script's DDP(bucket_cap_mb=0.25)
            self.assertEqual(config["first_bucket_cap_mb"], 1.0)
            self.assertIs(config["find_unused_parameters"], False)
            self.assertIn("module.0.weight", names)
            self.assertEqual(len(names), 8)
            # The bucket advice in DDP's own arguments, not in ddpscope's trainer's flags, which a
            # PyTorch user has no use for (issue 68).
            advice = subprocess.run([os.path.join(BIN, "ddpscope-cli"), "advise", run], capture_output=True,
                                    text=True, check=True).stdout
            self.assertRegex(advice, r"best cap: [0-9.]+ MiB \(DistributedDataParallel\(\.\.\., bucket_cap_mb=[0-9.]+\)\)")
            self.assertRegex(advice, r"best cap with the optimizer stepped per bucket: [0-9.]+ MiB \(bucket_cap_mb=")
            for flag in ("train --", "--fused-optimizer", "--measure-allreduce"):
                self.assertNotIn(flag, advice)

    @unittest.skipUnless(BACKEND == "nccl", "NCCL only: gloo's collectives end on the host")
    def test_nccl_bucket_allreduces_end_when_the_gpu_ran_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            # 20M cycles (10 ms at 2 GHz) of GPU work before each bucket's allreduce: the host
            # queues the allreduce at once, the GPU runs it after the sleep.
            run, _, seen = run_job(tmp, "--user-hook", "--gpu-sleep-cycles", "20000000")
            trace = os.path.join(tmp, "trace.json")
            subprocess.run([CLI, "export", run, "--chrome", trace], check=True, capture_output=True)
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
            buckets = [e for e in events if e.get("name") == "bucket allreduce"]
            self.assertEqual(len(buckets), sum(len(s["buckets"][it]) for s in seen for it in s["buckets"]))
            for e in buckets:
                self.assertGreaterEqual(e["dur"], 5000, e)  # us: the sleep, not the ~0.2 ms of queueing
                self.assertEqual(lanes[(e["pid"], e["tid"])], "comm: GPU completions", e)
            db = sqlite3.connect(run)
            devices = [d for (d,) in db.execute("SELECT device FROM ranks ORDER BY rank")]
            db.close()
            self.assertEqual(devices, ["cuda"] * WORLD)

    def test_links_measured_when_asked(self):
        # torchrun --measure-links: after init_process_group each rank times the other, both
        # ways, 3 exchanges each, as the engine's train --measure-links does.
        if WORLD < 2:  # NCCL on a machine whose torch sees one GPU: no pair to time
            self.skipTest(f"links need two ranks; {BACKEND} runs {WORLD} here")
        with tempfile.TemporaryDirectory() as tmp:
            run, done = torchrun(tmp, "--measure-links", SCRIPT, *backend_args(SCRIPT), "--iters", "4", script=None)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            out = subprocess.run([CLI, "links", run, "--json"], check=True, capture_output=True, text=True).stdout
            report = json.loads(out)
            self.assertTrue(report["measured"], report)
            pairs = {(l["src"], l["dst"]): l for l in report["links"]}
            self.assertEqual(sorted(pairs), [(0, 1), (1, 0)])
            for pair, link in pairs.items():
                self.assertEqual(link["tests"], 3, pair)
                self.assertGreater(link["measured_gbps"], 0, pair)
                self.assertGreaterEqual(link["measured_bytes"], 1 << 20, pair)
            self.assertGreater(report["ring_ceiling_gbps"], 0)
            # The job's own steps are there after it.
            self.assertEqual(len(stats(run)["iterations"]), 4 * WORLD)

    def test_without_the_launcher_the_package_changes_nothing(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "probes", "python"))
        env.pop("DDPSCOPE_COLLECTOR", None)
        out = subprocess.run([PYTHON, "-c",
                              "import torch, ddpscope, sys; from torch.nn.parallel import DistributedDataParallel as D;"
                              "ddpscope.log(loss=1.0); print(ddpscope.enabled(), hasattr(D.__init__, '__wrapped__'),"
                              " 'ddpscope._activate' in sys.modules)"],
                             env=env, capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.split(), ["False", "False", "False"])

    def test_a_sitecustomize_of_the_users_still_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
                f.write("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = 'yes'\n")
            path = os.pathsep.join([os.path.join(SOURCE, "probes", "python"), tmp])
            out = subprocess.run([PYTHON, "-c", "import os; print(os.environ.get('USER_SITECUSTOMIZE_RAN'))"],
                                 env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, check=True)
            self.assertEqual(out.stdout.strip(), "yes")


if __name__ == "__main__":
    if WORLD == 0:
        print("SKIP: %s's torch sees no GPU for the NCCL backend" % PYTHON)
        sys.exit(77)
    unittest.main(verbosity=2)
