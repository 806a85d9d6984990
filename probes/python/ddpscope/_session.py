"""One rank's recording: the probes and the training loop's iterations as this process
sees them (an iteration runs from one DDP forward to the next)."""
import atexit
import json
import os
import statistics
import sys
import threading
from collections import deque

from ddpscope import _cpu_wait, _report, _stacks


def _int_env(name):
    """A whole number from the environment; 0 when absent or malformed (never fatal here)."""
    try:
        return int(os.environ.get(name, "0"))
    except ValueError:
        return 0


class Session:
    def __init__(self, probes, rank, reporter=None, world=None):
        self.probes = probes
        self.rank = rank
        # As the launcher that started the process says it (_launcher): torchrun's
        # WORLD_SIZE, Slurm's SLURM_NTASKS, ...
        self.world = world if world is not None else int(os.environ.get("WORLD_SIZE", "1"))
        self.restart = _int_env("TORCHELASTIC_RESTART_COUNT")
        self.max_restarts = _int_env("TORCHELASTIC_MAX_RESTARTS")
        self.failed = False  # an exception no one caught ended the script
        self._watch_failure()
        self.reporter = reporter  # the launcher's progress (ddpscope-cli torchrun), or None
        self.iteration = 0  # 0: before the first forward
        self.numbering = None  # each process group's collective numbers (_collectives)
        self.logged = {}  # what ddpscope.log() was given this iteration
        self._iteration_begin = None
        self._batch = 0
        self._last_end = 0
        self._step_end = None  # the end of this iteration's optimizer step, if it took one
        self._failure_marked = False
        self.backward_called = None  # when the running torch.autograd.backward() was called
        # What ends with backward() when the autograd engine cannot say when it is done
        # (a torch without queue_callback: _torch_api).
        self._at_backward_return = []
        self._lock = threading.Lock()
        # Threads named so far, by native id: a backend's own C++ threads come back into
        # Python as a fresh threading object at each callback, so a threading.local forgets.
        # The training thread is "compute", whatever the backend calls back on it.
        self._named = {threading.main_thread().native_id: "compute", threading.get_native_id(): "compute"}
        self._callback_threads = {}  # name -> how many threads carry it
        self._gpu_clock = None  # made at the first collective on CUDA tensors
        self._recent_s = deque(maxlen=20)  # the last iterations' seconds (the stall time)
        self._stacks_lock = threading.Lock()
        self._stacks_failed = False
        self.cpu_waits = _cpu_wait.CpuWaits()  # the training thread's wait for a CPU by phase
        probes.set_thread_name("compute")
        atexit.register(self.close)
        self._watcher = _stacks.StallWatcher(self)

    def _watch_failure(self):
        """Notes a script that ends on an exception (not on Ctrl-C), then prints it as before,
        or through sys.exit with a failing status (atexit never sees the exit code)."""
        hook = sys.excepthook

        def note_then_print(exc_type, exc, tb):
            if not issubclass(exc_type, KeyboardInterrupt):
                self.failed = True
            hook(exc_type, exc, tb)

        sys.excepthook = note_then_print
        exit_ = sys.exit

        def note_then_exit(status=None):
            # As Python's exit status: None and 0 succeed, any other number or a message fails.
            self.failed = status is not None and status != 0
            exit_(status)

        sys.exit = note_then_exit

    def at_backward_return(self, callback):
        self._at_backward_return.append(callback)

    def backward_returned(self):
        self.cpu_waits.backward_returned()
        callbacks, self._at_backward_return = self._at_backward_return, []
        for callback in callbacks:
            callback()

    def name_this_thread(self, name):
        """Names the calling thread once, unless it is the training thread: a callback the
        backend runs inline on it does not rename the rank's main track."""
        tid = threading.get_native_id()
        if tid in self._named:
            return
        with self._lock:
            self._named[tid] = name
        self.probes.set_thread_name(name)

    def name_callback_thread(self, name):
        """name_this_thread for threads of which a backend keeps several (gloo's workers):
        the second is "name 2", and so on, so that no two tracks read the same."""
        if threading.get_native_id() in self._named:
            return
        with self._lock:
            count = self._callback_threads.get(name, 0) + 1
            self._callback_threads[name] = count
        self.name_this_thread(name if count == 1 else "%s %d" % (name, count))

    def after_gpu(self, device, callback):
        """callback(end_ns) once the GPU has run what `device`'s current stream holds: the
        end of a collective on CUDA tensors, which the host sees only queued."""
        if self._gpu_clock is None:
            from ddpscope._gpu_clock import GpuClock
            with self._lock:
                if self._gpu_clock is None:
                    self._gpu_clock = GpuClock(self.probes)
                    self._record_device(device)
        self._gpu_clock.after_current_stream(device, callback)

    def _record_device(self, device):
        """The rank's device in the run (ranks.device), as the engine's NCCL ranks say cuda."""
        import socket
        self.probes.record(json.dumps({"type": "rank", "host": socket.gethostname(), "pid": os.getpid(),
                                       "device": "cuda"}))

    def note_end(self, t_ns):
        with self._lock:
            self._last_end = max(self._last_end, t_ns)

    def note_step_end(self, t_ns):
        """The optimizer stepped: the last iteration ends here, not with what the script does
        after its loop (a final all_gather, saving the model)."""
        self.note_end(t_ns)
        self._step_end = t_ns

    def begin_iteration(self, t_ns, batch=0):
        """A DDP forward starts: the iteration before it, if any, ends with its last event.
        `batch`: the samples this rank's forward takes (0: not known)."""
        self._end_iteration()
        self.iteration += 1
        self._iteration_begin = t_ns
        self._step_end = None
        self._batch = batch
        self.probes.set_iteration(self.iteration)

    def _end_iteration(self, last=False):
        if self._iteration_begin is None:
            return
        with self._lock:
            end = max(self._last_end, self._iteration_begin + 1)
            if last and self._step_end is not None:
                end = max(self._step_end, self._iteration_begin + 1)
        self.probes.event("iteration", "iteration", self._iteration_begin, end, iteration=self.iteration)
        # The Live tab's charts, as the engine's trainer records them.
        seconds = (end - self._iteration_begin) / 1e9
        self._recent_s.append(seconds)
        self._metric("iteration_ms", seconds * 1e3)
        if self._batch:
            self._metric("samples_per_s", self._batch * self.world / max(seconds, 1e-9))
        for name, ms in self.cpu_waits.recorded().items():
            self._metric(name, ms)
        if self.reporter is not None:
            self.reporter.iteration_done(self.iteration, seconds, self._batch, self.logged.get("loss"))
        self.logged = {}
        self._iteration_begin = None

    def collective_failed(self, op, seq, error, t0, group):
        """The first collective that failed (a timeout, a peer gone), typed: the op, its number
        and whether it waited its group's whole timeout, so the Hang view and the verdict
        never read the error's words. t0: when the op started (probes.now_ns())."""
        if self._failure_marked:
            return
        self._failure_marked = True
        if self.numbering is not None:
            op, seq, t0 = self.numbering.stuck_in(group, op, seq, t0)
        from ddpscope import _torch_api  # torch's, called only from torch's collectives
        t = self.probes.now_ns()
        # Gloo ends a wait at the timeout, counted from a moment a little after t0.
        timed_out = (t - t0) / 1e9 >= 0.9 * _torch_api.group_timeout_s(group)
        self.probes.event("collective_failed", op, t, t, seq=seq, param=1 if timed_out else 0)
        if self.reporter is not None:
            self.reporter.collective_failed(op, seq, timed_out)
        text = " ".join(_report.innermost(str(error)).split())[:200] or type(error).__name__
        self.record_stacks("%s #%d failed: %s" % (op, seq, text))
        # After the stacks: the process is likely to end with this error (gloo aborts it), and
        # what is not shipped now is lost.
        self.probes.flush()

    def progress(self):
        """What moves while the rank makes progress: its iteration and its last event's end."""
        return self.iteration, self._last_end

    def stacks_requested(self):
        """True once after the user asked where every rank's code stands (`hang --ask`)."""
        probes = self.probes
        return probes is not None and probes.take_stacks_request()

    def median_iteration_s(self):
        recent = list(self._recent_s)
        return statistics.median(recent) if recent else 0.0

    def record_stacks(self, reason, stalled_s=0.0):
        """Every thread's stack into the run (_stacks), never failing the job: a failure is said
        once on stderr."""
        with self._stacks_lock:
            if self.probes is None:
                return
            try:
                _stacks.record(self.probes, self.iteration, reason, stalled_s)
            except Exception as e:  # noqa: BLE001 - the job must go on whatever a stack holds
                if not self._stacks_failed:
                    self._stacks_failed = True
                    sys.stderr.write("ddpscope: rank %d: the stacks could not be recorded: %s\n" % (self.rank, e))

    def _metric(self, name, value):
        self.probes.record(json.dumps({"type": "metric", "iteration": self.iteration, "name": name, "value": value}))

    def close(self):
        """At exit: the last iteration ends, and what is left is shipped."""
        if self.probes is None:
            return
        self._watcher.stop()
        if self._gpu_clock is not None:
            self._gpu_clock.close()
        self._end_iteration(last=True)
        # The rank is done: a collector waiting for the job's ranks (`collect --expect N`)
        # counts it, unless it failed with torchrun's restarts left (another attempt follows).
        self.probes.record(json.dumps({"type": "rank_end", "restart": self.restart, "max_restarts": self.max_restarts,
                                       "failed": self.failed, "t_ns": self.probes.now_ns()}))
        with self._stacks_lock:  # no stacks are taken while the probes stop
            dropped = self.probes.stop()
            self.probes = None
        if self.reporter is not None:
            self.reporter.finished(dropped)
        elif dropped > 0:
            # Under another launcher nobody else reports it: said once, on the rank's stderr.
            sys.stderr.write("ddpscope: rank %d: %d events were not stored (the collector did not confirm "
                             "them: gone, or its disk full); the run file lacks them\n" % (self.rank, dropped))
