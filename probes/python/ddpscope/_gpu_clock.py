"""When the GPU finished a collective on CUDA tensors (NCCL). torch completes such a
collective's future as soon as the work is queued, and a call without async_op returns
then too: the host's clock says when the op was issued, not when it ran. So its end is
taken from the GPU: an event recorded on the stream that waits for the collective (the
current one, in a CUDA future's callback or after the call), read back without blocking
once the GPU has passed it, and placed on the host's clock through an anchor event whose
host time is known. Nothing on the training's threads waits for the GPU."""
import threading
import time

import torch

# How often the anchor is taken again, so the two clocks' drift stays under a few us.
_REANCHOR_NS = 1_000_000_000


class _Anchor:
    """An event on an idle stream of its own, timed on the GPU and placed on the host clock
    between the host times before its record and after its completion."""

    def __init__(self, probes, device):
        self.stream = torch.cuda.Stream(device=device)
        self.probes = probes
        self.take()

    def take(self):
        event = torch.cuda.Event(enable_timing=True)
        before = self.probes.now_ns()
        event.record(self.stream)
        event.synchronize()  # waits for this stream alone, which holds nothing else
        after = self.probes.now_ns()
        self.event, self.host_ns = event, (before + after) // 2

    def host_time(self, event):
        return self.host_ns + int(self.event.elapsed_time(event) * 1e6)


class GpuClock:
    """Reads the GPU's ends on a thread of its own (the timeline's lane for them), which
    sleeps while nothing is pending and polls every few ms while something is."""

    POLL_S = 0.002

    def __init__(self, probes):
        self.probes = probes
        self._ready = threading.Condition()
        self._anchors = {}  # device index -> _Anchor, used by the thread alone
        self._pending = []  # (device index, event, callback taking the end's host ns)
        self._closing = False
        self._thread = None

    def after_current_stream(self, device, callback):
        """Calls callback(end_ns), on the clock's thread, once the GPU has run what the
        current stream of `device` (a torch.device of type cuda) holds so far."""
        index = device.index if device.index is not None else torch.cuda.current_device()
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(index))
        with self._ready:
            if self._closing:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ddpscope GPU clock", daemon=True)
                self._thread.start()
            self._pending.append((index, event, callback))
            self._ready.notify()

    def close(self, timeout_s=10):
        """At exit: what is pending is waited for and reported, then the thread ends."""
        with self._ready:
            self._closing = True
            self._ready.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _run(self):
        self.probes.set_thread_name("comm: GPU completions")
        while True:
            with self._ready:
                while not self._pending and not self._closing:
                    self._ready.wait()
                if not self._pending:
                    return
                index, event, callback = self._pending[0]
                closing = self._closing
            if closing:
                event.synchronize()
            elif not event.query():
                time.sleep(self.POLL_S)
                continue
            with self._ready:
                self._pending.pop(0)
            try:
                callback(self._host_time(index, event))
            except Exception:  # a lost end must not stop the ones after it
                pass

    def _host_time(self, index, event):
        anchor = self._anchors.get(index)
        if anchor is None:
            anchor = self._anchors[index] = _Anchor(self.probes, index)
        elif self.probes.now_ns() - anchor.host_ns > _REANCHOR_NS:
            anchor.take()
        return anchor.host_time(event)


def cuda_device_of(value):
    """The CUDA device a collective's tensor (or first of a list) is on, else None."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
    if isinstance(value, torch.Tensor) and value.is_cuda:
        return value.device
    return None
