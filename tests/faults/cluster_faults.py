"""The fault suite's cluster scenario: two simulated hosts (tests/cluster, network namespaces
on a bridge), and host 1's link set down while the job trains. The helpers are run_faults.py's."""
import os
import re
import signal
import subprocess
import time

from fault_harness import wait_for_line


def scenarios(h):
    return {"host-cut-off": lambda build, work: host_cut(h, build, work)}


def host_cut(h, build, work):
    r = h.Result("a host cut off mid-allreduce (2 simulated hosts; host 1's link set down)",
               "rank 0 times out naming the op; the diagnosis names rank 1; the launcher ends mpirun, which cannot "
               "reach host 1; file sound; host 1's processes end once its link is back")
    cluster = os.path.join(h.ROOT, "tests", "cluster", "cluster.sh")
    check = subprocess.run(["bash", cluster, "check"], capture_output=True, text=True)
    if check.returncode != 0:
        r.observed = check.stdout.strip() or "SKIP: no simulated cluster here"
        r.skipped = True
        return r
    subprocess.run(["bash", cluster, "up", "2"], check=True)
    link_down = False
    try:
        hostfile = os.path.join(work, "cut-hosts")
        with open(hostfile, "w") as f:
            f.write("10.77.0.10 slots=1\n10.77.0.11 slots=1\n")
        env = {"OMPI_MCA_plm_rsh_agent": os.path.join(h.ROOT, "tests", "cluster", "agent.sh"),
               "OMPI_MCA_oob_tcp_if_include": "10.77.0.0/24", "OMPI_MCA_btl_tcp_if_include": "10.77.0.0/24",
               "OMPI_MCA_btl": "tcp,self"}
        run = os.path.join(work, "host-cut.ddprun")
        job = h.Job(build, ["train", "--np", "2", "--hostfile", hostfile, "--collector-address", "10.77.0.1",
                          "--model", "mlp", "--width", "1024", "--depth", "8", "--batch", "64", "--iters", "100000",
                          "--progress", "lines", "--log-every", "5", "--out", run], env)
        started = h.wait_for_pid(job.tag, "ddpscope-worker", rank=1, limit=60)
        # Cut mid-training, not while the ranks still start (under load that took over 3 s).
        training = wait_for_line(job, r"^iter \d+/", limit=60)
        time.sleep(1)
        t0 = time.monotonic()
        subprocess.run(["ip", "link", "set", "ddps-v1", "down"], check=True)
        link_down = True
        code = job.wait(90)
        if code is not None:
            r.detection = time.monotonic() - t0
        problems = ([] if started else ["rank 1 never started"]) + ([] if training else ["no iteration in 60 s"])
        if code is None:
            problems.append("still running after 90 s")
            os.killpg(job.proc.pid, signal.SIGKILL)
            job.wait(10)
        elif code == 0:
            problems.append("exit 0")
        for n in (r"rank 0 waited \d+ ms in allreduce", r"mpirun has not ended",
                  # Where the cut falls inside the ring decides which side finished the op: rank 1
                  # may have had its last block before the link went down, rank 0 never does then.
                  r"diagnosis: Group 'world' collective #\d+: (missing ranks\. Rank 1 never called|fully matched\. .*"
                  r"Rank 1's (records of it|timeout in it) reached the run file only through its dump|"
                  r"state mismatch\. Rank 1 |"
                  r"state mismatch\. Rank 0 never completed .*, which rank 1 completed)"):
            if not re.search(n, job.text()):
                problems.append(f"no '{n}' in the output: {h.diagnosis_line(job)[:600]}")
        if h.integrity(run) != "ok":
            problems.append(f"integrity_check: {h.integrity(run)}")
        subprocess.run(["ip", "link", "set", "ddps-v1", "up"], check=True)
        link_down = False
        t_up = time.monotonic()
        left = h.leftovers(job.tag, grace=30)
        if left:
            problems.append("left behind after the link returned: " + ", ".join(f"{c} {p}" for p, c in left))
        gone = time.monotonic() - t_up
        return r.conclude(problems, f"exit {code}: {h.diagnosis_line(job)[:200]}; host 1's processes ended "
                                    f"{gone:.0f} s after its link returned")
    finally:
        if link_down:
            subprocess.run(["ip", "link", "set", "ddps-v1", "up"])
        subprocess.run(["bash", cluster, "down"])
