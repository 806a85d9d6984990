"""A PyTorch DDP training script as its users write it, with no ddpscope in it: torchrun's
environment, gloo (or --backend nccl: the model and batches on the rank's GPU), an MLP,
SGD. --user-hook registers a comm hook of its own after DDP is
built (an allreduce and a mean, counting each bucket it sees); --counts writes what it saw
as JSON, so a test can compare the run file with what DDP really ran. --stall-rank R
--stall-at I makes rank R sleep before iteration I (a rank stopped, with --timeout the
group's collective timeout); --raise-at I raises on rank 1 at iteration I,
--fail-first-attempt-at I raises only before torchrun's first restart (or with
--fail-by exit calls sys.exit with a message); --log-loss
makes the one optional ddpscope call; --gpu-sleep-cycles N (NCCL, with --user-hook) keeps
the GPU busy for N cycles before each bucket's allreduce, which the host only queues;
--rank-from slurm|openmpi takes the rank from srun's or mpirun's variables instead of
torchrun's. --slow RANK:PHASE:MS makes one rank slow in every iteration, as the engine's
train --inject-slow does: outside_step (before forward, as a slow input pipeline), forward
(a pre-hook of the model), backward (at its start, a hook on the loss), backward@N (a hook on
layer N's weight gradient) or optimizer (inside its step)."""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=8)
parser.add_argument("--width", type=int, default=512)
parser.add_argument("--depth", type=int, default=4)
parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
parser.add_argument("--user-hook", action="store_true")
parser.add_argument("--counts")
parser.add_argument("--log-loss", action="store_true")
parser.add_argument("--stall-rank", type=int, default=-1)
parser.add_argument("--stall-at", type=int, default=0)
parser.add_argument("--stall-seconds", type=float, default=60)
parser.add_argument("--raise-at", type=int, default=0)
parser.add_argument("--fail-first-attempt-at", type=int, default=0)
parser.add_argument("--fail-by", choices=["raise", "exit"], default="raise")
parser.add_argument("--timeout", type=float, default=1800)
parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
parser.add_argument("--gpu-sleep-cycles", type=int, default=0)
parser.add_argument("--rank-from", choices=["torchrun", "slurm", "openmpi"], default="torchrun")
parser.add_argument("--slow", default="")
args = parser.parse_args()
slow_rank, slow_phase, slow_ms = -1, "", 0.0
if args.slow:
    slow_rank, slow_phase, slow_ms = args.slow.split(":")
    slow_rank, slow_ms = int(slow_rank), float(slow_ms)


def sleep_slow(*_):
    time.sleep(slow_ms / 1000.0)

# A job started by srun or mpirun says the rank in its launcher's words, and its script
# hands them to torch, as users' scripts for those launchers do.
RANK_VARIABLES = {"slurm": ("SLURM_PROCID", "SLURM_NTASKS"), "openmpi": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")}
explicit = {}
if args.rank_from in RANK_VARIABLES:
    rank_var, world_var = RANK_VARIABLES[args.rank_from]
    explicit = {"rank": int(os.environ[rank_var]), "world_size": int(os.environ[world_var])}
dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=args.timeout), **explicit)
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cpu")
if args.backend == "nccl":
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
    torch.cuda.set_device(device)
torch.manual_seed(0)
layers = []
for i in range(args.depth):
    layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
module = torch.nn.Sequential(*layers[:-1]).to(device)
slow_here = rank == slow_rank
if slow_here and slow_phase == "forward":
    module.register_forward_pre_hook(sleep_slow)
if slow_here and slow_phase.startswith("backward@"):
    module[int(slow_phase.split("@")[1])].weight.register_hook(sleep_slow)
model = DDP(module, device_ids=[device] if device.type == "cuda" else None, bucket_cap_mb=args.bucket_cap_mb)
seen = {}  # iteration -> bucket sizes in bytes, in call order
iteration = [0]


def counting_allreduce(state, bucket):
    buffer = bucket.buffer()
    seen.setdefault(iteration[0], []).append(buffer.numel() * buffer.element_size())
    buffer.div_(world)
    if args.gpu_sleep_cycles:  # GPU work the allreduce must wait for; the host does not
        torch.cuda._sleep(args.gpu_sleep_cycles)
    return dist.all_reduce(buffer, async_op=True).get_future().then(lambda f: f.value()[0])


if args.user_hook:
    model.register_comm_hook(None, counting_allreduce)


class SlowSGD(torch.optim.SGD):
    """SGD whose step sleeps first on the slow rank (--slow R:optimizer:MS)."""

    def step(self, *a, **k):
        if slow_here and slow_phase == "optimizer":
            sleep_slow()
        return super().step(*a, **k)


optimizer = SlowSGD(model.parameters(), lr=0.01)
generator = torch.Generator().manual_seed(rank)
for it in range(1, args.iters + 1):
    iteration[0] = it
    if rank == args.stall_rank and it == args.stall_at:
        time.sleep(args.stall_seconds)
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    if rank == 1 and it == args.fail_first_attempt_at and first_attempt:
        if args.fail_by == "exit":  # as scripts that check their own state do
            sys.exit("worker lost at iteration %d" % it)
        raise RuntimeError("worker lost at iteration %d" % it)
    if rank == 1 and it == args.raise_at:
        raise ValueError("bad batch at iteration %d" % it)
    if slow_here and slow_phase == "outside_step":
        sleep_slow()
    x = torch.randn(32, args.width, generator=generator).to(device)
    loss = model(x).square().mean()
    if slow_here and slow_phase == "backward":
        loss.register_hook(sleep_slow)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if args.log_loss:
        import ddpscope  # the one optional call; absent outside a ddpscope job's PYTHONPATH
        ddpscope.log(loss=loss.item())
# The hook's result: every rank holds the same parameters after the averaged steps.
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
gathered = [torch.empty_like(flat) for _ in range(world)]
dist.all_gather(gathered, flat)
same = all(torch.equal(g, gathered[0]) for g in gathered)
if args.counts:
    with open("%s.%d" % (args.counts, rank), "w") as f:
        json.dump({"buckets": seen, "replicas_equal": same}, f)
dist.destroy_process_group()
