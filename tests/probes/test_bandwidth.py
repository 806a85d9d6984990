#!/usr/bin/python3
"""Bus bandwidth per collective (issue 67): a 2- and a 4-rank engine job, and each rank's
figures in `stats --json` and each run's in `compare --json` against bytes and times
computed here from the runs' own spans. The 4-rank job also measures its links
(--measure-links): `links --json` against the link_test spans, and the ceiling as stats'
reference.

A rank's transfer in a collective runs from the last rank's arrival to its own end (waiting
for a late rank is not the network's time); a rank arrives when it calls the collective or,
when its previous collective was still running, when that one ended. Bus bandwidth is
bytes / transfer x 2(n-1)/n for an allreduce of n ranks (nccl-tests' factor).

Usage: test_bandwidth.py BUILD_DIR
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
CLI = os.path.join(BUILD, "bin", "ddpscope-cli")
EXTENSION = os.path.join(BUILD, "lib", "libddpscope_sqlite.so")
MIN_BYTES = 64 * 1024
FACTORS = {"allreduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0}  # by the op's first word


def factor_of(op):
    return next((f for name, f in FACTORS.items() if op.startswith(name)), None)


def pg_ops(run_file):
    """Every rank's collectives with a sequence number: {rank: [(name, seq, bytes, begin, end)]} by start."""
    db = sqlite3.connect(f"file:{run_file}?immutable=1", uri=True)
    db.enable_load_extension(True)
    db.load_extension(EXTENSION)
    rows = db.execute("SELECT s.rank, n.name, s.seq, s.bytes, s.t_begin_ns, s.t_end_ns FROM spans s "
                      "JOIN kinds k ON k.kind = s.kind JOIN names n ON n.name_id = s.name_id "
                      "WHERE k.name = 'pg_op' AND s.seq >= 0 ORDER BY s.rank, s.t_begin_ns").fetchall()
    by_rank = {}
    for rank, name, seq, size, begin, end in rows:
        by_rank.setdefault(rank, []).append((name, seq, size, begin, end))
    return by_rank


def by_hand(run_file):
    """{rank: (collectives, bytes, bus GB/s)} over collectives of MIN_BYTES or more."""
    ops = pg_ops(run_file)
    ranks = sorted(ops)
    n = len(ranks)
    keys = [set((name, seq) for name, seq, *_ in ops[r]) for r in ranks]
    every = set.intersection(*keys)
    # The order every rank ran them in (rank 0's), and each rank's call of each.
    order = [(name, seq) for name, seq, *_ in ops[ranks[0]] if (name, seq) in every]
    calls = {r: {(name, seq): (size, begin, end) for name, seq, size, begin, end in ops[r]} for r in ranks}
    sums = {r: [0, 0, 0.0, 0.0] for r in ranks}  # collectives, bytes, bus bytes, transfer ns
    previous_end = {r: None for r in ranks}
    for key in order:
        arrival = {}
        for r in ranks:
            size, begin, end = calls[r][key]
            arrival[r] = begin if previous_end[r] is None else max(begin, previous_end[r])
        last = max(arrival.values())
        for r in ranks:
            size, begin, end = calls[r][key]
            previous_end[r] = end
            factor = factor_of(key[0])
            if factor is None or size is None or size < MIN_BYTES or end <= last:
                continue
            s = sums[r]
            s[0] += 1
            s[1] += size
            s[2] += size * factor(n)
            s[3] += end - last
    return {r: (s[0], s[1], s[2] / s[3] if s[3] else 0.0) for r, s in sums.items()}


