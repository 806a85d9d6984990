#!/usr/bin/python3
"""Writes tests/torch/fixtures/flight_4_ranks: the flight-recorder dumps of a 4-rank NCCL
DDP job in PyTorch's JSON dump form, from the fields PyTorch documents (version,
pg_config, pg_status, entries with record_id, pg_id, process_group, collective_seq_id,
p2p_seq_id, op_id, profiling_name, input/output sizes and dtypes, state, time_*_ns,
duration_ms, timeout_ms, frames), one file per rank named as PyTorch names them
(nccl_trace_rank_<R>). PyTorch 1.13 on this machine has no flight recorder (it came with
NCCL in 2.x), so the job is described here: a broadcast of the parameters, then two
bucket allreduces per step; in step 3 rank 2 alone gathers a metric (all_gather) where
the others allreduce their first bucket, and every rank waits.

    /usr/bin/python3 tests/torch/make_flight_dumps.py
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "flight_4_ranks")
WORLD = 4
T0 = 1_764_000_000_000_000_000  # epoch ns, as PyTorch's flight recorder times are
STEP_NS = 40_000_000
BUCKETS = [[6_553_600], [1_048_576]]  # two buckets of float32 gradients


def frames(line, fn="forward", op="all_reduce"):
    return [{"name": op, "filename": "torch/distributed/distributed_c10d.py", "line": 2050},
            {"name": "_run_ddp_forward" if fn == "forward" else fn, "filename": "torch/nn/parallel/distributed.py",
             "line": 1305},
            {"name": "train_step", "filename": "train.py", "line": line}] if fn != "train_step" else [
            {"name": op, "filename": "torch/distributed/distributed_c10d.py", "line": 2050},
            {"name": "train_step", "filename": "train.py", "line": line}]


def entry(i, op, sizes, state, t, frame_list):
    done = state == "completed"
    return {"record_id": i, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": i + 1,
            "p2p_seq_id": 0, "op_id": i + 1, "profiling_name": f"nccl:{op}", "time_created_ns": t,
            "input_sizes": [sizes], "input_dtypes": ["Float"],
            "output_sizes": [[sizes[0] * WORLD]] if op == "all_gather" else [sizes], "output_dtypes": ["Float"],
            "state": state, "time_discovered_started_ns": t + 20_000,
            "time_discovered_completed_ns": t + 3_000_000 if done else None, "retired": done,
            "duration_ms": 2.98 if done else None, "timeout_ms": 600000, "is_p2p": False, "frames": frame_list}


def dump(rank):
    entries = [entry(0, "broadcast", [8_388_608], "completed", T0, frames(31, "__init__"))]
    t = T0 + STEP_NS
    for step in (1, 2, 3):
        for b, sizes in enumerate(BUCKETS):
            last = step == 3
            if last and b == 1:
                break  # the first bucket of step 3 never completes: nothing follows it
            op, s, line, fn = "all_reduce", sizes, 58, "backward"
            if last and rank == 2:
                op, s, line, fn = "all_gather", [1], 61, "train_step"  # only rank 2 gathers a metric here
            entries.append(entry(len(entries), op, s, "started" if last else "completed", t + b * 5_000_000,
                                 frames(line, fn, op)))
        t += STEP_NS
    return {"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg",
                                                  "ranks": str(list(range(WORLD)))}},
            "pg_status": {"0": {"last_enqueued_collective": len(entries), "last_started_collective": len(entries),
                                "last_completed_collective": len(entries) - 1}},
            "entries": entries}


os.makedirs(OUT, exist_ok=True)
for r in range(WORLD):
    with open(os.path.join(OUT, f"nccl_trace_rank_{r}"), "w") as f:
        json.dump(dump(r), f, indent=1)
print(f"wrote {WORLD} dumps into {OUT}")
