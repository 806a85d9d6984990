#!/usr/bin/python3
"""The PyTorch package reads a few things of torch beyond its public API
(probes/python/ddpscope/_torch_api.py). A torch without one of them must still run the
user's script unchanged: the job ends as it would, the run holds what can still be
recorded, and stderr says once what is missing and what is lost. Each is removed in turn
by a sitecustomize of the test's, which the package runs before it instruments torch, as
it runs a user's own; an untested torch version is said the same way.

Usage: test_torch_private_api.py BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_instrumentation as harness  # noqa: E402  (BUILD_DIR is taken from argv)

# How the test's sitecustomize makes each missing while torch itself keeps working: as a
# torch that renamed it would, its own register_comm_hook uses the new name.
_RENAMED_REGISTER = ("from torch.nn.parallel import DistributedDataParallel as D\n"
                     "import torch.distributed as dist\n"
                     "def register_comm_hook(self, state, hook):\n"
                     "    (getattr(self, 'renamed_check', None) or self._check_comm_hook)(hook)\n"
                     "    logger = self.logger\n"
                     "    (getattr(logger, 'renamed_name', None) or logger._set_comm_hook_name)(hook.__qualname__)\n"
                     "    dist._register_comm_hook(self.reducer, state, hook)\n"
                     "D.register_comm_hook = register_comm_hook\n")
HIDE = {
    "check_comm_hook": _RENAMED_REGISTER + "D.renamed_check = D._check_comm_hook\ndel D._check_comm_hook\n",
    "name_comm_hook": _RENAMED_REGISTER + "L = torch._C._distributed_c10d.Logger\n"
                                          "L.renamed_name = L._set_comm_hook_name\ndelattr(L, '_set_comm_hook_name')\n",
    # The engine stays (backward runs through it); only queue_callback is gone.
    "queue_callback": ("class _Engine:\n"
                       "    def __init__(self, engine): self._engine = engine\n"
                       "    def __getattr__(self, name):\n"
                       "        if name == 'queue_callback': raise AttributeError(name)\n"
                       "        return getattr(self._engine, name)\n"
                       "torch.autograd.Variable._execution_engine = _Engine(torch.autograd.Variable._execution_engine)\n"),
    "version": "torch.__version__ = '3.1.0'\n",
}

WORDS = {
    "check_comm_hook": "DistributedDataParallel._check_comm_hook",
    "name_comm_hook": "_set_comm_hook_name",
    "queue_callback": "queue_callback",
    "version": "tested with torch 1.13 to 2.x; this is 3.1.0",
}


def job_without(tmp, what):
    site = os.path.join(tmp, "site")
    os.makedirs(site)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write("import torch\n" + HIDE[what])
    counts = os.path.join(tmp, "counts")
    run = os.path.join(tmp, "torch.ddprun")
    env = dict(os.environ, PYTHONPATH=site, **harness.MPI_AS_ROOT)
    done = subprocess.run([harness.CLI, "torchrun", "--np", "2", "--out", run, "--python", harness.PYTHON,
                           "--progress", "lines", harness.SCRIPT, "--counts", counts, "--user-hook", "--iters", "4"],
                          env=env, capture_output=True, text=True, timeout=300)
    return run, done, counts


class PrivateApiTest(unittest.TestCase):
    def check_job_runs_without(self, what):
        with tempfile.TemporaryDirectory() as tmp:
            run, done, counts = job_without(tmp, what)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            # Said once per rank, naming what is missing; never a traceback.
            warnings = [line for line in done.stderr.splitlines() if line.startswith("ddpscope: warning:")]
            self.assertEqual(len(warnings), 2, done.stderr)
            self.assertIn(WORDS[what], done.stderr)
            self.assertNotIn("Traceback", done.stderr)
            # The rest is recorded: every bucket allreduce the script's hook counted.
            events = harness.trace_events(tmp, run)
            buckets = [e for e in events if e["name"] == "bucket allreduce"]
            counted = 0
            for r in range(2):
                with open("%s.%d" % (counts, r)) as f:
                    counted += sum(len(sizes) for sizes in harness.json.load(f)["buckets"].values())
            self.assertEqual(len(buckets), counted)
            # Backward still has its spans, one per rank and iteration (without queue_callback,
            # ended when backward() returns).
            backward = [e for e in events if e["name"] == "backward"]
            self.assertEqual(len(backward), 2 * 4, [e["name"] for e in events][:40])

    def test_without_check_comm_hook(self):
        self.check_job_runs_without("check_comm_hook")

    def test_without_set_comm_hook_name(self):
        self.check_job_runs_without("name_comm_hook")

    def test_without_queue_callback(self):
        self.check_job_runs_without("queue_callback")

    def test_an_untested_torch_version_is_said(self):
        self.check_job_runs_without("version")

    def test_group_names_and_first_bucket_cap_fall_back(self):
        # torch itself uses these two module globals, so a job cannot run without them:
        # the package's fallbacks are called directly.
        code = ("import torch.distributed as dist\nfrom ddpscope import _torch_api\n"
                "del dist.distributed_c10d._pg_names\ndel dist._DEFAULT_FIRST_BUCKET_BYTES\n"
                "print(_torch_api.group_name(object()), _torch_api.first_bucket_bytes(), _torch_api.group_name(None))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(harness.SOURCE, "probes", "python"))
        env.pop("DDPSCOPE_COLLECTOR", None)
        out = subprocess.run([harness.PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["?", str(1 << 20), "?"])
        warnings = [line for line in out.stderr.splitlines() if line.startswith("ddpscope: warning:")]
        self.assertEqual(len(warnings), 2, out.stderr)  # once each, not once per call
        self.assertIn("_pg_names", out.stderr)
        self.assertIn("_DEFAULT_FIRST_BUCKET_BYTES", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
