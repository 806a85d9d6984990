"""Which launcher started this process, and where it placed it: the rank, the rank on its
node, the node, the world's size and the restart. Jobs are started by the cluster's own
launcher, not only by `ddpscope-cli torchrun`; each says the same things in its own words.
They are read in this order, the first that says a rank winning:

  - torchrun (and `ddpscope-cli torchrun`, which sets torchrun's variables): RANK,
    LOCAL_RANK, GROUP_RANK, WORLD_SIZE, TORCHELASTIC_RESTART_COUNT;
  - Slurm's srun: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURM_NTASKS;
  - Open MPI's mpirun: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
    OMPI_COMM_WORLD_SIZE (no node number);
  - MPICH's (Hydra) mpiexec: PMI_RANK, MPI_LOCALRANKID, PMI_SIZE.

A value a launcher sets that is not a whole number is an error in the job's setup: said,
never guessed around (a wrong rank would file one rank's events under another's).

The launcher's own process (torchrun's agent) inherits the job's environment too, and no
rank: it is not recorded (it was filed as rank 0, or as srun's task under Slurm, and its
end overwrote that rank's)."""
import collections
import os

Placement = collections.namedtuple("Placement", "launcher rank local_rank node world_size restart")

# (launcher, rank, local rank, node, world size): the variable names, None where the
# launcher has none.
_LAUNCHERS = (
    ("torchrun", "RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE"),
    ("slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", None, "OMPI_COMM_WORLD_SIZE"),
    ("mpich", "PMI_RANK", "MPI_LOCALRANKID", None, "PMI_SIZE"),
)


class LauncherError(ValueError):
    """A launcher's variable that is not a whole number (or a rank past the world)."""


def _number(environ, name, minimum=0):
    if name is None or name not in environ:
        return None
    text = environ[name].strip()
    try:
        value = int(text)
    except ValueError:
        raise LauncherError("%s=%r is not a whole number" % (name, environ[name])) from None
    if value < minimum:
        raise LauncherError("%s=%d is below %d" % (name, value, minimum))
    return value


def placement(environ=None):
    """This process's Placement; launcher "none" (rank 0 of 1) when no launcher says."""
    environ = os.environ if environ is None else environ
    restart = _number(environ, "TORCHELASTIC_RESTART_COUNT") or 0
    for launcher, rank_var, local_var, node_var, world_var in _LAUNCHERS:
        rank = _number(environ, rank_var)
        if rank is None:
            continue
        world = _number(environ, world_var, minimum=1)
        if world is not None and rank >= world:
            raise LauncherError("%s=%d is not below %s=%d" % (rank_var, rank, world_var, world))
        local = _number(environ, local_var)
        node = _number(environ, node_var)
        if launcher == "torchrun" and environ.get("DDPSCOPE_TORCHRUN") == "1":
            launcher = "ddpscope-cli torchrun"
        return Placement(launcher, rank, rank if local is None else local, -1 if node is None else node,
                         1 if world is None else world, restart if launcher.endswith("torchrun") else 0)
    return Placement("none", 0, 0, -1, 1, 0)


# How a launcher's agent is started: torchrun's entry point, or python -m with its module.
_AGENT_SCRIPTS = ("torchrun",)
_AGENT_MODULES = ("torch.distributed.run", "torch.distributed.launch")


def is_launcher_agent(argv):
    """Whether the command line `argv` (sys.orig_argv: the interpreter first) starts a
    launcher's agent rather than a rank's script: its script (the first argument after the
    interpreter's options) or its -m module is torchrun's."""
    args = list(argv or [])
    if args and os.path.basename(args[0]) in _AGENT_SCRIPTS:
        return True
    for i, arg in enumerate(args[1:], start=1):
        if arg == "-m":
            return i + 1 < len(args) and args[i + 1] in _AGENT_MODULES
        if not arg.startswith("-"):
            return os.path.basename(arg) in _AGENT_SCRIPTS
    return False
