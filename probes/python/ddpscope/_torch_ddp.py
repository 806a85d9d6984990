"""DistributedDataParallel, instrumented from outside: forward, the gradient-ready time of
each parameter, backward, each bucket's allreduce (through a communication hook that wraps
the default allreduce or the user's own hook, registered before or after), the bucket
assignment as the reducer builds and rebuilds it, and the optimizer's step."""
import functools
import json
import threading

# Imported once torch itself has loaded (ddpscope._activate): module level costs nothing
# on the gradient and comm-hook paths.
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpscope import _collectives, _cpu_wait, _torch_api

_DTYPES = {"torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16", "torch.bfloat16": "bf16"}


def _dtype(t):
    return _DTYPES.get(str(t.dtype), str(t.dtype).replace("torch.", ""))


class _Model:
    """What one DDP model records."""

    def __init__(self, session, ddp, register_comm_hook):
        self.session = session
        self.probes = session.probes
        self.group = ddp.process_group
        # The backend's callback threads are named after it; worked out once, not per bucket.
        self.callback_thread_name = "comm: %s callbacks" % self._backend_name()
        self.user_hook = None  # (state, hook) the user registered
        # The reducer's parameter indexes: the parameters that take gradients, in
        # registration order, less those DDP was told to ignore.
        ignored = getattr(ddp, "parameters_to_ignore", set()) or set()
        self.names, self.params = [], []
        for name, p in ddp.module.named_parameters():
            if p.requires_grad and name not in ignored:
                self.names.append("module." + name)
                self.params.append(p)
        self.index_of = {id(p): i for i, p in enumerate(self.params)}
        self.backward_begin = None
        self.assignment = {}  # bucket -> parameter indexes, this iteration
        self.recorded = None  # the assignment last recorded
        self.generation = -1
        for i, p in enumerate(self.params):
            p.register_hook(functools.partial(self._grad_ready, i))
        register_comm_hook(ddp, self, _Model._comm_hook)
        self._record_settings(ddp)

    def _record_settings(self, ddp):
        """DDP's options, into the run's config as a launched job's are (the Buckets tab's
        advice reads the cap it was recorded with)."""
        mib = float(1 << 20)
        first = _torch_api.first_bucket_bytes()
        try:  # the run says gloo or nccl, not just torch (the collector starts before DDP)
            backend = str(dist.get_backend(ddp.process_group))
        except Exception:
            backend = None
        self.probes.record(json.dumps({"type": "settings", "backend": backend, "values": {
            "bucket_cap_mb": ddp.bucket_bytes_cap / mib,
            "first_bucket_cap_mb": first / mib,
            "find_unused_parameters": bool(getattr(ddp, "find_unused_parameters", False)),
            "gradient_as_bucket_view": bool(getattr(ddp, "gradient_as_bucket_view", False)),
            "static_graph": bool(getattr(ddp, "static_graph", False))}}))

    def _grad_ready(self, index, grad):
        t = self.probes.now_ns()
        if self.backward_begin is None:
            # The first gradient of this backward: it began at the backward() call, when the
            # script made one (else here: autograd.grad, a C++ caller); its end is when the
            # engine is done (after DDP's own finalize, queued before ours).
            called = self.session.backward_called
            self.backward_begin = called if called is not None else t
            self.session.backward_called = None
            if threading.current_thread() is not threading.main_thread():
                self.session.name_this_thread("autograd")  # CUDA's backward runs on a thread of its own
            if not _torch_api.queue_callback(self._backward_done):
                self.session.at_backward_return(self._backward_done)
        self.probes.event("grad_ready", "grad_ready", t, t, param=index)
        self.session.cpu_waits.gradient_ready()
        return None

    def _backward_done(self):
        t = self.probes.now_ns()
        if self.backward_begin is not None:
            self.probes.event("backward", "backward", self.backward_begin, t)
            self.backward_begin = None
        self.session.note_end(t)

    @staticmethod
    def _comm_hook(self, bucket):
        t0 = self.probes.now_ns()
        index = bucket.index()
        buffer = bucket.buffer()
        nbytes = buffer.numel() * buffer.element_size()
        self._note_bucket(index, bucket)
        # Numbered with the group's other collectives: the bucket's allreduce is one of them.
        seq, suffix = self.session.numbering.take(self.group)
        op = "allreduce" + suffix
        self.probes.event("bucket_ready", "bucket_ready", t0, t0, bucket=index)
        self.probes.event("pg_op_start", op, t0, t0, nbytes=nbytes, seq=seq)
        self.session.numbering.started(self.group, seq, op, t0)
        with _collectives.quiet():  # the hook's own collectives are this one
            if self.user_hook is not None:
                state, hook = self.user_hook
                future = hook(state, bucket)
            else:
                future = default_hooks.allreduce_hook(self.group, bucket)
        iteration = self.session.iteration
        gpu = buffer.device if buffer.is_cuda else None

        def finished(t1):
            self.probes.event("allreduce", "bucket allreduce", t0, max(t1, t0 + 1), iteration=iteration, bucket=index,
                              nbytes=nbytes, seq=seq)
            self.probes.event("pg_op", op, t0, max(t1, t0 + 1), iteration=iteration, nbytes=nbytes, seq=seq)
            self.session.numbering.ended(self.group, seq)

        def done(f):
            try:
                value = f.value()
            except Exception as error:  # a failed allreduce (a timeout): the rank is still in it
                self.session.collective_failed(op, seq, error, t0, self.group)
                raise
            if gpu is not None:  # queued, not run: its end is read from the GPU
                self.session.after_gpu(gpu, finished)
                return value
            t1 = self.probes.now_ns()
            self.session.name_callback_thread(self.callback_thread_name)
            finished(t1)
            self.session.note_end(t1)
            return value

        return future.then(done)

    def _backend_name(self):
        try:
            return str(dist.get_backend(self.group))
        except Exception:
            return "bucket"

    def _note_bucket(self, index, bucket):
        """The assignment in force; recorded when the last bucket of an iteration shows one
        that differs from the last recorded (the first, then the rebuilt one)."""
        self.assignment[index] = (bucket.parameters(), bucket.buffer())
        if not bucket.is_last():
            return
        buckets = {b: [self.index_of.get(id(p), -1) for p in params] for b, (params, _) in self.assignment.items()}
        sizes = {b: buf.numel() * buf.element_size() for b, (_, buf) in self.assignment.items()}
        self.assignment = {}
        if buckets == self.recorded:
            return
        self.recorded = buckets
        self.generation += 1
        params = []
        for b, indexes in buckets.items():
            offset = 0
            for i in indexes:
                p = self.params[i]
                params.append({"index": i, "name": self.names[i], "shape": list(p.shape), "dtype": _dtype(p),
                               "bucket": b, "offset": offset})
                offset += p.numel()
        self.probes.record(json.dumps({
            "type": "buckets", "generation": self.generation,
            "buckets": [{"bucket": b, "bytes": sizes[b], "params": buckets[b]} for b in sorted(buckets)],
            "params": sorted(params, key=lambda x: x["index"])}))


