#!/usr/bin/python3
"""The probes' C interface, loaded as PyTorch's instrumentation loads it (ctypes), shipping
to a real ddpscope-collector that writes a real run file.

Usage: test_probes_c_api.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collector_process import Collector  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probes", "python"))
from ddpscope._probes import Probes  # noqa: E402

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else "build"
LIB = os.path.join(BUILD, "lib", "libddpscope_probes_c.so")
BIN = os.path.join(BUILD, "bin")


def load():
    """The library with its signatures declared, as the PyTorch package loads it."""
    return Probes(LIB)._lib


def cli_json(*args):
    out = subprocess.run([os.path.join(BIN, "ddpscope-cli"), *args], check=True, capture_output=True, text=True)
    return out.stdout


class CApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = load()

    def setUp(self):
        for k in ("DDPSCOPE_COLLECTOR", "DDPSCOPE_COLLECTOR_CLOCK", "DDPSCOPE_RUN_TOKEN"):
            os.environ.pop(k, None)

    def test_without_the_launcher_nothing_is_recorded(self):
        lib = self.lib
        self.assertEqual(lib.ddpscope_start(0, b"cpu"), 0)
        self.assertEqual(lib.ddpscope_enabled(), 0)
        t = lib.ddpscope_now_ns()
        self.assertEqual(lib.ddpscope_event(lib.ddpscope_kind(b"forward"), b"forward", t, t + 5, -1, -1, -1, -1,
                                            -1, -1, -1), 0)
        self.assertEqual(lib.ddpscope_stop(), -1)
        self.assertIn(b"no ddpscope session", lib.ddpscope_last_error())

    def test_bad_calls_say_what_is_wrong(self):
        lib = self.lib
        self.assertEqual(lib.ddpscope_kind(b"no such kind"), -1)
        self.assertEqual(lib.ddpscope_event(99, b"x", 0, 1, -1, -1, -1, -1, -1, -1, -1), -1)
        self.assertIn(b"kind 99", lib.ddpscope_last_error())
        self.assertEqual(lib.ddpscope_event(1, b"backwards", 10, 5, -1, -1, -1, -1, -1, -1, -1), -1)
        self.assertIn(b"ends before it begins", lib.ddpscope_last_error())
        self.assertEqual(lib.ddpscope_event(1, None, 0, 1, -1, -1, -1, -1, -1, -1, -1), -1)
        self.assertEqual(lib.ddpscope_record(b"{not json"), -1)
        self.assertIn(b"not JSON", lib.ddpscope_last_error())
        self.assertEqual(lib.ddpscope_record(b'{"value": 1}'), -1)
        self.assertIn(b'"type"', lib.ddpscope_last_error())
        self.assertEqual(lib.ddpscope_start(-3, b"cpu"), -1)
        os.environ["DDPSCOPE_COLLECTOR"] = "tcp://127.0.0.1:1"
        self.assertEqual(lib.ddpscope_start(0, b"cpu"), -1)  # no clock endpoint: the launcher's job
        self.assertIn(b"DDPSCOPE_COLLECTOR_CLOCK", lib.ddpscope_last_error())

    def test_events_and_records_reach_the_run_file(self):
        lib = self.lib
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "c_api.ddprun")
            collector = Collector(BIN, run)
            os.environ.update(collector.env)
            self.assertEqual(lib.ddpscope_start(0, b"cpu"), 1, lib.ddpscope_last_error())
            self.assertEqual(lib.ddpscope_start(0, b"cpu"), -1)
            self.assertIn(b"already runs", lib.ddpscope_last_error())
            self.assertEqual(lib.ddpscope_enabled(), 1)
            lib.ddpscope_set_thread_name(b"python main")
            kind = {n: lib.ddpscope_kind(n.encode()) for n in ("iteration", "forward", "grad_ready", "allreduce")}
            self.assertTrue(all(k >= 0 for k in kind.values()), kind)
            params = [{"index": i, "name": "layer%d.weight" % i, "shape": [4, 4], "dtype": "f32", "bucket": 0,
                       "offset": 16 * i} for i in range(3)]
            self.assertEqual(lib.ddpscope_record(json.dumps({
                "type": "buckets", "generation": 0, "buckets": [{"bucket": 0, "bytes": 192, "params": [2, 1, 0]}],
                "params": params}).encode()), 0)
            for it in range(1, 4):
                lib.ddpscope_set_iteration(it)
                t0 = lib.ddpscope_now_ns()
                lib.ddpscope_event(kind["forward"], b"forward", t0, t0 + 1000, -1, -1, -1, -1, -1, -1, -1)
                for p in (2, 1, 0):
                    t = t0 + 2000 + 100 * (2 - p)
                    lib.ddpscope_event(kind["grad_ready"], b"grad_ready", t, t, -1, p, 0, -1, -1, -1, -1)
                lib.ddpscope_event(kind["allreduce"], b"bucket allreduce", t0 + 2300, t0 + 4000, -1, -1, 0, -1, 192,
                                   it, -1)
                lib.ddpscope_event(kind["iteration"], b"iteration", t0, t0 + 5000, it, -1, -1, -1, -1, -1, -1)
                self.assertEqual(lib.ddpscope_record(json.dumps(
                    {"type": "metric", "iteration": it, "name": "loss", "value": 1.0 / it}).encode()), 0)
            self.assertEqual(lib.ddpscope_stop(), 0, "events lost")
            self.assertEqual(collector.finish(), 0)
            stats = json.loads(cli_json("stats", "--json", run))
            self.assertEqual(stats["run"]["status"], "finished")
            self.assertEqual(stats["run"]["spans"], 3 * 6)
            self.assertEqual(stats["ranks"][0]["events_dropped"], 0)
            iterations = [r["iteration"] for r in stats["iterations"]]
            self.assertEqual(iterations, [1, 2, 3])
            self.assertEqual([b["bytes"] for b in stats["buckets"]], [192, 192, 192])
            trace = os.path.join(tmp, "trace.json")
            cli_json("export", run, "--chrome", trace)
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            names = {e.get("name") for e in events}
            self.assertTrue({"forward", "grad_ready", "bucket allreduce", "iteration"} <= names, names)
            threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
            self.assertIn("python main", threads)
            grad = [e for e in events if e.get("name") == "grad_ready"]
            self.assertEqual(sorted({e["args"].get("param") for e in grad}), [0, 1, 2])


if __name__ == "__main__":
    unittest.main(verbosity=2)
