#!/usr/bin/python3
"""Bad input: every malformed value the CLI takes, and every kind of bad file.

Each case runs `ddpscope-cli` once and checks that it:
  - exits non-zero, by itself (no signal: no crash), within 30 s (no hang);
  - says what was wrong in an error line matching the case's pattern;
  - stays within 4 GiB of address space (no unbounded allocation: RLIMIT_AS);
  - leaves files as they were: no run file made by a refused command, and a file the
    user named (a file that is no run, a run given as an export's output) untouched.
It writes the table tests/BAD_INPUT.md (unless --only) and exits 1 when a case fails.

    /usr/bin/python3 tests/faults/bad_input.py build [--out tests/BAD_INPUT.md] [--only TEXT]
"""
import argparse
import hashlib
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
ADDRESS_SPACE = 4 << 30


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def digest(path):
    if not os.path.exists(path):
        return None
    if os.path.isdir(path):
        return "a folder"
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Files:
    """The files the cases read: a good run, damaged runs, a hostfile of garbage, ..."""

    def __init__(self, build, work):
        self.work = work
        self.good = os.path.join(work, "good.ddprun")
        subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "train", "--iters", "3", "--width", "16",
                        "--progress", "lines", "--out", self.good], check=True, capture_output=True,
                       env=dict(os.environ, **MPI_ENV))
        with open(self.good, "rb") as f:
            data = f.read()
        self.empty = self.write("empty.ddprun", b"")
        self.text = self.write("notes.txt", b"my notes, not a run\n" * 50)
        self.truncated = self.write("truncated.ddprun", data[: len(data) // 3])
        self.header_only = self.write("header.ddprun", data[:100])
        self.garbage = self.write("garbage.ddprun", bytes((i * 7919) % 251 for i in range(65536)))
        self.newer = os.path.join(work, "newer.ddprun")
        shutil.copy(self.good, self.newer)
        db = sqlite3.connect(self.newer)
        db.execute("PRAGMA user_version = 999")
        db.commit()
        db.close()
        self.plain_db = os.path.join(work, "other.sqlite")
        db = sqlite3.connect(self.plain_db)
        db.execute("CREATE TABLE t(x)")
        db.commit()
        db.close()
        self.folder = os.path.join(work, "a-folder")
        os.makedirs(self.folder)
        self.kineto_dir = os.path.join(work, "exported")  # an earlier export --kineto
        os.makedirs(self.kineto_dir)
        with open(os.path.join(self.kineto_dir, "rank0.pt.trace.json"), "w") as f:
            f.write('{"traceEvents": []}')
        self.hosts_garbage = self.write("hosts-garbage", bytes(range(256)) * 4)
        self.hosts_empty = self.write("hosts-empty", b"")
        self.hosts_bad_slots = self.write("hosts-slots", b"localhost slots=many\n")
        # Host names that would reach mpirun and ssh as their options (issue 49).
        self.hosts_option = self.write("hosts-option", b"-V slots=1\n")
        self.hosts_option2 = self.write("hosts-option2", b"localhost slots=1\n-Fcfg slots=1\n")
        self.hosts_pipe = os.path.join(work, "hosts-pipe")
        os.mkfifo(self.hosts_pipe)
        self.hosts_few = self.write("hosts-few", b"# two slots\nlocalhost slots=2\n")
        self.missing = os.path.join(work, "missing.ddprun")

    def write(self, name, data):
        path = os.path.join(self.work, name)
        with open(path, "wb") as f:
            f.write(data)
        return path


def cases(f):
    """(what, argv, error pattern, files that must stay as they are or not appear)."""
    out = os.path.join(f.work, "never.ddprun")
    t = ["train", "--out", out]
    tn = ["train", "--np", "2", "--out", out]
    c = []
    # train: every option out of range or malformed.
    for opt, values in {
        "--iters": ["0", "-5", "abc", "99999999999999999999"], "--batch": ["0", "1.5"], "--width": ["0"],
        "--depth": ["0"], "--heads": ["0"], "--context": ["1"], "--threads": ["0", "-1"],
        "--lr": ["-1", "nan", "x"], "--momentum": ["2", "-0.1"], "--weight-decay": ["-1"],
        "--bucket-cap-mb": ["0", "-1", "abc"], "--first-bucket-cap-mb": ["0"], "--comm-hook": ["zip"],
        "--model": ["resnet"], "--optimizer": ["lbfgs"], "--seed": ["-1"], "--log-every": ["0"],
        "--progress": ["fancy"], "--np": ["-1", "two"], "--backend": ["gloo"],
        "--inject-unused": ["-1"], "--inject-stall": ["x", "1:0:5", "1:2:-1"], "--inject-uneven": ["1:0", "x:y"],
        "--inject-model-mismatch": ["-2"],
    }.items():
        for v in values:
            c.append((f"train {opt} {v}", t + [opt, v], r"error|must|expected|not in|invalid|could not|is not",
                      [out]))
    c += [
        ("train --np 100000 (more ranks than this machine's slots)", tn[:1] + ["--np", "100000", "--out", out],
         r"more than \d+ per core", [out]),
        ("train --data-path with generated data", t + ["--data", "regression", "--data-path", f.text],
         r"--data-path reads a digits file", [out]),
        ("train --data digits --data-path missing", t + ["--data", "digits", "--data-path", f.missing],
         r"error", [out]),
        # Read once the run has started: the run file records the failure (status failed).
        ("train --data digits --data-path of garbage", t + ["--data", "digits", "--data-path", f.garbage],
         r"error: load_digits: .* row 1", []),
        ("train --model transformer --width 10 --heads 3", t + ["--model", "transformer", "--width", "10", "--heads", "3"],
         r"divisible by --heads", [out]),
        ("train --remote-embedding with the mlp", tn + ["--remote-embedding"], r"add --model transformer", [out]),
        ("train --join --no-overlap", tn + ["--join", "--no-overlap"], r"--join is DDP's", [out]),
        ("train --fused-optimizer --no-overlap", tn + ["--fused-optimizer", "--no-overlap"],
         r"--no-overlap has no buckets", [out]),
        ("train --fused-optimizer --remote-embedding", tn + ["--model", "transformer", "--remote-embedding",
                                                            "--fused-optimizer"], r"drop --fused-optimizer", [out]),
        ("train --inject-unused 5 with 2 ranks", tn + ["--inject-unused", "5"], r"names rank 5 but the job has ranks 0 to 1",
         [out]),
        ("train --inject-stall 1:1:1 on one process", t + ["--inject-stall", "1:1:1"], r"not a multi-rank job", [out]),
        ("train --inject-uneven 1:50 of --iters 40", tn + ["--iters", "40", "--inject-uneven", "1:50"],
         r"give it fewer", [out]),
        ("train --hostfile missing", tn + ["--hostfile", f.missing], r"hostfile|does not exist|File does not exist",
         [out]),
        ("train --hostfile of garbage bytes", tn + ["--hostfile", f.hosts_garbage], r"hostfile", [out]),
        ("train --hostfile empty", tn + ["--hostfile", f.hosts_empty], r"hostfile", [out]),
        ("train --hostfile with slots=many", tn + ["--hostfile", f.hosts_bad_slots], r"hostfile", [out]),
        ("train --hostfile naming host '-V'", tn + ["--hostfile", f.hosts_option], r"never a leading '-'", [out]),
        ("train --hostfile naming host '-Fcfg' on line 2", tn + ["--hostfile", f.hosts_option2],
         r"line 2: '-Fcfg' is not a host name", [out]),
        ("train --hostfile a pipe", tn + ["--hostfile", f.hosts_pipe], r"is a pipe, not a regular file", [out]),
        ("train --np 3 on a hostfile of 2 slots", ["train", "--np", "3", "--out", out, "--hostfile", f.hosts_few],
         r"more than the 2 slots", [out]),
        ("train --np 9 --oversubscribe on 2 slots", ["train", "--np", "9", "--oversubscribe", "--out", out,
                                                     "--hostfile", f.hosts_few], r"even with --oversubscribe", [out]),
        ("train --backend nccl --no-probes on one process", ["train", "--backend", "nccl"], r"multi-rank jobs", []),
        ("train --out a file that is no run", ["train", "--iters", "2", "--out", f.text], r"not a ddpscope run",
         [f.text]),
        ("train --out a folder", ["train", "--iters", "2", "--out", f.folder], r"error", []),
        ("train --out in a missing folder", ["train", "--iters", "2", "--out", os.path.join(f.missing, "x.ddprun")],
         r"error", []),
        ("train --out an existing run, no --force", ["train", "--iters", "2", "--out", f.good],
         r"already holds a finished run", [f.good]),
        ("train --save into a missing folder", t + ["--iters", "2", "--save", os.path.join(f.missing, "m.bin")],
         r"error", []),
        ("train an unknown option", t + ["--iterations", "3"], r"--iterations", [out]),
        ("train an extra argument", t + ["extra"], r"extra", [out]),
    ]
    # Run files, through every command that reads one.
    bad_files = [("missing", f.missing, r"does not exist|no such|cannot open|not found"),
                 ("a folder", f.folder, r"directory"),
                 ("empty", f.empty, r"empty|not a ddpscope run"),
                 ("text", f.text, r"not a ddpscope run"),
                 ("truncated", f.truncated, r"damaged|malformed|not a ddpscope run|truncated|incomplete"),
                 ("a header only", f.header_only, r"damaged|malformed|not a ddpscope run|truncated|incomplete"),
                 ("random bytes", f.garbage, r"not a ddpscope run"),
                 ("another SQLite database", f.plain_db, r"not a ddpscope run"),
                 ("from a newer ddpscope", f.newer, r"newer ddpscope")]
    for name, path, pattern in bad_files:
        for cmd in (["stats"], ["stats", "--summary"], ["hang"], ["advise"], ["why"], ["links"]):
            # hang also takes a folder of flight-recorder dumps: an empty one is refused as such.
            expected = r"holds no flight-recorder dump" if cmd == ["hang"] and name == "a folder" else pattern
            c.append((f"{' '.join(cmd)} on a run file {name}", cmd + [path], expected, [path]))
        c.append((f"export on a run file {name}", ["export", path, "--chrome", os.path.join(f.work, "t.json")],
                  pattern, [path, os.path.join(f.work, "t.json")]))
    c += [
        ("stats without a run file", ["stats"], r"RUN|required", []),
        ("advise --caps 0", ["advise", f.good, "--caps", "0"], r"caps|not in", [f.good]),
        ("advise --caps -1,abc", ["advise", f.good, "--caps", "-1,abc"], r"caps|not in|could not", [f.good]),
        ("advise --rank 7 of a 1-rank run", ["advise", f.good, "--rank", "7"], r"rank 7", [f.good]),
        ("export without --chrome or --kineto", ["export", f.good], r"--chrome FILE.*--kineto DIR", [f.good]),
        ("export with both --chrome and --kineto",
         ["export", f.good, "--chrome", os.path.join(f.work, "t.json"), "--kineto", os.path.join(f.work, "k")],
         r"excludes", [f.good, os.path.join(f.work, "t.json")]),
        ("export --kineto onto a file", ["export", f.good, "--kineto", f.text], r"is a file; name a folder",
         [f.good, f.text]),
        ("export --kineto into a folder holding a rank's trace", ["export", f.good, "--kineto", f.kineto_dir],
         r"pass --force", [f.good, os.path.join(f.kineto_dir, "rank0.pt.trace.json")]),
        ("export --chrome onto the run itself", ["export", f.good, "--chrome", f.good], r"run file|itself|overwrite",
         [f.good]),
        ("export --chrome onto another run", ["export", f.good, "--chrome", f.newer], r"run file|overwrite",
         [f.newer]),
        ("export --chrome into a missing folder", ["export", f.good, "--chrome", os.path.join(f.missing, "t.json")],
         r"error", [f.good]),
        ("example with an unknown name", ["example", "nope", "--no-probes"], r"nope", []),
        ("example --np 1", ["example", "seed", "--np", "1", "--no-probes"], r"np", []),
        ("example chain --np 2 (needs 3)", ["example", "chain", "--np", "2", "--no-probes"], r"--np 3", []),
        ("example --mode slow", ["example", "seed", "--mode", "slow", "--no-probes"], r"mode", []),
        ("example --seed -1", ["example", "seed", "--seed", "-1", "--no-probes"], r"seed", []),
        ("example --repeat -1", ["example", "seed", "--repeat", "-1", "--no-probes"], r"repeat", []),
        ("example --np 100000", ["example", "seed", "--np", "100000", "--no-probes"], r"--np", []),
        ("rpc-ping --np 0", ["rpc-ping", "--np", "0"], r"np", []),
        ("rpc-ping --bytes 3", ["rpc-ping", "--bytes", "3"], r"bytes", []),
        ("rpc-ping --calls 0", ["rpc-ping", "--calls", "0"], r"calls", []),
        ("an unknown command", ["trian"], r"trian", []),
    ]
    # import-torch: PyTorch profiler traces that cannot be imported (the run is never
    # written; the inputs stay as they were).
    tr = os.path.join(f.work, "torch.ddprun")
    trace = b'[{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions"}]'
    norank = f.write("trace.json", trace)
    dup_a, dup_b = f.write("a.rank0.json", trace), f.write("b.rank0.json", trace)
    truncated = f.write("rank0-cut.json", trace[:40])
    not_trace = f.write("rank1.json", b'{"loss": [1, 2, 3]}')
    c += [
        ("import-torch of a file that is not JSON", ["import-torch", f.text, "--out", tr], r"not JSON", [f.text, tr]),
        ("import-torch of an empty file", ["import-torch", f.empty, "--out", tr], r"is empty", [f.empty, tr]),
        ("import-torch of a truncated trace", ["import-torch", truncated, "--out", tr], r"truncated",
         [truncated, tr]),
        ("import-torch of JSON that is not a trace", ["import-torch", not_trace, "--out", tr],
         r"not a PyTorch profiler trace", [not_trace, tr]),
        ("import-torch of a list-form trace with no rank in its name", ["import-torch", norank, "--out", tr],
         r"rename it with its rank", [norank, tr]),
        ("import-torch of two traces of rank 0", ["import-torch", dup_a, dup_b, "--out", tr], r"both rank 0",
         [dup_a, dup_b, tr]),
        ("import-torch of a run file", ["import-torch", f.good, "--out", tr], r"not JSON", [f.good, tr]),
        ("import-torch of a folder with no traces", ["import-torch", f.folder, "--out", tr], r"no trace files",
         [tr]),
        ("import-torch of a missing file", ["import-torch", f.missing, "--out", tr], r"no such file", [tr]),
        ("import-torch onto an existing run without --force", ["import-torch", dup_a, "--out", f.good],
         r"--force", [dup_a, f.good]),
        ("import-torch without --out", ["import-torch", dup_a], r"--out", [dup_a]),
    ]
    return c


def controls(f):
    """Good input next to the bad: the checks must not refuse what is right."""
    hosts = f.write("hosts-good", b"# the lab\nnode-a slots=2   # first\n\n10.0.0.7 slots=2 max_slots=4\n")
    return [("a hostfile with comments, blank lines and max_slots (--np 4)",
             ["train", "--np", "4", "--hostfile", hosts, "--check"]),
            ("--np 8 --oversubscribe on 4 slots", ["train", "--np", "8", "--oversubscribe", "--hostfile", hosts, "--check"]),
            ("--seed 0", ["train", "--seed", "0", "--check"])]


def run_case(cli, argv, pattern, keep, env):
    before = {p: digest(p) for p in keep}
    t0 = time.monotonic()
    problems = []
    try:
        p = subprocess.run([cli] + argv, capture_output=True, text=True, errors="replace", timeout=30, env=env,
                           preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return ["hung (30 s)"], "", 30.0
    took = time.monotonic() - t0
    text = (p.stdout + p.stderr).strip()
    if p.returncode < 0:
        problems.append(f"killed by signal {-p.returncode}")
    elif p.returncode == 0:
        problems.append("exit 0")
    elif p.returncode >= 128:
        problems.append(f"exit {p.returncode} (a signal?)")
    import re
    lines = [l for l in text.splitlines() if l.strip()]
    error = next((l for l in lines if re.search(pattern, l, re.I)), None)
    if error is None:
        problems.append(f"no line matching /{pattern}/")
    if len(lines) > 4:
        problems.append(f"{len(lines)} lines of output, not one clear error")
    if "terminate called" in text or "Aborted" in text or ".cpp:" in text:
        problems.append("an internal error leaked: " + text[:120])
    for path, d in before.items():
        if digest(path) != d:
            problems.append(f"{os.path.basename(path)} {'appeared' if d is None else 'changed'}")
    return problems, (error or (lines[0] if lines else "(nothing)")).strip(), took


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "BAD_INPUT.md"))
    parser.add_argument("--only")
    args = parser.parse_args()
    cli = os.path.join(os.path.abspath(args.build), "bin", "ddpscope-cli")
    env = dict(os.environ, **MPI_ENV)
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as work:
        files = Files(os.path.abspath(args.build), work)
        for what, argv, pattern, keep in cases(files):
            if args.only and args.only not in what:
                continue
            problems, said, took = run_case(cli, argv, pattern, keep, env)
            for stray in ("never.ddprun", "t.json"):  # a case that wrongly made one must not affect the next
                if os.path.isfile(os.path.join(work, stray)):
                    os.remove(os.path.join(work, stray))
            said = said.replace(work + "/", "").replace(work, ".")
            mark = "FAIL" if problems else "ok"
            failed += bool(problems)
            print(f"[{mark}] {what} ({took:.1f} s): {'; '.join(problems) if problems else said}", flush=True)
            rows.append((what, said, took, mark, problems))
        for what, argv in controls(files):
            p = subprocess.run([cli] + argv, capture_output=True, text=True, env=env, timeout=30)
            ok = p.returncode == 0 and p.stdout.strip() == "ok"
            failed += not ok
            print(f"[{'ok' if ok else 'FAIL'}] accepted: {what}: {(p.stdout + p.stderr).strip()[:160]}", flush=True)
    if not args.only:
        lines = ["# Bad input", "",
                 "Generated by `tests/faults/bad_input.py` (CTest `bad_input`). Each row runs `ddpscope-cli` once: it "
                 "must exit non-zero by itself within 30 s, under a 4 GiB address-space limit, say what was wrong, "
                 "and leave the files it was given (and the `--out` it refused) as they were.", "",
                 "| input | what ddpscope said | time | result |", "| --- | --- | --- | --- |"]
        for what, said, took, mark, problems in rows:
            shown = "; ".join(problems) if problems else said
            lines.append(f"| {what} | {shown.replace('|', '/')[:220]} | {took:.2f} s | {mark} |")
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {args.out}: {len(rows) - failed} of {len(rows)} ok")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
