#!/usr/bin/python3
"""Import benchmark: `ddpscope-cli import-torch` on a generated 1 GB set of 8 PyTorch
(Kineto-form) traces, beside Python's json.load (/usr/bin/python3, one file at a time,
as a script reading the traces would) on the same files in the same run. Prints MB/s of
JSON, events/s and peak memory of each, and the ratio. The targets: >= 50 MB/s of
JSON per core, memory bounded whatever the size (here: well under one file's size).

    /usr/bin/python3 tests/bench/run_torch_import.py --build build [--dir /tmp/ddpscope-traces-1g]

The trace set is made once (tests/bench/make_torch_trace_set.py) and kept in --dir.
"""
import argparse
import os
import json
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(cmd):
    """(wall s, cpu s, peak MiB, stdout) of one command, in a fresh child."""
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run each side through
    # its own small wrapper process so the figures do not mix.
    wrapper = ("import resource,subprocess,sys,time,json;t=time.perf_counter();"
               "p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
               "w=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN);"
               "print(json.dumps({'rc':p.returncode,'wall':w,'cpu':r.ru_utime+r.ru_stime,"
               "'rss':r.ru_maxrss/1024,'out':p.stdout,'err':p.stderr[-3000:]}))")
    res = json.loads(subprocess.run(["/usr/bin/python3", "-c", wrapper] + cmd, check=True,
                                    capture_output=True, text=True).stdout)
    if res["rc"] != 0:
        sys.exit(f"{cmd[0]} failed ({res['rc']}):\n{res['err']}")
    return res


JSON_LOAD = ("import json,sys\n"
             "n=0\n"
             "for f in sys.argv[1:]:\n"
             "    with open(f) as h: d=json.load(h)\n"
             "    n+=len(d['traceEvents']); del d\n"
             "print(n)\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ddpscope-traces-1g"))
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mb-per-rank", type=float, default=128)
    args = parser.parse_args()
    cli = os.path.join(args.build, "bin", "ddpscope-cli")
    if not os.path.exists(cli):
        sys.exit(f"{cli} not found: build the project first (bash packaging/build.sh)")
    files = [os.path.join(args.dir, f"rank{r}.pt.trace.json") for r in range(args.ranks)]
    if not all(os.path.exists(f) for f in files):
        print(f"making {args.ranks} traces of {args.mb_per_rank:.0f} MB in {args.dir} ...", flush=True)
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_torch_trace_set.py"), args.dir,
                        "--ranks", str(args.ranks), "--mb-per-rank", str(args.mb_per_rank)], check=True)
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    out = os.path.join(args.dir + ".ddprun")

    ours = measure([cli, "import-torch", *files, "--out", out, "--force"])
    match = re.search(r"(\d+) events", ours["out"])
    imported = int(match.group(1)) if match else 0
    theirs = measure(["/usr/bin/python3", "-c", JSON_LOAD, *files])
    parsed = int(theirs["out"].strip() or 0)
    run_mb = os.path.getsize(out) / 1e6
    os.remove(out)

    print(f"trace set: {len(files)} files, {mb:.0f} MB of JSON")
    for name, r, events in (("ddpscope import-torch", ours, imported), ("python3 json.load", theirs, parsed)):
        print(f"{name:22s} wall {r['wall']:6.1f} s  cpu {r['cpu']:6.1f} s  "
              f"{mb / r['wall']:6.1f} MB/s  {mb / r['cpu']:6.1f} MB/s per core  "
              f"{events / r['wall'] / 1e6:5.2f} M events/s  peak {r['rss']:7.0f} MiB")
    print(f"ddpscope imported {imported} events (of {parsed} in the files: flows and metadata "
          f"are not stored) into a {run_mb:.0f} MB run file")
    print(f"ratio ddpscope/json.load: wall {ours['wall'] / theirs['wall']:.2f}, "
          f"peak memory {ours['rss'] / theirs['rss']:.2f}")
    per_core = mb / ours["cpu"]
    print(f"target >= 50 MB/s of JSON per core: {per_core:.0f} MB/s "
          f"{'met' if per_core >= 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
