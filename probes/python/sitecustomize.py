"""Started with every interpreter of a job ddpscope launched (the launcher puts this folder
on PYTHONPATH and the collector's address in the environment). Anywhere else it does
nothing."""
import os

if os.environ.get("DDPSCOPE_COLLECTOR"):
    import ddpscope._activate  # noqa: F401  (recording starts on import)
