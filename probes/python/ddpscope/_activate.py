"""Imported by sitecustomize in a job ddpscope launched: starts recording and instruments
torch once the script imports it."""
import importlib.abc
import importlib.machinery
import os
import sys

import ddpscope
from ddpscope._probes import Probes
from ddpscope._report import Reporter
from ddpscope._session import Session


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Lets torch load as it would, then instruments it."""

    def __init__(self, on_loaded):
        self._on_loaded = on_loaded

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)  # once, and never for the lookup below
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        on_loaded = self._on_loaded

        def exec_then_instrument(module):
            exec_module(module)
            on_loaded()

        spec.loader.exec_module = exec_then_instrument
        return spec


def _instrument_torch():
    from ddpscope import _collectives, _torch_api, _torch_ddp
    _torch_api.check()
    session = ddpscope._session
    session.numbering = _collectives.instrument(session)
    _torch_ddp.instrument(session)


def activate():
    probes = Probes()
    rank = int(os.environ.get("RANK", "0"))
    if not probes.start(rank, os.environ.get("DDPSCOPE_DEVICE", "cpu")):
        return
    # Started by `ddpscope-cli torchrun`: the launcher follows the job through what it says.
    reporter = Reporter(rank) if os.environ.get("DDPSCOPE_TORCHRUN") == "1" else None
    ddpscope._session = Session(probes, rank, reporter)
    if "torch" in sys.modules:
        _instrument_torch()
    else:
        sys.meta_path.insert(0, _AfterTorchImport(_instrument_torch))


activate()
