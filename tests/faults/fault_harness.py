"""The fault suite's harness, shared by every scenario (run_faults.py and the modules beside
it, which reach it as run_faults's names): a job launched by `ddpscope-cli` with a tag in
its environment and its output timestamped as it arrives; its processes found through
/proc by that tag, waited for and killed if left behind; the run file's integrity and
status; the arguments of the suite's usual jobs; the checks every scenario shares; and where
each rank's stack says its code stood.
A scenario's Result says what it expected, what it saw and how long detection took."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import threading
import time
import uuid

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "DDPSCOPE_PG_TIMEOUT_MS": "4000"}


class Job:
    """A launched job, its output lines timestamped as they arrive."""

    def __init__(self, build, args, env=None, tag=None):
        self.tag = tag or uuid.uuid4().hex
        e = dict(os.environ, **MPI_ENV, DDPSCOPE_FAULT_SUITE_TAG=self.tag, **(env or {}))
        self.start = time.monotonic()
        self.proc = subprocess.Popen([os.path.join(build, "bin", "ddpscope-cli")] + args, env=e,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines = []  # (seconds since start, line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic() - self.start, line.rstrip("\n")))

    def wait(self, limit):
        try:
            self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return None
        self.reader.join(timeout=5)
        return self.proc.returncode

    def text(self):
        return "\n".join(l for _, l in self.lines)

    def first_time(self, pattern):
        for t, l in self.lines:
            if re.search(pattern, l):
                return t
        return None


def tagged_pids(tag):
    """Processes whose environment carries the job's tag (the launcher, mpirun, ranks,
    the collector), with their command names."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"DDPSCOPE_FAULT_SUITE_TAG={tag}".encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/comm") as f:
                found.append((int(pid), f.read().strip()))
        except OSError:
            continue
    return found


def wait_for_pid(tag, comm, rank=None, limit=30):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        for pid, name in tagged_pids(tag):
            if name != comm:
                continue
            if rank is not None:
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if f"OMPI_COMM_WORLD_RANK={rank}\0".encode() not in f.read():
                            continue
                except OSError:
                    continue
            return pid
        time.sleep(0.05)
    return None


def leftovers(tag, grace=10):
    """The job's processes still running after `grace` (killed then), once it ended; and the
    files of its mpirun if that died before cleaning up (remove_dead_mpiruns_files)."""
    end = time.monotonic() + grace
    while time.monotonic() < end:
        left = tagged_pids(tag)
        if not left:
            remove_dead_mpiruns_files()
            return []
        time.sleep(0.2)
    left = tagged_pids(tag)
    for pid, _ in left:  # clean up after a failed scenario
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    remove_dead_mpiruns_files()
    return left


def _entries(path):
    """The names in a directory, none when it is gone or unreadable (OpenMPI removes its empty
    per-user directory when a job beside ends)."""
    try:
        return os.listdir(path)
    except OSError:
        return []


def _family(session):
    """The job family a session directory's contact.txt names ("<family << 16>.0;..."), or None."""
    try:
        with open(os.path.join(session, "contact.txt")) as f:
            return int(f.read().split(".", 1)[0]) >> 16
    except (OSError, ValueError):
        return None


