"""The probes' C interface (libddpscope_probes_c.so) through ctypes: one implementation of
batching, the run's token and clock alignment for the engine and for PyTorch jobs."""
import ctypes

from ._paths import library_path

_LIB_NAME = "libddpscope_probes_c.so"


def _find_library():
    """$DDPSCOPE_PROBES_LIB (the launcher sets it), else beside an installed or built tree."""
    return library_path(_LIB_NAME, "DDPSCOPE_PROBES_LIB") or _LIB_NAME  # else the loader's own search


class Probes:
    """The loaded library; every method is cheap when no session runs."""

    def __init__(self, path=None):
        lib = ctypes.CDLL(path or _find_library())
        i64, i32 = ctypes.c_int64, ctypes.c_int32
        lib.ddpscope_start.argtypes = [ctypes.c_int, ctypes.c_char_p]
        lib.ddpscope_stop.restype = i64
        lib.ddpscope_now_ns.restype = i64
        lib.ddpscope_kind.argtypes = [ctypes.c_char_p]
        lib.ddpscope_set_iteration.argtypes = [i64]
        lib.ddpscope_set_thread_name.argtypes = [ctypes.c_char_p]
        lib.ddpscope_event.argtypes = [ctypes.c_int, ctypes.c_char_p, i64, i64, i32, i32, i32, i32, i64, i64, i64]
        lib.ddpscope_record.argtypes = [ctypes.c_char_p]
        lib.ddpscope_last_error.restype = ctypes.c_char_p
        self._lib = lib
        self.now_ns = lib.ddpscope_now_ns
        self._event = lib.ddpscope_event
        self._kinds = {}

    def error(self):
        return self._lib.ddpscope_last_error().decode(errors="replace")

    def start(self, rank, device="cpu"):
        """True when the launcher's collector is there and recording started."""
        started = self._lib.ddpscope_start(rank, device.encode())
        if started < 0:
            raise RuntimeError("ddpscope: cannot start recording: " + self.error())
        return started == 1

    def stop(self):
        return self._lib.ddpscope_stop()

    def flush(self):
        self._lib.ddpscope_flush()

    def take_stacks_request(self):
        """True once after the user asked for every rank's stacks (`hang --ask`)."""
        return self._lib.ddpscope_take_stacks_request() == 1

    def kind(self, name):
        k = self._kinds.get(name)
        if k is None:
            k = self._lib.ddpscope_kind(name.encode())
            if k < 0:
                raise ValueError("ddpscope: no event kind '%s'" % name)
            self._kinds[name] = k
        return k

    def event(self, kind, name, begin_ns, end_ns, iteration=-1, param=-1, bucket=-1, peer=-1, nbytes=-1, seq=-1,
              id2=-1):
        self._event(self.kind(kind), name.encode(), begin_ns, end_ns, iteration, param, bucket, peer, nbytes, seq,
                    id2)

    def set_iteration(self, iteration):
        self._lib.ddpscope_set_iteration(iteration)

    def set_thread_name(self, name):
        self._lib.ddpscope_set_thread_name(name.encode())

    def record(self, text):
        if self._lib.ddpscope_record(text.encode()) < 0:
            raise ValueError("ddpscope: " + self.error())
