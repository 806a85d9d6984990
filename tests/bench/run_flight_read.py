#!/usr/bin/python3
"""Flight-recorder dump benchmark: `ddpscope-cli hang FOLDER` (reads every rank's dump and
judges it) on two dumps of 500,000 entries each, written as PyTorch writes them
(tests/probes/make_flight_dumps.py: sorted keys, compact), beside Python's json.load
(/usr/bin/python3, what PyTorch's own tools would start from) on the same files in the same
run. Prints each side's wall time, CPU time and peak memory, and the ratio. Targets: read
and judged in at most 5 s and 1 GiB. The pickle form is measured too (ours beside
pickle.load).

    /usr/bin/python3 tests/bench/run_flight_read.py --build build [--entries 500000] [--dir DIR]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from run_torch_import import measure  # noqa: E402  (wall, CPU and peak memory of one command)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--entries", type=int, default=500000)
    p.add_argument("--dir", default=None)
    a = p.parse_args()
    folder = a.dir or f"/tmp/ddpscope-flight-{a.entries}"
    dumps = os.path.join(folder, "healthy-2")
    if not os.path.isdir(dumps):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests/probes/make_flight_dumps.py"), folder,
                        "--entries", str(a.entries), "--ranks", "2", "--scenarios", "healthy"], check=True)
    cli = os.path.join(a.build, "bin", "ddpscope-cli")
    results = {"entries_per_rank": a.entries, "ranks": 2}
    for form, loader in (("json", "json.load(open(f))"), ("pickle5", "pickle.load(open(f,'rb'))")):
        sub = os.path.join(dumps, form)
        files = sorted(os.path.join(sub, f) for f in os.listdir(sub))
        size_mb = sum(os.path.getsize(f) for f in files) / 1e6
        for f in files:  # into the page cache first: both sides then read from memory
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
        ours = measure([cli, "hang", sub])
        base = measure(["/usr/bin/python3", "-c",
                        f"import json,pickle,sys\nfor f in sys.argv[1:]:\n    d={loader}\n    assert d['entries']\n"]
                       + files)
        results[form] = {
            "megabytes": round(size_mb, 1),
            "ours": {"wall_s": round(ours["wall"], 2), "cpu_s": round(ours["cpu"], 2),
                     "peak_mib": round(ours["rss"])},
            "python_load_only": {"wall_s": round(base["wall"], 2), "cpu_s": round(base["cpu"], 2),
                                 "peak_mib": round(base["rss"])},
            "time_ratio_ours_over_python": round(ours["wall"] / base["wall"], 3),
            "memory_ratio_ours_over_python": round(ours["rss"] / base["rss"], 3),
            "verdict": ours["out"].splitlines()[0] if ours["out"] else "",
        }
    results["target_met"] = results["json"]["ours"]["wall_s"] <= 5 and results["json"]["ours"]["peak_mib"] <= 1024
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
