"""What a rank of a `ddpscope-cli torchrun` job tells its launcher, in the lines ddpscope's
own ranks write (probes/runtime/job_events.h: "@ddpscope " and one JSON object): rank 0
its start, each iteration and its end on stdout; every rank its error and its probes'
losses on stderr. The launcher shows progress from them, names the rank that failed and
why, and knows when every rank is done."""
import json
import math
import os
import sys
import time

_PREFIX = "@ddpscope "
_LINE_INTERVAL_S = 0.1


def _emit(stream, event):
    try:
        stream.write(_PREFIX + json.dumps(event) + "\n")
        stream.flush()
    except Exception:  # a closed stream at exit: the launcher reads mpirun's words then
        pass


# torch wraps an error raised in a future's callback (a failed allreduce under DDP) once per
# callback, and appends the Python frames: the first error is the one to say.
_CALLBACK_ERROR = "Got the following error when running the callback: "


def innermost(text):
    """The first error of one that torch wrapped in callbacks, without the Python frames."""
    text = text.split("\n\nAt:")[0]
    while text.startswith(_CALLBACK_ERROR):
        text = text[len(_CALLBACK_ERROR):]
        kind, sep, rest = text.partition(": ")
        if sep and kind.isidentifier():
            text = rest
    return text


def _message(exc_type, exc):
    text = " ".join(innermost(str(exc)).split())
    if len(text) > 600:
        text = text[:600] + " ..."
    message = "%s: %s" % (exc_type.__name__, text) if text else exc_type.__name__
    if issubclass(exc_type, ImportError) and getattr(exc, "name", None) == "torch":
        message += " (the interpreter has no torch: pass --python with one that has)"
    return message


class Reporter:
    def __init__(self, rank):
        self.rank = rank
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.started = None  # time.monotonic() of the first DDP forward
        self.rate = 0.0
        self.failed = False
        self._last_line = 0.0  # time.monotonic() of the last progress line
        self._unsent = None  # the latest progress not yet written
        self._collective = {}  # the failed collective, typed: op, seq, timed_out
        self._out = sys.__stdout__
        self._err = sys.__stderr__
        hook = sys.excepthook

        def report_then_print(exc_type, exc, tb):
            hook(exc_type, exc, tb)
            if not issubclass(exc_type, KeyboardInterrupt):
                self.failed = True
                _emit(self._err, dict({"event": "error", "rank": self.rank, "message": _message(exc_type, exc)},
                                      **self._collective))

        sys.excepthook = report_then_print

    def collective_failed(self, op, seq, timed_out):
        """The collective this rank's failure ended: its error event says so, typed."""
        if not self._collective:
            self._collective = {"op": op, "seq": seq, "timed_out": bool(timed_out)}

    def start(self, describe, backend):
        """The first DDP forward: the job's training starts."""
        if self.started is not None:
            return
        self.started = time.monotonic()
        if self.rank == 0:
            _emit(self._out, {"event": "start", "world_size": self.world, "backend": backend, "describe": describe})

    def iteration_done(self, iteration, seconds, batch, loss):
        if self.rank != 0:
            return
        now = batch * self.world / max(seconds, 1e-9) if batch else 0.0
        self.rate = now if iteration == 1 else 0.9 * self.rate + 0.1 * now  # smoothed, as the engine's
        event = {"event": "progress", "iter": iteration, "samples_per_s": self.rate}
        if loss is not None:
            # As the engine writes a loss that is not finite ("nan", "inf"): JSON has no NaN.
            event["loss"] = loss if math.isfinite(loss) else str(loss)
        # A line through mpirun's pipe costs ~0.3 ms of the training thread (measured with
        # cProfile on 1 ms steps), and the launcher redraws at most every 100 ms: the first
        # iteration, a loss that is not finite, and then one line per 100 ms; the last at exit.
        t = time.monotonic()
        nonfinite = loss is not None and not math.isfinite(loss)
        if iteration == 1 or nonfinite or t - self._last_line >= _LINE_INTERVAL_S:
            _emit(self._out, event)
            self._last_line, self._unsent = t, None
        else:
            self._unsent = event

    def finished(self, dropped):
        """At exit: rank 0 says training is done (unless the script failed), and every rank
        how many of its events were lost."""
        if self._unsent is not None:
            _emit(self._out, self._unsent)  # the last iteration's count, loss and rate
            self._unsent = None
        if self.rank == 0 and self.started is not None and not self.failed:
            _emit(self._out, {"event": "done", "seconds": time.monotonic() - self.started})
        _emit(self._err, {"event": "probes", "rank": self.rank, "dropped": max(int(dropped), 0)})
