#!/usr/bin/python3
"""PyTorch 1.13's distributed autograd (TensorPipe, CPU) running what
`ddpscope-cli example NAME --np N --repeat K` runs: forward + backward of seed 000's
example (2 workers) or of the nested chain (worker k scales tanh(x) by its own w), each
run in a fresh context. Prints one JSON line with the median on worker 0.
Usage: dist_autograd_torch.py seed|chain WORKERS REPEAT"""
import json
import os
import socket
import sys
import time

import torch
import torch.distributed.autograd as dist_autograd
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp

W = None  # this worker's w (chain)


def chain(left, x):
    y = torch.tanh(x) * W
    if left == 0:
        return y
    me = int(rpc.get_worker_info().name[len("worker"):])
    return rpc.rpc_sync(f"worker{me + 1}", chain, args=(left - 1, y))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_once(name, workers, t):
    with dist_autograd.context() as ctx:
        if name == "seed":
            t3 = rpc.rpc_sync("worker1", torch.add, args=(t["t1"], t["t2"]))
            loss = torch.mul(t3, t["t4"]).sum()
        else:
            loss = rpc.rpc_sync("worker1", chain, args=(workers - 2, t["x"])).sum()
        dist_autograd.backward(ctx, [loss])
        dist_autograd.get_gradients(ctx)


def worker(rank, workers, port, name, repeat, queue):
    global W
    W = torch.rand(3, 3, requires_grad=True)
    # TensorPipe with its default transports (shared memory between these processes
    # included), as its users run it.
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=16, init_method=f"tcp://127.0.0.1:{port}")
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=workers, rpc_backend_options=opts)
    if rank == 0:
        t = {k: torch.rand(3, 3, requires_grad=True) for k in ("t1", "t2", "t4", "x")}
        for _ in range(10):
            run_once(name, workers, t)
        us = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run_once(name, workers, t)
            us.append((time.perf_counter() - t0) * 1e6)
        us.sort()
        queue.put({"median_us": us[len(us) // 2]})
    rpc.shutdown()


def main():
    name, workers, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, workers, port, name, repeat, queue)) for r in range(workers)]
    for p in procs:
        p.start()
    result = queue.get()
    for p in procs:
        p.join()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
