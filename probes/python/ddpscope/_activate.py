"""Imported by sitecustomize in a job ddpscope launched: starts recording and instruments
torch once the script imports it."""
import importlib.abc
import importlib.machinery
import json
import os
import sys

import ddpscope
from ddpscope import _launcher
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
    from ddpscope import _collectives, _links, _torch_api, _torch_ddp
    _torch_api.check()
    session = ddpscope._session
    session.numbering = _collectives.instrument(session)
    _torch_ddp.instrument(session)
    _links.instrument(session)


def activate():
    # torchrun's agent: not a rank, whatever its environment says.
    if _launcher.is_launcher_agent(getattr(sys, "orig_argv", None)):
        return
    try:
        where = _launcher.placement()
    except _launcher.LauncherError as e:
        # A rank filed under another's would mislead: record nothing, say why once, and let
        # the script run as it would have.
        sys.stderr.write("ddpscope: this process is not recorded: %s\n" % e)
        return
    probes = Probes()
    if not probes.start(where.rank, os.environ.get("DDPSCOPE_DEVICE", "cpu")):
        return
    # Started by `ddpscope-cli torchrun`: the launcher follows the job through what it says.
    reporter = Reporter(where.rank) if os.environ.get("DDPSCOPE_TORCHRUN") == "1" else None
    ddpscope._session = Session(probes, where.rank, reporter, world=where.world_size)
    # Where the launcher placed this rank, and which attempt it is (torchrun's restarts):
    # the first record, so that the collector knows the attempt before any iteration.
    import socket
    probes.record(json.dumps({"type": "placement", "launcher": where.launcher, "local_rank": where.local_rank,
                              "node": where.node, "restart": ddpscope._session.restart,
                              "max_restarts": ddpscope._session.max_restarts, "host": socket.gethostname(),
                              "pid": os.getpid(), "t_ns": probes.now_ns()}))
    # Which launcher placed the ranks, in the run's settings (the same on every rank).
    probes.record(json.dumps({"type": "settings", "world_size": where.world_size,
                              "values": {"launcher": where.launcher}}))
    if "torch" in sys.modules:
        _instrument_torch()
    else:
        sys.meta_path.insert(0, _AfterTorchImport(_instrument_torch))


activate()
