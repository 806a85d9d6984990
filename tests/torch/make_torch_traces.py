"""Makes real torch.profiler traces of a real DDP job, one file per rank, for the
import-torch tests and benchmarks. Run with a python that has torch (/usr/bin/python3
here: torch 1.13 writes the older list form; torch 2.x writes the Kineto form).

    make_torch_traces.py OUT_DIR [--np 2] [--steps 4] [--device cpu|cuda]
                         [--backend gloo|nccl] [--stop-rank R --stop-after K]
                         [--name-pattern rank{rank}.json] [--gzip] [--tensorboard]

Starts one process per rank itself with torchrun's environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT): torch.distributed.run fails under Debian's Python 3.11.
The model is an MLP whose DDP buckets are small enough to make several allreduces
per step. --stop-rank R --stop-after K: rank R leaves after K steps (its trace is
written), the others block in the next allreduce until the gloo timeout (5 s) and
write theirs: a job where one rank stopped early. --tensorboard: written by
torch.profiler.tensorboard_trace_handler (worker_name rank{rank}, *.pt.trace.json).
"""
import argparse
import datetime
import gzip
import os
import shutil
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(args):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=5))
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10)).to(device)
    # About 1.6 MB of gradients in 0.26 MB weights: 0.25 MB buckets make several
    # allreduces per step.
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.25)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(1 + rank)
    x = torch.randn(64, 256, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()
    out_path = os.path.join(args.out, args.name_pattern.format(rank=rank))
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def write(prof):
        prof.export_chrome_trace(out_path)

    if args.tensorboard:
        write = torch.profiler.tensorboard_trace_handler(args.out, worker_name=f"rank{rank}",
                                                          use_gzip=args.gzip)

    steps = args.steps
    if args.stop_rank == rank:
        steps = args.stop_after
    failed = None
    # ProfilerStep#N spans are recorded only with a schedule.
    sched = torch.profiler.schedule(wait=0, warmup=1, active=args.steps, repeat=1)
    with torch.profiler.profile(activities=activities, schedule=sched, on_trace_ready=write,
                                record_shapes=True) as prof:
        for _ in range(steps + 1):  # the first step is the schedule's warm-up
            try:
                opt.zero_grad(set_to_none=True)
                loss_fn(ddp(x), y).backward()
                opt.step()
            except RuntimeError as e:  # a peer left: the trace is still written
                failed = e
                break
            prof.step()
    if args.device == "cuda":
        torch.cuda.synchronize()
    if args.gzip and not args.tensorboard and os.path.exists(out_path):
        with open(out_path, "rb") as src, gzip.open(out_path + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(out_path)
    if failed is not None:
        print(f"rank {rank}: stopped by {type(failed).__name__}", file=sys.stderr)
        os._exit(0)  # the group cannot be torn down with a peer gone
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--backend", default="gloo")
    p.add_argument("--stop-rank", type=int, default=-1)
    p.add_argument("--stop-after", type=int, default=0)
    p.add_argument("--name-pattern", default="rank{rank}.json")
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--tensorboard", action="store_true")
    args = p.parse_args()
    if "RANK" in os.environ:
        rank_main(args)
        return
    os.makedirs(args.out, exist_ok=True)
    port = str(free_port())
    procs = []
    for r in range(args.np):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.np),
                   LOCAL_WORLD_SIZE=str(args.np), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    codes = [proc.wait(timeout=300) for proc in procs]
    if any(codes):
        sys.exit(f"make_torch_traces: ranks exited with {codes}")


if __name__ == "__main__":
    main()
