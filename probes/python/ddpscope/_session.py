"""One rank's recording: the probes and the training loop's iterations as this process
sees them (an iteration runs from one DDP forward to the next)."""
import atexit
import threading


class Session:
    def __init__(self, probes, rank, reporter=None):
        self.probes = probes
        self.rank = rank
        self.reporter = reporter  # the launcher's progress (ddpscope-cli torchrun), or None
        self.iteration = 0  # 0: before the first forward
        self.numbering = None  # each process group's collective numbers (_collectives)
        self.logged = {}  # what ddpscope.log() was given this iteration
        self._iteration_begin = None
        self._batch = 0
        self._last_end = 0
        self._lock = threading.Lock()
        self._named = threading.local()
        probes.set_thread_name("compute")
        atexit.register(self.close)

    def name_this_thread(self, name):
        """Names the calling thread once (a comm hook's callbacks run on the backend's)."""
        if not getattr(self._named, "done", False):
            self.probes.set_thread_name(name)
            self._named.done = True

    def note_end(self, t_ns):
        with self._lock:
            self._last_end = max(self._last_end, t_ns)

    def begin_iteration(self, t_ns, batch=0):
        """A DDP forward starts: the iteration before it, if any, ends with its last event.
        `batch`: the samples this rank's forward takes (0: not known)."""
        self._end_iteration()
        self.iteration += 1
        self._iteration_begin = t_ns
        self._batch = batch
        self.probes.set_iteration(self.iteration)

    def _end_iteration(self):
        if self._iteration_begin is None:
            return
        with self._lock:
            end = max(self._last_end, self._iteration_begin + 1)
        self.probes.event("iteration", "iteration", self._iteration_begin, end, iteration=self.iteration)
        if self.reporter is not None:
            self.reporter.iteration_done(self.iteration, (end - self._iteration_begin) / 1e9, self._batch,
                                         self.logged.get("loss"))
        self.logged = {}
        self._iteration_begin = None

    def close(self):
        """At exit: the last iteration ends, and what is left is shipped."""
        if self.probes is None:
            return
        self._end_iteration()
        dropped = self.probes.stop()
        self.probes = None
        if self.reporter is not None:
            self.reporter.finished(dropped)
