#!/usr/bin/python3
"""Makes a large set of PyTorch (Kineto-form) profiler traces for the import benchmark:
one file per rank, each the real 2-rank CUDA+gloo DDP trace of tests/torch/fixtures
(recorded with torch 2.11 on an H100) repeated step after step until the file reaches
its size. Timestamps, step numbers, correlation and flow ids move on with each copy, so
the result reads as one long profiled job: the same event mix, argument shapes and key
order as a real trace, only longer.

    /usr/bin/python3 tests/bench/make_torch_trace_set.py OUT_DIR [--ranks 8] [--mb-per-rank 128]
"""
import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "torch", "fixtures", "kineto_cuda_gloo_2")


def load(rank):
    with gzip.open(os.path.join(FIXTURE, f"rank{rank % 2}.json.gz"), "rt") as f:
        return json.load(f)


def shifted(event, k, period_us, steps_per_copy, id_stride):
    """The event of copy k: later by k periods, with its ids and step number moved on."""
    if k == 0:
        return event
    e = dict(event)
    if "ts" in e:
        e["ts"] = round(e["ts"] + k * period_us, 3)
    if "id" in e and isinstance(e["id"], int):
        e["id"] += k * id_stride
    name = e.get("name", "")
    if name.startswith("ProfilerStep#"):
        e["name"] = f"ProfilerStep#{int(name[13:]) + k * steps_per_copy}"
    args = e.get("args")
    if args:
        a = dict(args)
        for key in ("External id", "correlation", "Record function id"):
            if isinstance(a.get(key), int):
                a[key] += k * id_stride
        e["args"] = a
    return e


def write_rank(out_dir, rank, ranks, target_bytes):
    doc = load(rank)
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M" and e.get("cat") != "Trace" and e.get("ph") != "i"]
    begin = min(e["ts"] for e in body if "ts" in e)
    end = max(e["ts"] + e.get("dur", 0) for e in body if "ts" in e)
    period = end - begin + 50.0
    steps = len({e["name"] for e in body if e.get("name", "").startswith("ProfilerStep#")})
    dist = doc["distributedInfo"]
    dist.update(rank=rank, world_size=ranks)
    for pg in dist.get("pg_config", []):
        pg["ranks"], pg["pg_size"] = list(range(ranks)), ranks
    path = os.path.join(out_dir, f"rank{rank}.pt.trace.json")
    written = 0
    with open(path + ".partial", "w") as f:
        head = json.dumps(doc)[:-1]  # the header's fields, then traceEvents last
        f.write(head + ', "traceEvents": [\n')
        first = True
        for e in meta:
            f.write(("" if first else ",\n") + json.dumps(e))
            first = False
        k = 0
        while written < target_bytes:
            chunk = ",\n".join(json.dumps(shifted(e, k, period, steps, 1_000_000)) for e in body)
            f.write(",\n" + chunk)
            written += len(chunk) + 2
            k += 1
        f.write("\n]}\n")
    os.rename(path + ".partial", path)
    return k * steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mb-per-rank", type=float, default=128)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for rank in range(args.ranks):
        steps = write_rank(args.out_dir, rank, args.ranks, int(args.mb_per_rank * 1e6))
        print(f"rank {rank}: {steps} steps", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