def remove_dead_mpiruns_files():
    """OpenMPI's files of mpiruns that died before their own cleanup (the scenarios kill the
    launcher, mpirun with it): each session directory (<tmpdir>/ompi.<node>.<uid>/pid.<pid>,
    ~8 MB) whose mpirun is gone, and its job family's shared-memory segments. The launcher
    removes them when it killed mpirun itself (engine/apps/mpirun_leftovers.h), not when it
    was killed. A directory whose pid runs stays: CTest starts the MPI tests by mpiexec, and
    a reused pid only puts the removal off to a later scenario. A family is 16 bits: the
    segments of one a running job shares stay too."""
    base = (os.environ.get("OMPI_MCA_orte_tmpdir_base") or os.environ.get("TMPDIR") or os.environ.get("TEMP")
            or os.environ.get("TMP") or "/tmp")
    suffix = ".%d" % os.getuid()
    for top in _entries(base):
        top_path = os.path.join(base, top)
        if not (top.startswith("ompi.") and top.endswith(suffix)) or os.path.islink(top_path):
            continue
        node = top[len("ompi."):-len(suffix)]
        sessions = [e for e in _entries(top_path) if e.startswith("pid.") and e[4:].isdigit()]
        running = {_family(os.path.join(top_path, e)) for e in sessions if os.path.exists("/proc/" + e[4:])}
        for entry in sessions:
            session = os.path.join(top_path, entry)
            family = _family(session)
            if os.path.exists("/proc/" + entry[4:]) or os.path.islink(session) or family is None:
                continue  # running, a link, or not one to tell apart: left
            prefix = "vader_segment.%s%s." % (node, suffix)
            for name in _entries("/dev/shm") if family not in running else []:
                job, _, rank = name[len(prefix):].partition(".") if name.startswith(prefix) else ("", "", "")
                if job and rank.isdigit() and all(c in "0123456789abcdef" for c in job) and \
                        int(job, 16) >> 16 == family:
                    try:
                        os.remove(os.path.join("/dev/shm", name))
                    except OSError:
                        pass
            subprocess.run(["rm", "-rf", session], check=False)


def integrity(run):
    if not os.path.exists(run):
        return "no file"
    try:
        db = sqlite3.connect(f"file:{run}?mode=ro", uri=True)
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.Error as e:
        return f"error: {e}"


def run_status(run):
    try:
        db = sqlite3.connect(f"file:{run}?mode=ro", uri=True)
        return db.execute("SELECT status, message FROM runs").fetchone()
    except sqlite3.Error:
        return None, None


def typed_failure_problems(run, rank, op, timed_out=True, build=None):
    """The failed rank and the collective its failure ended, as the run file keeps them typed
    (schema 16: the verdict reads these, never the message's words): `rank`, `op`, and whether
    its wait timed out (a peer's death ends it at once: not timed out). With `build`, also that
    its number is the oldest collective the rank started and never finished (read from its
    spans through the build's SQLite extension): the one it is stuck in."""
    try:
        db = sqlite3.connect(f"file:{run}?mode=ro", uri=True)
        row = db.execute("SELECT failed_rank, failed_op, failed_seq, failed_timed_out FROM runs").fetchone()
    except sqlite3.Error as e:
        return [f"typed failure not readable: {e}"]
    if row is None or row[0] != rank or row[1] is None or not row[1].startswith(op) or row[2] is None or \
            row[3] != int(timed_out):
        return [f"typed failure (failed_rank, failed_op, failed_seq, failed_timed_out) = {row}; want rank {rank}, "
                f"{op}, {'timed out' if timed_out else 'not timed out'}"]
    if build is not None:
        db.enable_load_extension(True)
        db.load_extension(os.path.join(build, "lib", "libddpscope_sqlite.so"))
        seqs = "SELECT s.seq FROM spans s JOIN kinds k ON k.kind = s.kind WHERE s.rank = ? AND k.name = ?"
        started = {seq for (seq,) in db.execute(seqs, (rank, "pg_op_start"))}
        ended = {seq for (seq,) in db.execute(seqs, (rank, "pg_op"))}
        unfinished = sorted(started - ended)
        if unfinished and row[2] != unfinished[0]:
            return [f"typed failure names #{row[2]}; rank {rank} started and never finished {unfinished}: it is stuck "
                    f"in #{unfinished[0]}"]
    return []


def train_args(run, iters=40, extra=()):
    return ["train", "--np", "2", "--model", "mlp", "--iters", str(iters), "--batch", "16", "--width", "256",
            "--depth", "4", "--progress", "lines", "--log-every", "1000", "--out", run] + list(extra)


class Result:
    def __init__(self, name, expected, must_hold=True):
        self.name, self.expected, self.must_hold = name, expected, must_hold
        self.ok, self.observed, self.detection = False, "", None
        self.skipped = False

    def conclude(self, problems, observed_when_ok):
        """The scenario held when nothing went wrong; the observed column says what did."""
        self.ok = not problems
        self.observed = "; ".join(problems) if problems else observed_when_ok
        return self

    def mark(self):
        if self.skipped:
            return "SKIP"
        return "ok" if self.ok else ("FAIL" if self.must_hold else "open")


