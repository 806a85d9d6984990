"""The links' ceiling for a PyTorch job (DDPSCOPE_MEASURE_LINKS=1; `collect --measure-links`,
`torchrun --measure-links`): right after torch.distributed.init_process_group, every rank
times an exchange with each ring neighbour and, for each pair of hosts, their lowest ranks,
as `train --measure-links` does (engine/apps/link_test.h; the run file's link_test spans).

A direction a -> b: a sends the size, then the payload; b answers once it holds it; a times
the payload's send to the answer. The size grows x4 from 1 MiB until an exchange takes
200 ms or reaches 64 MiB, then 3 exchanges of that size are timed and recorded. Pairs that
share no rank run in the same round; a barrier ends each round."""
import functools
import os
import socket
import time

import torch
import torch.distributed as dist

from ddpscope import _collectives

_FIRST_BYTES = 1 << 20
_MOST_BYTES = 64 << 20
_LONG_ENOUGH_S = 0.2
_TIMED = 3
_TAG = 7301


def pairs_of(hosts):
    """The pairs (a < b) for ranks on `hosts` (one entry a rank): the ring, then each pair
    of hosts' lowest ranks; each pair once, in that order."""
    n = len(hosts)
    pairs, seen = [], set()

    def add(a, b):
        if a != b and (min(a, b), max(a, b)) not in seen:
            seen.add((min(a, b), max(a, b)))
            pairs.append((min(a, b), max(a, b)))

    for r in range(n):
        add(r, (r + 1) % n)
    firsts = [r for r in range(n) if hosts.index(hosts[r]) == r]
    for i, a in enumerate(firsts):
        for b in firsts[i + 1:]:
            add(a, b)
    return pairs


def rounds_of(pairs):
    """The pairs in rounds in which no rank is twice, each pair in the first round it fits."""
    rounds, busy = [], []
    for a, b in pairs:
        i = next((k for k, used in enumerate(busy) if a not in used and b not in used), len(rounds))
        if i == len(rounds):
            rounds.append([])
            busy.append(set())
        rounds[i].append((a, b))
        busy[i].update((a, b))
    return rounds


def _device():
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def _word(value, device):
    return torch.tensor([value], dtype=torch.int64, device=device)


def _exchange(peer, payload, device):
    dist.send(_word(payload.numel() * payload.element_size(), device), peer, tag=_TAG)
    start = time.monotonic()
    dist.send(payload, peer, tag=_TAG)
    dist.recv(_word(0, device), peer, tag=_TAG)
    return time.monotonic() - start


def _send_direction(probes, peer, device):
    size = _FIRST_BYTES
    while True:  # sizing: not recorded
        seconds = _exchange(peer, torch.empty(size // 4, dtype=torch.float32, device=device), device)
        if seconds >= _LONG_ENOUGH_S or size >= _MOST_BYTES:
            break
        size = min(size * 4, _MOST_BYTES)
    payload = torch.empty(size // 4, dtype=torch.float32, device=device)
    for k in range(_TIMED):
        begin = probes.now_ns()
        _exchange(peer, payload, device)
        probes.event("link_test", "link test", begin, probes.now_ns(), iteration=0, param=k, peer=peer, nbytes=size)
    dist.send(_word(0, device), peer, tag=_TAG)  # size 0: done


def _receive_direction(peer, device):
    """Payloads until the sender says 0, into one unfilled buffer per size: filling it before
    each receive would sit inside the sender's timing."""
    payload = None
    while True:
        size = _word(0, device)
        dist.recv(size, peer, tag=_TAG)
        nbytes = int(size.item())
        if nbytes == 0:
            return
        if payload is None or payload.numel() * 4 != nbytes:
            payload = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
        dist.recv(payload, peer, tag=_TAG)
        dist.send(_word(1, device), peer, tag=_TAG)


def measure(probes):
    """Every rank of the default group calls it once the group is made."""
    n, me = dist.get_world_size(), dist.get_rank()
    if n < 2:
        return
    device = _device()
    with _collectives.quiet():
        hosts = [None] * n
        dist.all_gather_object(hosts, socket.gethostname())
        rounds = rounds_of(pairs_of(hosts))
        now = probes.now_ns()
        probes.event("mark", "link test", now, now, iteration=0)
        for pairs in rounds:
            for a, b in pairs:
                if me == a:
                    _send_direction(probes, b, device)
                    _receive_direction(b, device)
                elif me == b:
                    _receive_direction(a, device)
                    _send_direction(probes, a, device)
            dist.barrier()
        now = probes.now_ns()
        probes.event("mark", "link test end", now, now, iteration=0)


def instrument(session):
    """Measures the links after init_process_group when the launcher asked for it."""
    if os.environ.get("DDPSCOPE_MEASURE_LINKS") != "1":
        return
    init = dist.init_process_group

    @functools.wraps(init)
    def init_then_measure(*args, **kwargs):
        result = init(*args, **kwargs)
        measure(session.probes)
        return result

    dist.init_process_group = init_then_measure
