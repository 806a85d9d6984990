"""Started with every interpreter of a job ddpscope launched (the launcher puts this folder
on PYTHONPATH and the collector's address in the environment). Anywhere else it only
hands over to the sitecustomize it shadows."""
import importlib.util
import os
import sys


def _run_shadowed_sitecustomize():
    """Python imports one sitecustomize: the user's or the system's, later on sys.path, runs
    as it would have without this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        if not folder or os.path.abspath(folder) == here:
            continue
        candidate = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_ddpscope_shadowed_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


def _print_whole_lines():
    """Under ddpscope's torchrun, stdout is a pipe to mpirun, which merges the ranks' pipes.
    Python fills a pipe in blocks (the lines come at exit), and unbuffered (-u or
    PYTHONUNBUFFERED, which many job scripts set) writes print()'s pieces one by one, so two
    ranks' lines mix mid-line. A terminal's line buffering gives each line as one write, as
    it happens; an explicit flush still writes at once."""
    if os.environ.get("DDPSCOPE_LINE_BUFFERED") != "1":
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(write_through=False, line_buffering=True)
        except (AttributeError, ValueError, OSError):
            pass  # a stream replaced by the user's sitecustomize keeps its own buffering


_run_shadowed_sitecustomize()
_print_whole_lines()
if os.environ.get("DDPSCOPE_COLLECTOR"):
    import ddpscope._activate  # noqa: F401  (recording starts on import)
