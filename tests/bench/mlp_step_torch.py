"""Baseline for bench_mlp_step: one SGD training step of an 8x1024 ReLU MLP in PyTorch.

Run with Debian's interpreter (/usr/bin/python3) so python3-torch 1.13 is used.
Prints one JSON object: median step time and peak resident memory.
"""
import argparse
import json
import resource
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    layers = []
    for i in range(args.depth):
        layers.append(torch.nn.Linear(args.width, args.width))
        if i + 1 < args.depth:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.width)
    y = torch.randn(args.batch, args.width)
    loss_fn = torch.nn.MSELoss()

    times = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if step >= args.warmup:
            times.append((t1 - t0) * 1e3)

    print(json.dumps({
        "impl": "pytorch",
        "version": torch.__version__,
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "final_loss": float(loss),
    }))


if __name__ == "__main__":
    main()
