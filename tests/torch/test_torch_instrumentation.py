#!/usr/bin/python3
"""ddpscope's PyTorch instrumentation on a real 2-rank gloo DDP job whose script knows
nothing of ddpscope: the ranks get torchrun's environment and the launcher's (the
package on PYTHONPATH, a real collector), and the run file must hold what DDP really ran.

Usage: test_torch_instrumentation.py BUILD_DIR
"""
import json
import os
import socket
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
SCRIPT = os.path.join(HERE, "ddp_unchanged_script.py")
sys.path.insert(0, os.path.join(SOURCE, "tests", "probes"))
from collector_process import Collector  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(tmp, *script_args, world=2):
    """The job as `ddpscope-cli torchrun` starts it; returns the run file and what each
    rank's script saw."""
    run = os.path.join(tmp, "torch.ddprun")
    counts = os.path.join(tmp, "counts")
    collector = Collector(BIN, run, world_size=world, model="torch script")
    port = str(free_port())
    ranks = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, PYTHONPATH=os.path.join(SOURCE, "probes", "python"),
                   DDPSCOPE_PROBES_LIB=os.path.join(BUILD, "lib", "libddpscope_probes_c.so"), OMP_NUM_THREADS="1",
                   **collector.env)
        ranks.append(subprocess.Popen(["/usr/bin/python3", SCRIPT, "--counts", counts, *script_args], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for r, p in enumerate(ranks):
        out, _ = p.communicate(timeout=300)
        if p.returncode != 0:
            raise AssertionError("rank %d failed (%d):\n%s" % (r, p.returncode, out))
    if collector.finish() != 0:
        raise AssertionError("the collector failed")
    seen = []
    for r in range(world):
        with open("%s.%d" % (counts, r)) as f:
            seen.append(json.load(f))
    return run, seen


def trace_events(tmp, run):
    trace = os.path.join(tmp, "trace.json")
    subprocess.run([os.path.join(BIN, "ddpscope-cli"), "export", run, "--chrome", trace], check=True,
                   capture_output=True)
    with open(trace) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") != "M"]


def stats(run):
    out = subprocess.run([os.path.join(BIN, "ddpscope-cli"), "stats", run], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


class TorchInstrumentationTest(unittest.TestCase):
    def test_buckets_are_the_allreduces_ddp_ran_through_the_users_hook(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, seen = run_job(tmp, "--user-hook")
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

    def test_gradients_ready_inside_backward_and_overlap_per_iteration(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, _ = run_job(tmp)
            events = trace_events(tmp, run)
            backward = {(e["pid"], e["args"]["iteration"]): (e["ts"], e["ts"] + e["dur"])
                        for e in events if e["name"] == "backward"}
            self.assertEqual(len(backward), 2 * 8)
            ready = [e for e in events if e["name"] == "grad_ready"]
            self.assertEqual(len(ready), 2 * 8 * 8)  # ranks x iterations x parameters
            for e in ready:
                begin, end = backward[(e["pid"], e["args"]["iteration"])]
                self.assertTrue(begin <= e["ts"] <= end, e)
            s = stats(run)
            self.assertEqual(s["run"]["status"], "finished")
            per_rank = defaultdict(list)
            for it in s["iterations"]:
                per_rank[it["rank"]].append(it)
            self.assertEqual(sorted(per_rank), [0, 1])
            for rank, its in per_rank.items():
                self.assertEqual([i["iteration"] for i in its], list(range(1, 9)))
                self.assertTrue(all(i["comm_ms"] > 0 and i["overlap_ratio"] is not None for i in its), its)
            db = sqlite3.connect(run)
            names = {n for (n,) in db.execute("SELECT name FROM params WHERE rank = 0")}
            (config,) = db.execute("SELECT config_json FROM runs").fetchone()
            db.close()
            config = json.loads(config)
            self.assertEqual(config["bucket_cap_mb"], 0.25)  # the script's DDP(bucket_cap_mb=0.25)
            self.assertEqual(config["first_bucket_cap_mb"], 1.0)
            self.assertIs(config["find_unused_parameters"], False)
            self.assertIn("module.0.weight", names)
            self.assertEqual(len(names), 8)

    def test_without_the_launcher_the_package_changes_nothing(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "probes", "python"))
        env.pop("DDPSCOPE_COLLECTOR", None)
        out = subprocess.run(["/usr/bin/python3", "-c",
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
            out = subprocess.run(["/usr/bin/python3", "-c", "import os; print(os.environ.get('USER_SITECUSTOMIZE_RAN'))"],
                                 env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, check=True)
            self.assertEqual(out.stdout.strip(), "yes")


if __name__ == "__main__":
    unittest.main(verbosity=2)
