"""torch.distributed's collectives called by the script (all_reduce, broadcast, barrier,
...), recorded as ddpscope records its own process group's: a start mark when the rank
enters, a span when the operation is over, numbered per group in the order the rank
issues them. Every rank issues a group's collectives in the same order, so equal numbers
are the same operation everywhere, and a rank that never reached number N is the one the
others wait for (the Hang view, `ddpscope-cli hang`). DDP's bucket allreduces take their
numbers from the same counter (_torch_ddp)."""
import functools
import inspect
import threading

import torch
import torch.distributed as dist

from ddpscope import _torch_api
from ddpscope._gpu_clock import cuda_device_of

# The collectives that every rank of a group must call (point-to-point send/recv are not).
_NAMES = ("all_reduce", "broadcast", "barrier", "all_gather", "all_gather_object", "all_to_all", "all_to_all_single",
          "reduce", "reduce_scatter", "gather", "scatter", "broadcast_object_list", "monitored_barrier",
          "all_gather_into_tensor", "reduce_scatter_tensor", "_all_gather_base", "_reduce_scatter_base")

_quiet = threading.local()  # set while DDP's comm hook runs: its allreduce is the bucket's


class quiet:
    """Collectives called inside are not recorded again (a comm hook's own allreduce)."""

    def __enter__(self):
        self._was = getattr(_quiet, "on", False)
        _quiet.on = True

    def __exit__(self, *exc):
        _quiet.on = self._was


class Numbering:
    """Each group's next collective number, and a name per group that is the same on
    every rank (groups are made in the same order everywhere)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._next = {}
        self._suffix = {}
        self._in_flight = {}  # (group, seq) -> (op, t0): started, not yet seen to end

    def take(self, group):
        group = _resolve(group)
        with self._lock:
            seq = self._next.get(group, 0) + 1
            self._next[group] = seq
            suffix = self._suffix.get(group)
            if suffix is None:
                suffix = self._suffix[group] = _group_suffix(group)
        return seq, suffix

    def started(self, group, seq, op, t0):
        with self._lock:
            self._in_flight[(_resolve(group), seq)] = (op, t0)

    def ended(self, group, seq):
        with self._lock:
            self._in_flight.pop((_resolve(group), seq), None)

    def stuck_in(self, group, op, seq, t0):
        """(op, seq, t0) of the collective a rank is stuck in when `seq` failed: the oldest of
        the group's it started and never saw end. DDP's bucket allreduces run side by side and
        fail in whatever order their callbacks run: with rank 1 stopped inside #78, rank 0's
        #79 reported its timeout first."""
        group = _resolve(group)
        with self._lock:
            older = [(s, o, t) for (g, s), (o, t) in self._in_flight.items() if g == group and s < seq]
        if not older:
            return op, seq, t0
        oldest, oldest_op, oldest_t0 = min(older, key=lambda x: x[0])
        return oldest_op, oldest, oldest_t0


def _resolve(group):
    """The group a collective runs on: None is the default group (c10d's public
    group.WORLD once the process group is made)."""
    return dist.group.WORLD if group is None else group


def _group_suffix(group):
    """"" for the default group; " (group NAME)" for another, by c10d's own name."""
    if group is dist.group.WORLD:
        return ""
    return " (group %s)" % _torch_api.group_name(group)


def _nbytes(value):
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


def _wrap(session, numbering, name, fn):
    signature = inspect.signature(fn)
    first = next(iter(signature.parameters), None)

    @functools.wraps(fn)
    def collective(*args, **kwargs):
        if getattr(_quiet, "on", False) or not dist.is_initialized():
            return fn(*args, **kwargs)
        try:
            bound = signature.bind_partial(*args, **kwargs).arguments
        except TypeError:
            return fn(*args, **kwargs)  # torch's own error, as without ddpscope
        seq, suffix = numbering.take(bound.get("group"))
        probes = session.probes
        op = name.lstrip("_") + suffix
        nbytes = _nbytes(bound.get(first)) if first != "group" else 0
        iteration = session.iteration
        t0 = probes.now_ns()
        probes.event("pg_op_start", op, t0, t0, nbytes=nbytes, seq=seq)
        numbering.started(bound.get("group"), seq, op, t0)
        try:
            result = fn(*args, **kwargs)
        except Exception as error:  # a timeout, a peer gone: the rank stays in this op
            session.collective_failed(op, seq, error, t0, _resolve(bound.get("group")))
            raise

        # On CUDA tensors (NCCL) the op is over when the GPU ran it, not when the call returned.
        gpu = cuda_device_of(bound.get(first)) if first != "group" else None

        def finished(t1):
            probes.event("pg_op", op, t0, max(t1, t0 + 1), iteration=iteration, nbytes=nbytes, seq=seq)
            numbering.ended(bound.get("group"), seq)
            if gpu is None:
                session.note_end(t1)

        def over():
            if gpu is None:
                finished(probes.now_ns())
            else:
                session.after_gpu(gpu, finished)

        if bound.get("async_op") and result is not None:
            try:
                future = result.get_future()
            except Exception:  # a backend without futures: over when issued, as far as is known
                finished(probes.now_ns())
                return result

            def done(f):
                try:
                    f.wait()
                except Exception as error:
                    # the rank never got past this op
                    session.collective_failed(op, seq, error, t0, _resolve(bound.get("group")))
                    return
                over()

            future.add_done_callback(done)
            return result
        over()
        return result

    return collective


def instrument(session):
    """Wraps torch.distributed's collectives; returns the numbering DDP's buckets share."""
    numbering = Numbering()
    for name in _NAMES:
        fn = getattr(dist, name, None)
        if fn is None or getattr(fn, "_ddpscope", False):
            continue
        wrapped = _wrap(session, numbering, name, fn)
        wrapped._ddpscope = True
        setattr(dist, name, wrapped)
        if getattr(dist.distributed_c10d, name, None) is fn:
            setattr(dist.distributed_c10d, name, wrapped)
    return numbering
