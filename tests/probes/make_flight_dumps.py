#!/usr/bin/python3
"""Write PyTorch (2.10+) flight-recorder dump sets for tests, as PyTorch's writer writes them.

    /usr/bin/python3 tests/probes/make_flight_dumps.py OUT_DIR [--entries N] [--ranks 2,4,8]
                                                          [--scenarios a,b,...]

For each world size W and scenario it writes OUT_DIR/<scenario>-<W>/ with
json/, pickle2/ and pickle5/nccl_trace_rank_<R> for every rank, and expected.json:
{"class", "group", "seq", "culprits"} (global ranks; group/seq null where no op is named).
Standard library only (Debian's Python 3.11, no torch).

Every rank creates groups "0" (default_pg, all ranks), "1" (dp, even ranks only), "2" (tp,
all ranks). Each step: all_reduce f32[1024] on 0; all_reduce f32[256] on 1 (even ranks);
_all_gather_base f32[32] on 2; a ring send/recv f32[40] on 0; broadcast f32[128] on 0.
The last step is changed per scenario; every scenario makes more calls than the ring holds.
"""
import argparse
import collections
import json
import os
import pickle
import struct
import sys
import time

SCENARIOS = ("healthy", "type", "size", "dtype", "missing", "completed_vs_started",
             "started_vs_scheduled", "p2p_size", "in_flight", "missing_dump")
T0 = 1795710362319215553          # time_created_ns of the first call (a real dump's)
STEP_NS, OP_NS = 1_000_000, 100_000  # per step, per op within a step: times rise per rank
C10D = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py"
TRAIN = "/home/user/train.py"
# kind -> (python API that recorded it: frame 0, its line in distributed_c10d.py)
API = {"all_reduce": ("all_reduce", 3068), "broadcast": ("broadcast", 2968),
       "_all_gather_base": ("all_gather_into_tensor", 4186),
       "send": ("send", 2503), "recv": ("recv", 2547)}
# duration_ms comes from cudaEventElapsedTime: a float32 widened to double.
DUR = [struct.unpack("<f", struct.pack("<f", x))[0]
       for x in (0.028736, 0.031328, 0.007808, 0.010272, 0.055936, 0.017536, 0.006912)]
_frames = {}


def frames(kind, line):
    # PyTorch's writer shares one frame object among entries with the same frame, so the
    # pickles memoize it (BINGET); do the same.
    key = (kind, line)
    if key not in _frames:
        api, c10d_line = API[kind]
        _frames[key] = [{"name": api, "filename": C10D, "line": c10d_line},
                        {"name": "train_step", "filename": TRAIN, "line": line}]
    return _frames[key]


def groups_of(r, W):
    """(name, desc, ranks) of the groups rank r is in, in creation order: index = pg_id."""
    everyone = list(range(W))
    g = [("0", "default_pg", everyone)]
    if r % 2 == 0:
        g.append(("1", "dp", everyone[::2]))
    g.append(("2", "tp", everyone))
    return g


def op(g, kind, n_in, n_out, line, peer=None):
    return {"g": g, "kind": kind, "in": n_in, "out": n_out, "dt": "Float", "peer": peer,
            "line": line, "state": "completed"}


def step_ops(r, W):
    """One healthy step of rank r (all completed)."""
    ops = [op("0", "all_reduce", [1024], [1024], 41)]
    if r % 2 == 0:
        ops.append(op("1", "all_reduce", [256], [256], 42))
    # _all_gather_base records input [n], output [W*n]
    ops.append(op("2", "_all_gather_base", [32], [W * 32], 43))
    # Ring: even ranks send then receive, odd ranks receive then send (no deadlock).
    # A send's and a recv's input and output are the same tensor.
    send = op("0", "send", [40], [40], 44, (r + 1) % W)
    recv = op("0", "recv", [40], [40], 45, (r - 1) % W)
    ops += [send, recv] if r % 2 == 0 else [recv, send]
    ops.append(op("0", "broadcast", [128], [128], 46))
    return ops


