#!/usr/bin/env python3
"""Flight-recorder dumps written by PyTorch itself, for the reader's tests and for comparing
our verdicts with PyTorch's own analyzer (torch.distributed.flight_recorder.fr_trace).

Needs a PyTorch of 2.8 or later (the flight recorder records gloo's collectives from 2.8;
NCCL's from 2.2). Debian's 1.13 has none. Each scenario runs as WORLD processes on
loopback; each rank calls the scenario's collectives, waits a moment, then writes its
dump twice, as PyTorch writes it: the pickle (what TORCH_FR_DUMP_TEMP_FILE receives on a
timeout) and the JSON (_dump_*_trace_json). PyTorch's analyzer is then run on the pickles.

    python3 tests/torch/make_real_flight_dumps.py OUT_DIR [--nccl]

OUT_DIR/<backend>-<world>-<scenario>/{pickle/rank_<R>, json/rank_<R>.json, fr_trace.txt}
"""
import argparse
import datetime
import os
import subprocess
import sys
import time
import traceback

SCENARIOS = ["healthy", "size", "dtype", "type", "missing", "p2p_size"]


def dump_functions(backend):
    import torch

    c10d = torch._C._distributed_c10d
    names = ["_dump_nccl_trace", "_dump_nccl_trace_json"] if backend == "nccl" else [
        "_dump_fr_trace", "_dump_fr_trace_json"]
    return [getattr(c10d, n, None) for n in names]


def worker(a):
    import torch
    import torch.distributed as dist

    rank, world = a.rank, a.world
    gpu = a.backend == "nccl"
    dev = torch.device("cuda:0") if gpu else torch.device("cpu")
    kwargs = {"device_id": dev} if gpu else {}
    dist.init_process_group(a.backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=a.timeout), **kwargs)
    # Groups: one only rank 0 is in (so later groups get other pg_ids on other ranks),
    # then two subgroups of every rank with descriptions.
    first = dist.new_group([0], group_desc="rank0_only")
    dp = dist.new_group(list(range(world)), group_desc="dp")
    evens = [r for r in range(world) if r % 2 == 0]
    tp = dist.new_group(evens, group_desc="tp_evens")

    def t(n, dtype=torch.float32):
        return torch.ones(n, dtype=dtype, device=dev)

    def attempt(what, fn):
        try:
            return fn()
        except Exception as e:  # an op a backend lacks is left out, and said
            print(f"rank {rank}: {what} failed: {type(e).__name__}: {e}", flush=True)

    for i in range(a.prefix):
        attempt("all_reduce", lambda: dist.all_reduce(t(1024)))
        attempt("all_reduce dp", lambda: dist.all_reduce(t(256), group=dp))
        if rank in evens:
            attempt("all_reduce tp", lambda: dist.all_reduce(t(64), group=tp))
        if rank == 0:
            attempt("all_reduce first", lambda: dist.all_reduce(t(8), group=first))
        attempt("broadcast", lambda: dist.broadcast(t(128), src=0))
        attempt("all_gather_into_tensor", lambda: dist.all_gather_into_tensor(t(32 * world), t(32)))
        attempt("all_gather", lambda: dist.all_gather([t(16) for _ in range(world)], t(16)))
        attempt("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(t(8), t(8 * world)))
        attempt("barrier", lambda: dist.barrier())
        if world > 1:
            peer = (rank + 1) % world
            src = (rank - 1) % world
            attempt("send/recv", lambda: [w.wait() for w in dist.batch_isend_irecv(
                [dist.P2POp(dist.isend, t(40), peer), dist.P2POp(dist.irecv, t(40), src)])])
    if gpu:
        torch.cuda.synchronize()

    last = world - 1
    s = a.scenario
    pending = []
    if s == "size":
        pending.append(dist.all_reduce(t(2048 if rank == last else 1024), async_op=True))
    elif s == "dtype":
        pending.append(dist.all_reduce(t(1024, torch.float64 if rank == last else torch.float32), async_op=True))
    elif s == "type":
        if rank == last:
            pending.append(dist.broadcast(t(1024), src=0, async_op=True))
        else:
            pending.append(dist.all_reduce(t(1024), async_op=True))
    elif s == "missing":
        if rank != last:
            pending.append(dist.all_reduce(t(1024), async_op=True))
    elif s == "p2p_size" and world > 1:
        if rank == 0:
            pending.append(dist.isend(t(10), 1))
        elif rank == 1:
            pending.append(dist.irecv(t(20), 0))
    time.sleep(a.settle)
    pickle_dump, json_dump = dump_functions(a.backend)
    os.makedirs(os.path.join(a.out, "pickle"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "json"), exist_ok=True)
    def call(fn, *args):
        try:
            return fn(*args)
        except TypeError:  # another signature in this version: its defaults
            return fn()

    if pickle_dump:
        with open(os.path.join(a.out, "pickle", f"rank_{rank}"), "wb") as f:
            f.write(call(pickle_dump, True, True, False))
    if json_dump:
        data = call(json_dump, True, False)
        with open(os.path.join(a.out, "json", f"rank_{rank}.json"), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    print(f"rank {rank}: dumped ({len(pending)} pending)", flush=True)
    sys.stdout.flush()
    os._exit(0)  # a rank left in a mismatched collective cannot tear down cleanly


def run_set(out, backend, world, scenario, prefix, buffer, port):
    folder = os.path.join(out, f"{backend}-{world}-{scenario}")
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TORCH_FR_BUFFER_SIZE=str(buffer),
               TORCH_NCCL_TRACE_BUFFER_SIZE=str(buffer), TORCH_NCCL_ENABLE_TIMING="1", PYTHONUNBUFFERED="1")
    procs = [subprocess.Popen([sys.executable, __file__, folder, "--worker", "--backend", backend,
                               "--world", str(world), "--rank", str(r), "--scenario", scenario,
                               "--prefix", str(prefix)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(world)]
    log = []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
            text += "\n(killed after 90 s)"
        log.append(text)
    with open(os.path.join(folder, "ranks.log"), "w") as f:
        f.write("\n".join(log))
    # PyTorch's own analyzer on the pickles, as its users run it.
    pickles = os.path.join(folder, "pickle")
    if os.path.isdir(pickles) and os.listdir(pickles):
        r = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", pickles,
                            "-p", "rank_"], capture_output=True, text=True, timeout=120)
        with open(os.path.join(folder, "fr_trace.txt"), "w") as f:
            f.write(f"rc {r.returncode}\n{r.stdout}\n--- stderr\n{r.stderr}")
    print(f"{folder}: {sum(len(files) for _, _, files in os.walk(folder))} files", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--scenario", default="healthy")
    p.add_argument("--prefix", type=int, default=3)
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--settle", type=float, default=1.5)
    p.add_argument("--nccl", action="store_true", help="also one NCCL rank on the GPU")
    a = p.parse_args()
    if a.worker:
        a.out = os.path.abspath(a.out)
        try:
            worker(a)
        except Exception:
            traceback.print_exc()
            os._exit(1)
        return
    import torch

    print("torch", torch.__version__, "cuda", torch.cuda.is_available(), flush=True)
    port = 29600
    if a.nccl and torch.cuda.is_available():
        run_set(a.out, "nccl", 1, "healthy", 5, 2000, port)
        run_set(a.out, "nccl", 1, "wrapped", 300, 2000, port + 1)  # more calls than the ring keeps
        port += 2
    for world in (2, 4):
        for s in SCENARIOS:
            port += 1
            run_set(a.out, "gloo", world, s, a.prefix, 2000, port)


if __name__ == "__main__":
    main()
