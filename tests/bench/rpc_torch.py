#!/usr/bin/python3
"""PyTorch 1.13's RPC (TensorPipe, CPU) doing what `ddpscope-cli rpc-ping --np 2` does:
the median round trip of rpc_sync(torch.add) on 3x3 f32 tensors, and echo throughput of
a tensor of BYTES bytes (bytes each way per round trip / time). Prints one JSON line.
With --echo-bytes N the round trips echo a tensor of N bytes instead of the add.
Usage: rpc_torch.py CALLS [--echo-bytes N] BYTES [BYTES...]"""
import json
import os
import socket
import sys
import time

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp


def echo(t):
    return t


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, port, calls, sizes, queue, echo_bytes=0):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=16, init_method=f"tcp://127.0.0.1:{port}")
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=opts)
    if rank == 0:
        small = torch.ones(max(1, echo_bytes // 4)) if echo_bytes else torch.ones(3, 3)
        func, args = (echo, (small,)) if echo_bytes else (torch.add, (small, small))
        for _ in range(20):
            rpc.rpc_sync("worker1", func, args=args)
        us = []
        for _ in range(calls):
            t0 = time.perf_counter()
            rpc.rpc_sync("worker1", func, args=args)
            us.append((time.perf_counter() - t0) * 1e6)
        us.sort()
        out = {"median_round_trip_us": us[len(us) // 2], "throughput_mb_s": {}}
        for b in sizes:
            big = torch.ones(max(1, b // 4))
            trips = min(2000, max(5, (256 << 20) // b))
            rpc.rpc_sync("worker1", echo, args=(big,))
            t0 = time.perf_counter()
            for _ in range(trips):
                rpc.rpc_sync("worker1", echo, args=(big,))
            out["throughput_mb_s"][str(b)] = big.numel() * 4 * trips / (time.perf_counter() - t0) / 1e6
        queue.put(out)
    rpc.shutdown()


def main():
    calls = int(sys.argv[1])
    rest = sys.argv[2:]
    echo_bytes = 0
    if rest[:1] == ["--echo-bytes"]:
        echo_bytes, rest = int(rest[1]), rest[2:]
    sizes = [int(x) for x in rest]
    torch.set_num_threads(1)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, port, calls, sizes, queue, echo_bytes)) for r in range(2)]
    for p in procs:
        p.start()
    result = queue.get(timeout=600)
    for p in procs:
        p.join()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
