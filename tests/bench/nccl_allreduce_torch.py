"""PyTorch's side of bench_nccl_allreduce: torch.distributed.all_reduce on the NCCL
backend, every call issued asynchronously and the last one waited for, size by size as
bench_nccl_allreduce measures ours (the same sizes, iterations and 9 rounds; median).
Run once per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, on a machine
with a GPU per rank; rank 0 prints one JSON object."""
import json
import os
import statistics
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    sizes = []
    nbytes = 4 << 10
    while nbytes <= 256 << 20:
        t = torch.ones(nbytes // 4, device="cuda")
        iters = min(max((2 << 30) // nbytes, 20), 2000)
        per_op = []
        for _ in range(10):  # the first round warms NCCL up and is not kept
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
            works = [dist.all_reduce(t, async_op=True) for _ in range(iters)]
            works[-1].wait()
            torch.cuda.synchronize()
            per_op.append((time.perf_counter() - t0) / iters)
        sizes.append({"bytes": nbytes, "iters": iters,
                      "torch_us_per_op": statistics.median(per_op[1:]) * 1e6})
        nbytes *= 4
    if rank == 0:
        print(json.dumps({"benchmark": "nccl_allreduce_torch", "torch": torch.__version__,
                          "world_size": n, "sizes": sizes}, indent=2))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
