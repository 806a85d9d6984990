"""PyTorch 1.13 (gloo) side of the ZeRO / SyncBatchNorm benchmark (run_zero.py runs both):
8 x Linear(1024) ReLU MLP, batch 64 per rank, MSE, AdamW (lr 1e-4, weight decay 0.01),
one compute thread per rank, DDP and ZeroRedundancyOptimizer with their default options.

Started once per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set; rank 0
prints one JSON object. Run with /usr/bin/python3.
    zero_torch.py MODE [STEPS]
MODE: ddp | zero | zero_overlap | batch_norm | sync_bn. zero_overlap is
overlap_with_ddp=True with DDP's hook_with_zero_step (PyTorch's own way; its first
iterations are warm-up and step() is not called). A mode PyTorch refuses (1.13's
SyncBatchNorm takes only GPU input) prints its error as "refused".
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer

WIDTH = 1024


def state_bytes(optimizer):
    return sum(t.numel() * t.element_size()
               for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0)


def build(mode):
    torch.manual_seed(0)
    layers = []
    for i in range(8):
        layers.append(torch.nn.Linear(WIDTH, WIDTH))
        if i < 7:
            if mode in ("batch_norm", "sync_bn"):
                layers.append(torch.nn.BatchNorm1d(WIDTH))
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    if mode == "sync_bn":
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = torch.nn.parallel.DistributedDataParallel(model)
    hyper = dict(lr=1e-4, weight_decay=0.01)
    overlap = mode == "zero_overlap"
    if mode in ("zero", "zero_overlap"):
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                      overlap_with_ddp=overlap, **hyper)
        if overlap:
            from torch.distributed.algorithms.ddp_comm_hooks.ddp_zero_hook import hook_with_zero_step
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
            model.register_comm_hook(None, hook_with_zero_step(allreduce_hook, model, opt))
    else:
        opt = torch.optim.AdamW(model.parameters(), **hyper)
    return model, opt, overlap


def train(model, opt, overlap, steps, rank):
    torch.manual_seed(1 + rank)
    x = torch.randn(64, WIDTH)
    y = torch.randn(64, WIDTH)
    loss_fn = torch.nn.MSELoss()
    times = []
    for step in range(5 + steps):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        if not overlap:  # the hook steps the shards
            opt.step()
        if step >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def main():
    mode = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    try:
        model, opt, overlap = build(mode)
        times = train(model, opt, overlap, steps, rank)
    except (ValueError, RuntimeError) as e:  # what PyTorch refuses on CPU and gloo
        if rank == 0:
            print(json.dumps({"impl": "pytorch", "mode": mode, "version": torch.__version__, "refused": str(e)}))
        return
    local = opt.optim if isinstance(opt, ZeroRedundancyOptimizer) else opt
    held = torch.tensor([float(state_bytes(local))])
    dist.all_reduce(held, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(json.dumps({"impl": "pytorch", "mode": mode, "version": torch.__version__,
                          "median_ms": statistics.median(times), "min_ms": min(times),
                          "state_bytes_per_rank": int(held.item())}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
