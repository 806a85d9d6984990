"""The training thread's wait for a CPU, by phase, as the engine records it
(probes/runtime/cpu_wait.h): how long it was ready to run while other threads held the
host's cores (the kernel's run-queue delay, /proc/thread-self/schedstat). `why` tells a rank
late for want of a core from one slow at its work by it.

The phases are the cause analysis's: forward, backward until its last gradient became ready,
the optimizer step, and outside them everything else (between iterations, waiting for the
buckets' allreduces at the end of backward)."""
import os
import threading

OUTSIDE, FORWARD, BACKWARD, OPTIMIZER = range(4)
METRICS = ("cpu_wait_ms.outside_step", "cpu_wait_ms.forward", "cpu_wait_ms.backward", "cpu_wait_ms.optimizer")


class CpuWaits:
    """Sums one thread's run-queue wait by phase; every call from another thread is ignored
    (a backend's callback threads, CUDA's autograd thread)."""

    def __init__(self):
        self._fd = None
        self._tid = None
        self._broken = False
        self._last = None
        self._phase = OUTSIDE
        self._sums = [0, 0, 0, 0]
        self._pending = None  # taken at the optimizer step, recorded when the iteration ends

    def _read(self):
        """ns waited on a run queue by the training thread; None where the kernel does not say."""
        if self._broken:
            return None
        if self._fd is None:
            try:
                self._fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._broken = True
                return None
            self._tid = threading.get_native_id()
        try:
            return int(os.pread(self._fd, 96, 0).split()[1])
        except (OSError, IndexError, ValueError):
            self._broken = True
            return None

    def _mine(self):
        return self._tid is None or threading.get_native_id() == self._tid

    def enter(self, phase, charge=None):
        """The thread enters `phase`; its wait since the last call goes to the phase it was in
        (or to `charge`)."""
        if not self._mine():
            return
        now = self._read()
        if now is None:
            return
        if self._last is not None and now >= self._last:
            self._sums[self._phase if charge is None else charge] += now - self._last
        self._last = now
        self._phase = phase

    def gradient_ready(self):
        """A gradient became ready: backward's compute ran until now."""
        if self._phase == BACKWARD:
            self.enter(BACKWARD)

    def backward_returned(self):
        """Backward returned: from its last gradient on it waited for the buckets (outside)."""
        if self._phase == BACKWARD:
            self.enter(OUTSIDE, charge=OUTSIDE)

    def take(self):
        """The sums since the last take, ms by phase (added to any taken before and not yet
        recorded); kept until `recorded`."""
        self.enter(self._phase)
        if self._last is None:
            return
        ms = [s / 1e6 for s in self._sums]
        self._sums = [0, 0, 0, 0]
        self._pending = ms if self._pending is None else [a + b for a, b in zip(self._pending, ms)]

    def recorded(self):
        """The iteration's waits by metric name (taking them now if no optimizer step did), and
        forgets them; {} where not measured."""
        if self._pending is None:
            self.take()
        pending, self._pending = self._pending, None
        return dict(zip(METRICS, pending)) if pending is not None else {}
