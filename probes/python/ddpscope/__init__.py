"""ddpscope's instrumentation of PyTorch jobs.

`ddpscope-cli torchrun SCRIPT` puts this package on the job's PYTHONPATH; its
sitecustomize starts recording at interpreter start and instruments torch when the
script imports it. The script itself needs no change; one optional call logs values
beside the iteration they belong to:

    import ddpscope
    ddpscope.log(loss=loss.item())

Outside such a job (no collector in the environment) importing this package and calling
log() do nothing.
"""
import json
import math

_session = None  # the running _session.Session, set by ddpscope._activate


def enabled():
    """Whether this process records into a ddpscope run."""
    return _session is not None


def log(**values):
    """Records each value (a number) as a metric of the current iteration."""
    if _session is None:
        return
    for name, value in values.items():
        value = float(value)
        _session.logged[name] = value
        # JSON has no NaN: the run file's form for a value that is not finite is "nan", "inf".
        _session.probes.record(json.dumps({"type": "metric", "iteration": _session.iteration, "name": name,
                                           "value": value if math.isfinite(value) else str(value)}))


def open_run(path, extension=None):
    """A read-only sqlite3 connection to a run file, spans queryable as the `spans` table:

        db = ddpscope.open_run("run.ddprun")
        db.execute("SELECT rank, count(*) FROM spans WHERE kind = 0 GROUP BY rank")
    """
    from ._runfile import open_run as _open_run
    return _open_run(path, extension)