def _describe(ddp):
    """"Sequential (2.1M parameters) under DDP": what `train` says of its model."""
    count = sum(p.numel() for p in ddp.module.parameters())
    size = "%.1fM" % (count / 1e6) if count >= 1e5 else "%d" % count
    return "%s (%s parameters) under DDP" % (type(ddp.module).__name__, size)


def instrument(session):
    register = DDP.register_comm_hook
    init = DDP.__init__
    forward = DDP.forward

    @functools.wraps(init)
    def ddp_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._ddpscope = _Model(session, self, lambda ddp, state, hook: register(ddp, state, hook))

    @functools.wraps(forward)
    def ddp_forward(self, *args, **kwargs):
        t0 = session.probes.now_ns()
        if session.reporter is not None and session.reporter.started is None:
            session.reporter.start(_describe(self), dist.get_backend(self.process_group))
        first = args[0] if args else None
        session.begin_iteration(t0, first.shape[0] if isinstance(first, torch.Tensor) and first.dim() > 0 else 0)
        session.cpu_waits.enter(_cpu_wait.FORWARD)
        try:
            return forward(self, *args, **kwargs)
        finally:
            t1 = session.probes.now_ns()
            session.cpu_waits.enter(_cpu_wait.OUTSIDE)
            session.probes.event("forward", "forward", t0, t1)
            session.note_end(t1)

    @functools.wraps(register)
    def ddp_register_comm_hook(self, state, hook):
        model = getattr(self, "_ddpscope", None)
        if model is None:
            return register(self, state, hook)
        if model.user_hook is not None:
            # What DDP itself says to a second registration.
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        _torch_api.check_comm_hook(self, hook)
        _torch_api.name_comm_hook(self, hook.__qualname__)
        model.user_hook = (state, hook)

    backward = torch.autograd.backward

    @functools.wraps(backward)
    def timed_backward(*args, **kwargs):
        session.backward_called = session.probes.now_ns()  # Tensor.backward() comes here too
        session.cpu_waits.enter(_cpu_wait.BACKWARD)
        try:
            return backward(*args, **kwargs)
        finally:
            session.backward_called = None
            session.backward_returned()

    torch.autograd.backward = timed_backward
    DDP.__init__ = ddp_init
    DDP.forward = ddp_forward
    DDP.register_comm_hook = ddp_register_comm_hook
    _instrument_optimizer(session)


def _instrument_optimizer(session):
    init = torch.optim.Optimizer.__init__

    @functools.wraps(init)
    def optimizer_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        step = self.step

        @functools.wraps(step)
        def timed_step(*a, **k):
            t0 = session.probes.now_ns()
            session.cpu_waits.enter(_cpu_wait.OPTIMIZER)
            try:
                return step(*a, **k)
            finally:
                t1 = session.probes.now_ns()
                session.cpu_waits.enter(_cpu_wait.OUTSIDE)
                session.cpu_waits.take()  # the iteration's: what follows is the next one's
                session.probes.event("optimizer", "optimizer step", t0, t1)
                session.note_step_end(t1)

        self.step = timed_step

    torch.optim.Optimizer.__init__ = optimizer_init
