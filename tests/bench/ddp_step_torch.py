"""PyTorch 1.13 DDP (gloo) side of the DDP step benchmark: 8 x Linear(1024) ReLU MLP,
batch 64 per rank, MSE, SGD, one compute thread per rank, bucket_cap_mb 25.

Started by run_ddp_step.py once per rank with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set; rank 0 prints one JSON object. Run with /usr/bin/python3.
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
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    layers = []
    for i in range(8):
        layers.append(torch.nn.Linear(1024, 1024))
        if i < 7:
            layers.append(torch.nn.ReLU())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers), bucket_cap_mb=25)
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
        opt.step()
        if step >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
    if rank == 0:
        print(json.dumps({"impl": "pytorch", "version": torch.__version__, "median_ms": statistics.median(times),
                          "min_ms": min(times)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
