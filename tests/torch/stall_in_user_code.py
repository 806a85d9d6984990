"""A PyTorch DDP script (gloo, no ddpscope in it) whose rank 1 stalls in its own input function:
at iteration 5, load_batch sleeps at the line marked STALL, while rank 0 waits in the
allreduce its loss.backward() (the line marked BACKWARD) started, until the process group's
timeout. tests/torch/test_hang_stacks.py finds the marked lines and checks that the stacks
name them.

    stall_in_user_code.py TIMEOUT_S STALL_S [--recurse N]

--recurse N: rank 1 stalls N calls deep in a recursive function (a stack deeper than a
capture keeps), in a thread whose name is 301 characters, none ASCII, the last a lone surrogate
(not UTF-8)."""
import argparse
import datetime
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("timeout", type=float)
parser.add_argument("stall", type=float)
parser.add_argument("--recurse", type=int, default=0)
args = parser.parse_args()


def deep(n, seconds):
    if n == 0:
        time.sleep(seconds)  # DEEP
        return
    deep(n - 1, seconds)


def load_batch(rank, iteration):
    if rank == 1 and iteration == 5:
        if args.recurse:
            worker = threading.Thread(target=deep, args=(args.recurse, args.stall), name="ü∂" * 150 + "\udcff")
            worker.start()
            worker.join()
        else:
            time.sleep(args.stall)  # STALL
    return torch.randn(16, 64)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for iteration in range(1, 9):
        x = load_batch(rank, iteration)  # LOAD
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()  # BACKWARD
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    import sys
    sys.setrecursionlimit(20000)
    main()
