"""Where this rank's code stands: every thread's Python stack, captured when the rank has made
no progress for a while (a stall), and when a collective fails (the process group's timeout, a
peer gone), and shipped to the run as a "stacks" record. `ddpscope-cli hang` and the Hang tab
cite the line each rank is at (docs/view-hang.md)."""
import json
import linecache
import os
import sys
import threading
import time

MAX_THREADS = 32  # the training thread first; a record stays well under the probes' batch size
MAX_FRAMES = 48  # the innermost ones; deeper recursion is counted, not listed
MAX_NAME = 200
MAX_CODE = 160
MAX_FILE = 400
# The first capture comes after this long without progress, or 10 iterations if longer.
DEFAULT_AFTER_S = 3.0


def _text(value, limit):
    """A string a record can carry: valid UTF-8 (a file name may hold undecodable bytes as
    surrogates), at most `limit` characters."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _frames(frame):
    """The innermost MAX_FRAMES frames from `frame` outwards, and how many more there were."""
    frames, depth = [], 0
    while frame is not None:
        if depth < MAX_FRAMES:
            code = frame.f_code
            line = frame.f_lineno or 0
            source = linecache.getline(code.co_filename, line).strip() if line else ""
            frames.append({"file": _text(code.co_filename, MAX_FILE), "line": line,
                           "function": _text(code.co_name, MAX_NAME), "code": _text(source, MAX_CODE)})
        depth += 1
        frame = frame.f_back
    return frames, depth - len(frames)


_OWN_THREADS = set()  # the watchers' idents: not the job's code


def capture():
    """Every thread's stack but the watchers', the main thread first."""
    threads = {t.ident: t for t in threading.enumerate()}
    main = threading.main_thread().ident
    out = []
    current = sys._current_frames()
    for ident in sorted(current, key=lambda i: (i != main, i)):
        if ident in _OWN_THREADS:
            continue
        thread = threads.get(ident)
        frames, omitted = _frames(current[ident])
        out.append({"thread": getattr(thread, "native_id", None) or ident,
                    "name": _text(thread.name if thread else "thread %d" % ident, MAX_NAME),
                    "frames": frames, "omitted": omitted})
        if len(out) == MAX_THREADS:
            break
    return out


def _after_seconds():
    """DDPSCOPE_STACKS_AFTER_S: seconds without progress before the stacks are taken (0: never)."""
    text = os.environ.get("DDPSCOPE_STACKS_AFTER_S", "")
    try:
        return float(text) if text else DEFAULT_AFTER_S
    except ValueError:
        sys.stderr.write("ddpscope: DDPSCOPE_STACKS_AFTER_S=%r is not a number of seconds; using %g\n"
                         % (text, DEFAULT_AFTER_S))
        return DEFAULT_AFTER_S


class StallWatcher:
    """A daemon thread that takes the stacks once per stall: when neither the iteration nor the
    last event's end has moved for the stall time (the longer of DDPSCOPE_STACKS_AFTER_S and 10
    of the rank's recent iterations)."""

    def __init__(self, session):
        self._session = session
        self._after = _after_seconds()
        self._stop = threading.Event()
        # Always running: it also answers the user's asks (`hang --ask`); 0 turns off stall captures only.
        self._thread = threading.Thread(target=self._watch, name="ddpscope stacks", daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()

    def stall_seconds(self):
        return max(self._after, 10 * self._session.median_iteration_s())

    def _watch(self):
        _OWN_THREADS.add(threading.get_ident())
        seen, since, taken = None, time.monotonic(), False
        while not self._stop.wait(min(0.5, self._after / 4) if self._after > 0 else 0.5):
            now = time.monotonic()
            progress = self._session.progress()
            if self._session.stacks_requested():
                self._session.record_stacks("asked for by the user", now - since if progress == seen else 0.0)
            if progress != seen:
                seen, since, taken = progress, now, False
            elif self._after > 0 and not taken and now - since >= self.stall_seconds():
                taken = True
                self._session.record_stacks("no progress for %.1f s" % (now - since), now - since)


def record(probes, iteration, reason, stalled_s):
    """Ships the stacks as one record ({"type":"stacks", ...}; docs/run-files.md)."""
    probes.record(json.dumps({"type": "stacks", "t_ns": probes.now_ns(), "reason": _text(reason, MAX_NAME),
                              "stalled_ns": int(stalled_s * 1e9), "iteration": iteration,
                              "threads": capture()}))
    probes.flush()  # a stalled rank may never ship another batch