def last_step(sc, r, W):
    """Rank r's ops in the last step of scenario sc."""
    ops = step_ops(r, W)
    if sc in ("healthy", "missing_dump"):
        return ops
    a, bcast = ops[0], ops[-1]          # the group-0 all_reduce, the group-0 broadcast
    a["state"] = "started"
    bad = r == W - 1
    if sc == "type" and bad:
        a["kind"] = "broadcast"
    elif sc == "size" and bad:
        a["in"] = a["out"] = [2048]
    elif sc == "dtype" and bad:
        a["dt"] = "Half"
    elif sc == "missing" and bad:
        return []
    elif sc == "started_vs_scheduled" and bad:
        a["state"] = "scheduled"
    elif sc == "completed_vs_started":
        if r == 1:
            return [a]
        a["state"], bcast["state"] = "completed", "started"
        return [a, bcast]
    elif sc == "p2p_size":
        # Everything up to each rank's first p2p op completed; rank 0's send to 1 and
        # rank 1's recv from 0 (f32[80]) started; nothing after.
        i = next(i for i, o in enumerate(ops) if o["kind"] in ("send", "recv"))
        ops = ops[:i + 1]
        for o in ops:
            o["state"] = "completed"
        if r in (0, 1):
            ops[i]["state"] = "started"
        if r == 1:
            ops[i]["in"] = ops[i]["out"] = [80]
        return ops
    return [a]


def expected(sc, W, S):
    # Each healthy step has 2 group-0 collectives and 2 group-0 p2p ops, so the first op
    # of group 0 in the last step (S-th) is collective #2S-1, and its first p2p is #2S-1.
    seq = 2 * (S - 1) + 1
    cls, culprits = {
        "healthy": ("fully matched", []), "type": ("collective type mismatch", [W - 1]),
        "size": ("size mismatch", [W - 1]), "dtype": ("dtype mismatch", [W - 1]),
        "missing": ("missing ranks", [W - 1]), "completed_vs_started": ("state mismatch", [1]),
        "started_vs_scheduled": ("state mismatch", [W - 1]),
        "p2p_size": ("p2p size mismatch", [0, 1]), "in_flight": ("all in flight", []),
        "missing_dump": ("missing dump", [W - 1])}[sc]
    named = sc not in ("healthy", "missing_dump")
    return {"class": cls, "group": "0" if named else None, "seq": seq if named else None,
            "culprits": culprits}


def rank_dump(sc, r, W, S, N):
    """Rank r's dump in pickle form (PyTorch's insertion order) and its JSON form's pg_status."""
    groups = groups_of(r, W)
    pg_id = {name: i for i, (name, _, _) in enumerate(groups)}
    pg = {name: (name, desc) for name, desc, _ in groups}   # "process_group": a tuple
    cseq, pseq, opid = ({n: 0 for n in pg_id} for _ in range(3))
    # pg_status: ProcessGroupNCCL sets these from work->seq_, which is the p2p seq for p2p
    # works (initWork: isP2P ? seqP2P_ : seqCollective_); started only moves forward.
    status = {n: [-1, -1, -1] for n in pg_id}
    ring = collections.deque(maxlen=N)   # the ring keeps the newest N; record_id keeps counting
    healthy = step_ops(r, W)
    record_id = 0
    for s in range(S):
        for j, o in enumerate(healthy if s < S - 1 else last_step(sc, r, W)):
            g = o["g"]
            opid[g] += 1                               # op_id: every op of the group
            if o["kind"] in ("send", "recv"):
                pseq[g] += 1; seq = pseq[g]            # p2p: collective_seq_id not bumped
            else:
                cseq[g] += 1; seq = cseq[g]            # collective: carries current p2p seq
            st = status[g]
            st[0] = seq
            if o["state"] != "scheduled" and st[1] < seq:
                st[1] = seq
            if o["state"] == "completed":
                st[2] = seq
            ring.append((record_id, s, j, o, cseq[g], pseq[g], opid[g]))
            record_id += 1

    entries = []
    for rid, s, j, o, c, p, oid in ring:
        kind, g, state = o["kind"], o["g"], o["state"]
        created = T0 + s * STEP_NS + j * OP_NS + r * 1_000
        started = created + 40_000 + r * 500 if state != "scheduled" else None
        completed = started + 2_000 if state == "completed" else None
        if kind == "send":
            name = f"nccl:send {r}->{o['peer']}"        # group-local ranks (group 0: global)
        elif kind == "recv":
            name = f"nccl:recv {r}<-{o['peer']}"
        else:
            name = "nccl:" + kind
        e = {"frames": frames(kind, o["line"]), "record_id": rid, "pg_id": pg_id[g],
             "process_group": pg[g], "thread_name": "pt_main_thread",
             "thread_id": "140000000000000", "collective_seq_id": c, "p2p_seq_id": p,
             "op_id": oid, "profiling_name": name, "time_created_ns": created}
        if state == "completed":                        # only completed entries have it
            e["duration_ms"] = DUR[rid % len(DUR)]
        e["input_sizes"] = [list(o["in"])]
        e["input_dtypes"] = [o["dt"]]
        e["output_sizes"] = [list(o["out"])]
        e["output_dtypes"] = [o["dt"]]
        e["state"] = state
        e["time_discovered_started_ns"] = started      # None in pickles, 0 in JSON
        e["time_discovered_completed_ns"] = completed
        e["retired"] = state == "completed"
        e["timeout_ms"] = 600000
        e["is_p2p"] = kind in ("send", "recv")
        entries.append(e)

    pg_config = {name: {"name": name, "desc": desc, "ranks": str(ranks)}
                 for name, desc, ranks in groups}
    pg_status = {str(pg_id[n]): {"last_enqueued_collective": st[0],
                                 "last_started_collective": st[1],
                                 "last_completed_collective": st[2]}
                 for n, st in status.items()}
    return {"version": "2.10", "pg_config": pg_config, "comm_lib_version": "2.28.9",
            "pg_status": pg_status, "entries": entries}


