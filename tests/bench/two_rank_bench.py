"""What the two-rank comparisons with PyTorch share (run_ddp_step.py, run_zero.py): the
command line, finding the built benchmark, running it under mpirun, and running a
PyTorch script as one process per rank with torchrun's environment set by hand (Debian's
torch.distributed.run fails under Python 3.11). Each side prints its result as the last
line of rank 0's output, one JSON object."""
import argparse
import json
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def arguments(default_steps):
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)  # this shared machine is noisy
    parser.add_argument("--steps", type=int, default=default_steps)
    return parser.parse_args()


def built(build, name):
    """The benchmark program `name` of the build folder, built first: benchmarks are not part
    of the default build (tests/bench/CMakeLists.txt), and an existing one is brought up to
    date with the libraries it measures."""
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        sys.exit(f"{build} is not a build folder: build the project first (bash packaging/build.sh)")
    made = subprocess.run(["cmake", "--build", build, "--target", name], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if made.returncode != 0:
        sys.exit(f"building {name} failed:\n{made.stdout[-3000:]}")
    return os.path.join(build, "tests", "bench", name)


def single_thread_env():
    return dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def run_ours(binary, args, env):
    cmd = ["mpirun", "-np", "2", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    out = subprocess.run(cmd + [binary] + [str(a) for a in args], env=env, check=True, capture_output=True,
                         text=True).stdout
    return last_json(out)


def run_torch(script, args, env, what, quiet=False):
    port = str(free_port())
    procs = []
    for rank in range(2):
        e = dict(env, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, script)] + [str(a) for a in args],
                                      env=e, stdout=subprocess.PIPE, text=True,
                                      stderr=subprocess.DEVNULL if quiet else None))
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit(f"the PyTorch side failed ({what})")
    return last_json(outs[0])
