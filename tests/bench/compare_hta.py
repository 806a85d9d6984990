#!/usr/bin/python3
"""ddpscope's GPU figures beside Holistic Trace Analysis' own, on the same traces.

    /usr/bin/python3 tests/bench/compare_hta.py --hta HTA_SOURCE --cli build/bin/ddpscope-cli SET...

Each SET is a folder of one job's Kineto traces (one file per rank). HTA runs from its
source tree (facebookresearch/HolisticTraceAnalysis, the folder holding `hta/`) as its
users run it: TraceAnalysis(trace_dir=SET) with its defaults. It needs Debian's
python3-pandas, python3-plotly and python3-yaml. ddpscope imports the same folder and
prints `stats`' gpu object. Per rank, the script prints HTA's idle, computation and
non-computation share of the GPU time, its comm/comp overlap, and ddpscope's, with the
largest difference; it exits 1 when a figure differs by more than --tolerance points.
"""
import argparse
import json
import logging
import math
import os
import subprocess
import sys
import tempfile


def check_peer(hta_source):
    missing = [m for m in ("pandas", "plotly", "yaml") if __import__("importlib").util.find_spec(m) is None]
    if missing:
        sys.exit(f"compare_hta: HTA needs {', '.join(missing)}: apt-get install python3-pandas python3-plotly "
                 "python3-yaml, and run this with /usr/bin/python3")
    if not os.path.isfile(os.path.join(hta_source, "hta", "trace_analysis.py")):
        sys.exit(f"compare_hta: no hta/trace_analysis.py under '{hta_source}'; give --hta the folder of a clone of "
                 "https://github.com/facebookresearch/HolisticTraceAnalysis")


def hta_figures(hta_source, folder):
    sys.path.insert(0, hta_source)
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis  # noqa: E402 (HTA from its source)

    t = TraceAnalysis(trace_dir=folder)
    temporal = t.get_temporal_breakdown(visualize=False)
    overlap = t.get_comm_comp_overlap(visualize=False)
    out = {}
    for _, row in temporal.iterrows():
        out[int(row["rank"])] = {
            "idle": float(row["idle_time_pctg"]),
            "computation": float(row["compute_time_pctg"]),
            "non_computation": float(row["non_compute_time_pctg"]),
        }
    for _, row in overlap.iterrows():
        out[int(row["rank"])]["overlap"] = float(row["comp_comm_overlap_pctg"])
    # HTA's idle-time breakdown of each rank, all streams together (its default delay).
    for rank in out:
        idle, _ = t.get_idle_time_breakdown(ranks=[rank], visualize=False)
        sums = idle.groupby("idle_category")["idle_time"].sum()
        out[rank]["idle_us"] = {k: float(v) for k, v in sums.items()}
    return out


def ddpscope_figures(cli, folder):
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "job.ddprun")
        subprocess.run([cli, "import-torch", folder, "--out", run], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        stats = json.loads(subprocess.run([cli, "stats", run, "--summary", "--json"], check=True, capture_output=True,
                                          text=True).stdout)
    gpu = stats["gpu"] or {"ranks": [], "idle_by_stream": []}
    out = {}
    for r in gpu["ranks"]:
        out[r["rank"]] = {
            "idle": r["idle_pct"],
            "computation": r["computation_pct"],
            "non_computation": r["non_computation_pct"],
            "overlap": r["overlap_pct"],
            "idle_us": {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0},
        }
    for s in gpu["idle_by_stream"]:
        idle = out[s["rank"]]["idle_us"]
        for k in ("host_wait", "kernel_wait", "other"):
            idle[k] += s[k + "_ms"] * 1000
    return out


def same(a, b):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and not (isinstance(b, float) and math.isnan(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hta", required=True, help="HTA's source tree (the folder holding hta/)")
    ap.add_argument("--cli", required=True, help="ddpscope-cli")
    ap.add_argument("--tolerance", type=float, default=0.2, help="percentage points (default 0.2)")
    ap.add_argument("sets", nargs="+")
    args = ap.parse_args()
    check_peer(args.hta)
    worst = 0.0
    print(f"{'set':<14}{'rank':>5}  {'figure':<16}{'HTA':>9}{'ddpscope':>10}{'diff':>8}")
    for folder in args.sets:
        hta = hta_figures(args.hta, folder)
        ours = ddpscope_figures(args.cli, folder)
        name = os.path.basename(os.path.normpath(folder))
        for rank in sorted(hta):
            for key in ("idle", "computation", "non_computation", "overlap"):
                h, o = hta[rank].get(key), ours.get(rank, {}).get(key)
                if h is None or math.isnan(h) or o is None:
                    print(f"{name:<14}{rank:>5}  {key:<16}{'-' if h is None or math.isnan(h) else h:>9}"
                          f"{'-' if o is None else round(o, 2):>10}{'' if same(h, o) else 'MISMATCH':>8}")
                    if not same(h, o):
                        worst = math.inf
                    continue
                diff = abs(h - o)
                worst = max(worst, diff)
                print(f"{name:<14}{rank:>5}  {key:<16}{h:>9.2f}{o:>10.2f}{diff:>8.2f}")
            for cat in ("host_wait", "kernel_wait", "other"):
                h = hta[rank]["idle_us"].get(cat, 0.0)
                o = ours.get(rank, {}).get("idle_us", {}).get(cat, 0.0)
                print(f"{name:<14}{rank:>5}  {'idle ' + cat + ' us':<16}{h:>9.0f}{o:>10.0f}{abs(h - o):>8.0f}")
    print(f"largest difference: {worst:.2f} points (tolerance {args.tolerance})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
