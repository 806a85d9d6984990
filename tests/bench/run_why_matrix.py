#!/usr/bin/python3
"""The cause analysis (`ddpscope-cli why`, issue 65) over a seeded random matrix: a slow rank x
phase (outside the step, forward, a named backward layer, optimizer) x 5-40 ms, at 2 and 4
ranks, on our engine and on an unchanged PyTorch DDP script. Prints each case's verdict, the
hit rate (right rank and phase; the target: >= 95%), how often the backward layer was named,
whether any case blamed a waiting rank (the target: none), and the what-if's error against
a re-run of the same job without the slowdown (the target: within 10%).

    /usr/bin/python3 tests/bench/run_why_matrix.py --build build [--cases 40] [--seed 65]
        [--reruns 1] [--iters 20]

Each case runs the slow job and the job without the slowdown, --reruns times each in turn
(the what-if of the slow runs' median against the median of the others): about 10 s a case
and rerun on 2 cores. One run of each is at the mercy of whatever else the machine runs.
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "probes"))
import why_cases  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=65)
    parser.add_argument("--reruns", type=int, default=1)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    cli = os.path.join(os.path.abspath(args.build), "bin", "ddpscope-cli")
    cases = why_cases.random_cases(args.seed, args.cases)
    hits, layers, layer_cases, blamed, errors = 0, 0, 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases, 1):
            verdicts, healthy_ms = [], []
            for _ in range(args.reruns):
                verdicts.append(why_cases.verdict_of(cli, tmp, case, iters=args.iters))
                healthy_run = os.path.join(tmp, "healthy.ddprun")
                if os.path.exists(healthy_run):
                    os.remove(healthy_run)
                why_cases.run_job(cli, healthy_run, case.kind, case.ranks, width=case.width, iters=args.iters)
                healthy_ms.append(why_cases.why(cli, healthy_run)["iteration_ms"])
            verdict = verdicts[0]  # the hit rate counts the first run of each case
            what_if = statistics.median(v["what_if_ms"] for v in verdicts)
            healthy = statistics.median(healthy_ms)
            right = why_cases.named_right(case, verdict)
            hits += right
            blamed += why_cases.blames_a_waiting_rank(case, verdict)
            if case.expected_where():
                layer_cases += 1
                layers += right and (verdict["straggler"] or {}).get("where") == case.expected_where()
            error = (what_if - healthy) / healthy
            if right:
                errors.append(error)
            print("%2d/%d %-40s %s  what-if %.1f ms, re-run %.1f ms (%+.0f%%)\n      %s" %
                  (i, len(cases), case, "hit " if right else "MISS", what_if, healthy, 100 * error,
                   verdict["verdict"]), flush=True)
    print("\nseed %d: %d of %d cases named the right rank and phase (%.0f%%; target >= 95%%)" %
          (args.seed, hits, len(cases), 100.0 * hits / len(cases)))
    print("backward layer named: %d of %d slow-layer cases" % (layers, layer_cases))
    print("cases that blamed a waiting rank: %d (target: none)" % blamed)
    if errors:
        absolute = sorted(abs(e) for e in errors)
        print("what-if error against the re-run, over the %d hits: median %.0f%%, 90th percentile %.0f%%, worst %.0f%%; "
              "within 10%%: %d of %d" % (len(errors), 100 * statistics.median(absolute),
                                         100 * absolute[int(0.9 * (len(absolute) - 1))], 100 * absolute[-1],
                                         sum(e <= 0.10 for e in absolute), len(absolute)))


if __name__ == "__main__":
    main()
