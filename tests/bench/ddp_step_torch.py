"""PyTorch 1.13 DDP (gloo) side of the DDP step benchmark: 8 x Linear(1024) ReLU MLP,
batch 64 per rank, MSE, SGD, one compute thread per rank, bucket_cap_mb 25.

Started by run_ddp_step.py (and run_cluster_ddp.py) once per rank with RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT set; rank 0 prints one JSON object. Run with /usr/bin/python3.
    ddp_step_torch.py [STEPS] [ddp|no-ddp]
no-ddp: the plain model, its gradients flattened into one allreduce after backward.
DDP_STEP_PYTHON_ALLREDUCE_HOOK=1: DDP with torch's default allreduce as a Python comm hook.
DDP_STEP_WIDTH=W: Linear(W) layers instead of 1024 (the same hooks and buckets per step).
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    use_ddp = (sys.argv[2] if len(sys.argv) > 2 else "ddp") == "ddp"
    width = int(os.environ.get("DDP_STEP_WIDTH", "1024"))  # the same 16 parameters, smaller
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    layers = []
    for i in range(8):
        layers.append(torch.nn.Linear(width, width))
        if i < 7:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    if use_ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
        if os.environ.get("DDP_STEP_PYTHON_ALLREDUCE_HOOK") == "1":
            # torch's own allreduce as a Python comm hook, the path ddpscope's instrumentation
            # takes (run_torchrun_cost.py separates its recording from the path's own cost).
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            model.register_comm_hook(dist.group.WORLD, default_hooks.allreduce_hook)
    else:
        for p in model.parameters():  # DDP's start: every rank from rank 0's weights
            dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + rank)
    x = torch.randn(64, width)
    y = torch.randn(64, width)
    loss_fn = torch.nn.MSELoss()
    times, loops, thread_cpu, process_cpu = [], [], [], []
    for step in range(5 + steps):
        b0 = time.perf_counter()  # the loop's iteration: the barrier too
        dist.barrier()
        t0 = time.perf_counter()
        c0, p0 = time.thread_time(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        if not use_ddp:
            grads = [p.grad for p in model.parameters()]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat /= dist.get_world_size()
            offset = 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        opt.step()
        if step >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
            loops.append((time.perf_counter() - b0) * 1e3)
            # CPU time, which waiting for the other core does not inflate: the training
            # thread's own, and every thread's (gloo's, a profiler's shipper).
            thread_cpu.append((time.thread_time() - c0) * 1e3)
            process_cpu.append((time.process_time() - p0) * 1e3)
    if rank == 0:
        print(json.dumps({"impl": "pytorch", "ddp": use_ddp, "version": torch.__version__,
                          "median_ms": statistics.median(times),
                          "min_ms": min(times),
                          "loop_median_ms": statistics.median(loops),
                          "main_thread_cpu_ms": statistics.median(thread_cpu),
                          "process_cpu_ms": statistics.median(process_cpu)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
