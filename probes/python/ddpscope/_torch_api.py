"""What ddpscope reads of torch beyond its public API, in one place and checked. A torch
that renamed or removed one of these still runs the user's script: ddpscope records what
it still can and says once, on stderr, what it cannot. The versions it was tested with are
checked the same way."""
import re
import sys

import torch

# Tested with Debian 12's 1.13 and PyTorch 2 releases; others are tried, with a warning.
_TESTED = ((1, 13), (2, 99))

# (what is read, what is lost without it)
CHECK_COMM_HOOK = ("DistributedDataParallel._check_comm_hook",
                   "a comm hook registered while recording skips DDP's own check of its signature")
NAME_COMM_HOOK = ("DDP's logger._set_comm_hook_name", "DDP's logger does not name the registered comm hook")
QUEUE_CALLBACK = ("torch.autograd.Variable._execution_engine.queue_callback",
                  "backward ends when backward() returns (torch.autograd.grad's have none)")
FIRST_BUCKET = ("torch.distributed._DEFAULT_FIRST_BUCKET_BYTES", "the first bucket's cap is taken as 1 MiB")
GROUP_TIMEOUT = ("ProcessGroup.options._timeout",
                 "a failed collective counts as timed out only once it waited torch's default timeout")
GROUP_NAMES = ("torch.distributed.distributed_c10d._pg_names",
               "collectives of a group other than the default are named 'group ?'")

_reported = set()


def _warn(lines):
    sys.stderr.write("ddpscope: warning: " + "\n  ".join(lines) + "\n")
    sys.stderr.flush()


def _missing(item):
    """Said once per item (check() says at once all it finds missing at the start)."""
    if item in _reported:
        return
    _reported.add(item)
    _warn(["this torch (%s) has no %s, which ddpscope reads; the job runs and is recorded, but %s"
           % (torch.__version__, item[0], item[1])])


def _version(text):
    """(1, 13) of "1.13.0a0+git", (0, 0) when it cannot be read."""
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _has_queue_callback():
    engine = getattr(getattr(torch.autograd, "Variable", None), "_execution_engine", None)
    return callable(getattr(engine, "queue_callback", None))


def check():
    """At the start: the version, and each thing read; one warning for all that is missing."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    import torch.distributed as dist
    lines = []
    version = _version(torch.__version__)
    if not _TESTED[0] <= version <= _TESTED[1]:
        lines.append("ddpscope was tested with torch 1.13 to 2.x; this is %s, so what it records may be incomplete"
                     % torch.__version__)
    logger = getattr(getattr(torch._C, "_distributed_c10d", None), "Logger", None)
    present = {CHECK_COMM_HOOK: callable(getattr(DDP, "_check_comm_hook", None)),
               NAME_COMM_HOOK: logger is not None and hasattr(logger, "_set_comm_hook_name"),
               QUEUE_CALLBACK: _has_queue_callback(),
               FIRST_BUCKET: isinstance(getattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES", None), int),
               GROUP_NAMES: isinstance(getattr(dist.distributed_c10d, "_pg_names", None), dict)}
    missing = [item for item, ok in present.items() if not ok]
    for item in missing:
        _reported.add(item)
    if missing:
        lines.append("this torch (%s) lacks what ddpscope reads; the job runs and is recorded, but:" % torch.__version__)
        lines.extend("- without %s, %s" % item for item in missing)
    if lines:
        _warn(lines)


def check_comm_hook(ddp, hook):
    """DDP's own check of a hook's signature, as its register_comm_hook makes it."""
    fn = getattr(ddp, "_check_comm_hook", None)
    if callable(fn):
        fn(hook)
    else:
        _missing(CHECK_COMM_HOOK)


def name_comm_hook(ddp, name):
    fn = getattr(getattr(ddp, "logger", None), "_set_comm_hook_name", None)
    if callable(fn):
        fn(name)
    else:
        _missing(NAME_COMM_HOOK)


def queue_callback(callback):
    """Runs `callback` when the autograd engine finishes this backward; False when it cannot."""
    if _has_queue_callback():
        torch.autograd.Variable._execution_engine.queue_callback(callback)
        return True
    _missing(QUEUE_CALLBACK)
    return False


def first_bucket_bytes():
    import torch.distributed as dist
    value = getattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES", None)
    if isinstance(value, int):
        return value
    _missing(FIRST_BUCKET)
    return 1 << 20


def group_timeout_s(group):
    """The group's timeout in seconds (what init_process_group or new_group was given)."""
    import torch.distributed as dist
    options = getattr(group, "options", None)
    if options is None and hasattr(group, "_get_backend"):  # torch 2: the backend holds them
        try:
            options = getattr(group._get_backend(torch.device("cpu")), "options", None)
        except Exception:  # no CPU backend (NCCL alone)
            options = None
    timeout = getattr(options, "_timeout", None)
    if timeout is None:
        _missing(GROUP_TIMEOUT)
        timeout = dist.default_pg_timeout
    return timeout.total_seconds()


def group_name(group):
    import torch.distributed as dist
    names = getattr(dist.distributed_c10d, "_pg_names", None)
    if not isinstance(names, dict):
        _missing(GROUP_NAMES)
        return "?"
    return names.get(group, "?")
