"""PyTorch 1.13 DDP (gloo) side of the DDP step benchmark: 8 x Linear(1024) ReLU MLP,
batch 64 per rank, MSE, SGD, one compute thread per rank, bucket_cap_mb 25.

Started by run_ddp_step.py (and run_cluster_ddp.py) once per rank with RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT set; rank 0 prints one JSON object. Run with /usr/bin/python3.
    ddp_step_torch.py [STEPS] [ddp|no-ddp]
no-ddp: the plain model, its gradients flattened into one allreduce after backward.
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
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    layers = []
    for i in range(8):
        layers.append(torch.nn.Linear(1024, 1024))
        if i < 7:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    if use_ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
    else:
        for p in model.parameters():  # DDP's start: every rank from rank 0's weights
            dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + rank)
    x = torch.randn(64, 1024)
    y = torch.randn(64, 1024)
    loss_fn = torch.nn.MSELoss()
    times = []
    for step in range(5 + steps):
        dist.barrier()
        t0 = time.perf_counter()
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
    if rank == 0:
        print(json.dumps({"impl": "pytorch", "ddp": use_ddp, "version": torch.__version__,
                          "median_ms": statistics.median(times),
                          "min_ms": min(times)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