def to_json_form(d):
    """The C++ JSON writer's form, in place: no frames, 0 for unreached times, pg_status values
    as text, an (empty) nccl_comm_state."""
    for e in d["entries"]:
        del e["frames"]
        if e["time_discovered_started_ns"] is None:
            e["time_discovered_started_ns"] = 0
        if e["time_discovered_completed_ns"] is None:
            e["time_discovered_completed_ns"] = 0
    d["pg_status"] = {k: {f: str(v) for f, v in st.items()} for k, st in d["pg_status"].items()}
    d["nccl_comm_state"] = {}
    return d


def write_set(out, sc, W, N):
    S = max(2, N // 5 + N // 20 + 1)  # odd ranks make 5 calls a step: every ring wraps
    folder = os.path.join(out, f"{sc}-{W}")
    for form in ("json", "pickle2", "pickle5"):
        os.makedirs(os.path.join(folder, form), exist_ok=True)
    for r in range(W):
        if sc == "missing_dump" and r == W - 1:
            continue
        d = rank_dump(sc, r, W, S, N)
        fname = f"nccl_trace_rank_{r}"
        for form, proto in (("pickle2", 2), ("pickle5", 5)):
            with open(os.path.join(folder, form, fname), "wb") as f:
                pickle.dump(d, f, protocol=proto)
        # nlohmann::json over std::map: keys sorted, compact, no trailing newline.
        # (json.dumps uses the C encoder; json.dump would use the pure-Python one, ~5x slower.)
        with open(os.path.join(folder, "json", fname), "w", encoding="utf-8") as f:
            f.write(json.dumps(to_json_form(d), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False))
        del d
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected(sc, W, S), f)
        f.write("\n")
    return folder


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--entries", type=int, default=2000, help="ring size (default 2000)")
    ap.add_argument("--ranks", default="2,4,8", help="world sizes, even (default 2,4,8)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    a = ap.parse_args(argv)
    worlds = [int(w) for w in a.ranks.split(",") if w]
    scenarios = [s for s in a.scenarios.split(",") if s]
    bad = [s for s in scenarios if s not in SCENARIOS]
    if bad or a.entries < 1 or any(w < 2 or w % 2 for w in worlds):
        ap.error(f"unknown scenario {bad}" if bad else
                 "--entries must be >= 1 and world sizes even and >= 2 (the ring send/recv)")
    for W in worlds:
        for sc in scenarios:
            t = time.monotonic()
            folder = write_set(a.out_dir, sc, W, a.entries)
            print(f"{folder}: {W} ranks, {a.entries} entries a rank, "
                  f"{time.monotonic() - t:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