def bucket_busbw(run_file, first, last):
    """Bus GB/s of the bucket allreduces of MIN_BYTES or more in iterations first..last, every
    rank's: each from the last rank's start of that bucket's allreduce to its own end."""
    db = sqlite3.connect(f"file:{run_file}?immutable=1", uri=True)
    db.enable_load_extension(True)
    db.load_extension(EXTENSION)
    rows = db.execute("SELECT s.rank, s.iteration, s.bucket, s.bytes, s.t_begin_ns, s.t_end_ns FROM spans s "
                      "JOIN kinds k ON k.kind = s.kind WHERE k.name = 'allreduce' AND s.bucket >= 0").fetchall()
    ranks = {r[0] for r in rows}
    n = len(ranks)
    by_bucket = {}
    for rank, it, bucket, size, begin, end in rows:
        by_bucket.setdefault((it, bucket), []).append((size, begin, end))
    bus, ns = 0.0, 0
    for (it, bucket), calls in by_bucket.items():
        if len(calls) != n or not first <= it <= last:
            continue
        last_arrival = max(begin for _, begin, _ in calls)
        for size, begin, end in calls:
            if size >= MIN_BYTES and end > last_arrival:
                bus += size * 2 * (n - 1) / n
                ns += end - last_arrival
    return bus / ns


class BandwidthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.runs = {}
        for np in (2, 4):
            run = os.path.join(cls.tmp.name, f"bw{np}.ddprun")
            # Buckets of 1 MiB: several collectives over MIN_BYTES an iteration.
            subprocess.run([CLI, "train", "--np", str(np), "--model", "mlp", "--width", "512", "--depth", "4",
                            "--iters", "12", "--bucket-cap-mb", "1", "--progress", "lines", "--out", run]
                           + (["--measure-links"] if np == 4 else []),
                           check=True, capture_output=True, timeout=300)
            cls.runs[np] = run

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_bus_bandwidth_matches_the_spans(self):
        for np, run in self.runs.items():
            with self.subTest(ranks=np):
                stats = json.loads(subprocess.run([CLI, "stats", run, "--json"], check=True, capture_output=True,
                                                  text=True).stdout)
                bandwidth = stats["bandwidth"]
                mine = {r["rank"]: r for r in bandwidth["by_rank"]}
                hand = by_hand(run)
                self.assertEqual(sorted(mine), sorted(hand))
                for rank, (count, size, bus_gbps) in hand.items():
                    self.assertGreater(count, 12, f"rank {rank}: too few collectives over 64 KiB to check")
                    self.assertEqual(mine[rank]["collectives"], count, f"rank {rank}")
                    self.assertEqual(mine[rank]["bytes"], size, f"rank {rank}")
                    self.assertAlmostEqual(mine[rank]["busbw_gbps"], bus_gbps, delta=bus_gbps * 0.001,
                                           msg=f"rank {rank}")
                # Buckets: each bucket's median over ranks and iterations, of a real size.
                self.assertTrue(bandwidth["by_bucket"], bandwidth)
                for b in bandwidth["by_bucket"]:
                    self.assertGreater(b["bytes"], 0, b)
                    self.assertGreater(b["median_busbw_gbps"], 0, b)
                    self.assertTrue(0 <= b["median_beside_backward"] <= 1, b)
                # The last bucket is ready only when backward's compute ends, where finalize
                # begins (the allreduce may start some 0.1 ms before finalize's span does): little
                # or none of its transfer is beside backward. (How much of the others' is depends
                # on when the ranks' communication threads get a core: on 2 cores none here, 99 %
                # of the demo's first bucket.)
                last = max(bandwidth["by_bucket"], key=lambda b: b["bucket"])
                self.assertLessEqual(last["median_beside_backward"], 0.25, bandwidth["by_bucket"])
                self.assertGreater(bandwidth["reference_busbw_gbps"], 0)
                text = subprocess.run([CLI, "stats", run], check=True, capture_output=True, text=True).stdout
                self.assertIn("Bus bandwidth in collectives of 64 KiB or more", text)
                self.assertRegex(text, r"\n +%d +%d " % (np - 1, mine[np - 1]["collectives"]))

    def test_compare_gives_each_runs_bucket_bandwidth(self):
        a, b = self.runs[2], self.runs[4]
        out = json.loads(subprocess.run([CLI, "compare", a, b, "--json"], check=True, capture_output=True,
                                        text=True).stdout)
        for side, run in (("a", a), ("b", b)):
            first, last = out[side]["iterations"]
            hand = bucket_busbw(run, first, last)
            self.assertAlmostEqual(out[side]["bucket_busbw_gbps"], hand, delta=hand * 0.001, msg=side)
        text = subprocess.run([CLI, "compare", a, b], check=True, capture_output=True, text=True).stdout
        self.assertRegex(text, r"bus bandwidth \(buckets\) +[\d.]+ [kMG]B/s +[\d.]+ [kMG]B/s +[+-]\d+%")

    def test_measured_links_match_their_spans(self):
        run = self.runs[4]
        db = sqlite3.connect(f"file:{run}?immutable=1", uri=True)
        db.enable_load_extension(True)
        db.load_extension(EXTENSION)
        best, tests = {}, {}
        for rank, peer, size, begin, end in db.execute(
                "SELECT s.rank, s.peer, s.bytes, s.t_begin_ns, s.t_end_ns FROM spans s JOIN kinds k "
                "ON k.kind = s.kind WHERE k.name = 'link_test'"):
            best[(rank, peer)] = max(best.get((rank, peer), 0), size / (end - begin))
            tests[(rank, peer)] = tests.get((rank, peer), 0) + 1
        # One host: the ring's 4 pairs, both ways, 3 exchanges each.
        self.assertEqual(sorted(best), [(0, 1), (0, 3), (1, 0), (1, 2), (2, 1), (2, 3), (3, 0), (3, 2)])
        self.assertEqual(set(tests.values()), {3})
        report = json.loads(subprocess.run([CLI, "links", run, "--json"], check=True, capture_output=True,
                                           text=True).stdout)
        self.assertTrue(report["measured"])
        mine = {(l["src"], l["dst"]): l for l in report["links"]}
        self.assertEqual(sorted(mine), sorted(best))
        for pair, gbps in best.items():
            self.assertAlmostEqual(mine[pair]["measured_gbps"], gbps, delta=gbps * 1e-9, msg=str(pair))
            self.assertEqual(mine[pair]["tests"], 3)
            # The link test's own sends are not the job's traffic: a one-host MPI job has none.
            self.assertEqual(mine[pair]["bytes"], 0, str(pair))
        self.assertAlmostEqual(report["ring_ceiling_gbps"], min(best.values()), delta=1e-12)
        self.assertGreater(report["group_collective_bytes"], 0)
        # stats reads each collective against that ceiling; the 2-rank run, unmeasured, its own p95.
        stats = json.loads(subprocess.run([CLI, "stats", run, "--json"], check=True, capture_output=True,
                                          text=True).stdout)["bandwidth"]
        self.assertTrue(stats["reference_measured"])
        self.assertAlmostEqual(stats["reference_busbw_gbps"], min(best.values()), delta=1e-12)
        text = subprocess.run([CLI, "stats", run], check=True, capture_output=True, text=True).stdout
        self.assertIn("the slowest measured link between neighbouring ranks", text)
        unmeasured = subprocess.run([CLI, "links", self.runs[2]], check=True, capture_output=True, text=True).stdout
        self.assertIn("Record with `train --measure-links`", unmeasured)
        stats2 = json.loads(subprocess.run([CLI, "stats", self.runs[2], "--json"], check=True, capture_output=True,
                                           text=True).stdout)["bandwidth"]
        self.assertFalse(stats2["reference_measured"])
        # One host's shared memory measured at GB/s, collectives of a small model far below it:
        # not network-bound.
        why = json.loads(subprocess.run([CLI, "why", run, "--json"], check=True, capture_output=True,
                                        text=True).stdout)
        self.assertIsNone(why["network_bound"], why["network_bound"])
        self.assertIsNone(why["slow_link"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