def check_common(r, job, code, run, limit, want_failure=True, names=()):
    """The checks every scenario shares; returns the problems found."""
    problems = []
    if code is None:
        problems.append(f"still running after {limit} s")
        os.killpg(job.proc.pid, signal.SIGKILL)
        job.wait(10)
    elif want_failure and code == 0:
        problems.append("exit 0")
    elif not want_failure and code != 0:
        problems.append(f"exit {code}")
    text = job.text()
    for n in names:
        if not re.search(n, text):
            # What it printed instead, so a failure that does not come back says what it was.
            problems.append(f"no '{n}' in the output, which ended: {text[-500:]!r}")
    verdict = integrity(run)
    if verdict != "ok":
        problems.append(f"integrity_check: {verdict}")
    left = leftovers(job.tag)
    if left:
        problems.append("left behind: " + ", ".join(f"{c} {p}" for p, c in left))
    return problems


def stack_problems(build, run, expect):
    """Where `hang --json` says each rank's code stood at its latest stack (issue 66): every rank
    of `expect` must have one, its own code's place containing expect[rank]."""
    done = subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "hang", "--json", run], capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0:
        return [f"hang --json failed: {done.stderr[-300:]}"]
    stacks = {c["rank"]: c for c in json.loads(done.stdout)["stacks"]}
    problems = []
    for rank, place in expect.items():
        if rank not in stacks:
            problems.append(f"no stack of rank {rank} (ranks with one: {sorted(stacks)})")
        elif place not in stacks[rank]["where"]:
            problems.append(f"rank {rank}'s stack is at {stacks[rank]['where']!r}, not in {place}")
    return problems


def unanswering_problems(build, run, expect):
    """The ranks `hang --json` says did not answer for their stack: each rank of `expect` must be
    among them, its reason containing expect[rank] (a finished run: from the states the launcher
    noted as it ended the job)."""
    done = subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "hang", "--json", run], capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0:
        return [f"hang --json failed: {done.stderr[-300:]}"]
    said = {u["rank"]: u["why"] for u in json.loads(done.stdout).get("unanswering", [])}
    return [f"rank {rank} not said to have not answered ({why!r}); said: {said}" for rank, why in expect.items()
            if why not in said.get(rank, "")]


def last_error_line(job):
    for _, l in reversed(job.lines):
        if "error" in l.lower() or "timeout" in l.lower() or "died" in l.lower() or "signal" in l.lower():
            return l.strip()[:220]
    return job.lines[-1][1][:220] if job.lines else ""


def wait_training(job, limit=60):
    """Until the job trains (not still starting), and a second more."""
    end = time.monotonic() + limit
    while job.first_time(r"^training ") is None and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(1.0)


def wait_for_line(job, pattern, limit=60):
    """Until the job prints a line matching `pattern` (or ends, or `limit` s pass)."""
    end = time.monotonic() + limit
    while job.first_time(pattern) is None and time.monotonic() < end and job.proc.poll() is None:
        time.sleep(0.1)
    return job.first_time(pattern) is not None


def diagnosis_line(job):
    return next((l for _, l in job.lines if l.startswith("diagnosis:")), "no diagnosis")


def remote_args(run, iters=30, np=3):
    return ["train", "--np", str(np), "--model", "transformer", "--remote-embedding", "--batch", "8", "--width", "32",
            "--depth", "1", "--iters", str(iters), "--progress", "lines", "--log-every", "1000", "--out", run]


def listening_loopback_ports(pid):
    """TCP ports the process listens on at 127.0.0.1 (its RPC agent's, in a one-host job)."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    ports = []
    for line in out.splitlines():
        if f"pid={pid}," in line:
            local = line.split()[3]
            if local.startswith("127.0.0.1:"):
                ports.append(int(local.rsplit(":", 1)[1]))
    return ports
