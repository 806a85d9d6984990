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


_run_shadowed_sitecustomize()
if os.environ.get("DDPSCOPE_COLLECTOR"):
    import ddpscope._activate  # noqa: F401  (recording starts on import)
