#!/usr/bin/python3
"""Memory bombs: inputs under 10 MB made to cost as much memory as their format allows.

Issue 49: no input under 10 MB makes any command or the app use more than 1 GiB. Each
case writes one hostile file (a gzip that inflates as far as the reader lets it, a
pickle whose shared references replay a thousandfold, a run file whose span packs
inflate like zeros, names and threads by the thousand) and runs every command that
reads it, the app included (offscreen, --screenshot). Each run must:
  - end by itself within 180 s, with exit 0 or one clear error (no signal, no source
    location);
  - peak under 1 GiB of resident memory (the kernel's ru_maxrss of the process).
It prints one line per run with its peak and exits 1 when one fails.

    /usr/bin/python3 tests/faults/memory_bombs.py build [--only TEXT] [--keep DIR] [--part K/N]
"""
import argparse
import gzip
import json
import os
import pickle
import random
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
INPUT_LIMIT = 10_000_000
PEAK_LIMIT = 1 << 30
TIMEOUT = 180


def gz_events(path, header, event, level, target=9_500_000, max_ratio=60):
    """A gzipped Kineto trace of `header` and events event(i) until the file nears `target`
    bytes; an event text that inflates more than max_ratio times is thinned with noise,
    so the file stays under the reader's 64x limit and holds as much as it can. Level 9
    packs 16 % more kernel events than 6 into the file; events of long names pack the same
    at 6 (within 4 %), three times faster."""
    rng = random.Random(49)
    with open(path, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=level) as gz:
            written = gz.write(("{" + header + ',"traceEvents":[').encode())
            i = 0
            while raw.tell() < target:
                chunk = []
                size = 0
                while size < 1 << 20:
                    chunk.append(event(i, rng) + ",")
                    size += len(chunk[-1])
                    i += 1
                written += gz.write("".join(chunk).encode())
                gz.flush()
                if written > max_ratio * raw.tell():
                    raise SystemExit(f"{os.path.basename(path)}: inflates {written / raw.tell():.0f}x: add noise")
            gz.write(b'{"ph":"i","name":"end","pid":7,"tid":7,"ts":0}]}')
    return i


HEADER = '"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":1}'


def many_group_ranks(path):
    """A trace whose distributedInfo lists 4 groups of a million ranks each, the most allowed (each group is
    allowed; all together they took 2.3 GB at 267 groups)."""
    ranks = ",".join(str(r) for r in range(1 << 20))
    with gzip.open(path, "wb", compresslevel=9) as gz:
        gz.write(b'{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":1048576,'
                 b'"pg_config":[')
        for g in range(4):
            gz.write((("," if g else "") + '{"pg_name":"%d","pg_desc":"g","backend_config":"x","pg_size":1048576,'
                      '"ranks":[%s]}' % (g, ranks)).encode())
        gz.write(b']},"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}')


def launch(i, rng):
    # Numbers that count up compress best: 1.7 million events in 10 MB.
    return ('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":%d,"dur":1,'
            '"args":{"correlation":%d}}' % (i, i))


def kernel(i, rng):
    if i % 2 == 0:
        return launch(i, rng)
    return ('{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_%d","pid":0,"tid":%d,"ts":%d,"dur":1,'
            '"args":{"device":0,"stream":%d,"correlation":%d}}' % (i % 7, 7 + i % 3, i, 7 + i % 3, i - 1))


def long_name(i, rng):
    # Names of 64 KiB, each its own: repeats with a few random letters gzip cannot fold.
    parts = []
    for _ in range(64):
        parts.append(letters(rng, 32) + "x" * 992)
    return ('{"ph":"X","cat":"cpu_op","name":"%s","pid":7,"tid":7,"ts":%d,"dur":1}' % ("".join(parts), i))


LETTERS = bytes.maketrans(bytes(range(256)), bytes(ord("abcdefghij"[b % 10]) for b in range(256)))


def letters(rng, n):
    """n random letters of ten (a byte each from the generator: rng.choice per letter made
    these inputs in 25 s of the suite's time)."""
    return rng.randbytes(n).translate(LETTERS).decode()


def noisy(rng, n, fill):
    """n bytes that gzip folds about 40 times: 32 random letters in every 512."""
    return "".join(letters(rng, 32) + fill * 480 for _ in range(n // 512))


def thread_name(i, rng):
    return ('{"ph":"M","name":"thread_name","pid":7,"tid":%d,"args":{"name":"%s"}},'
            '{"ph":"X","cat":"cpu_op","name":"op","pid":7,"tid":%d,"ts":%d,"dur":1}'
            % (i % 65000, noisy(rng, 1024, "y")[:1000], i % 65000, i))


def group_name(i, rng):
    pg = noisy(random.Random(i % 60000), 1024, "z")[:1000]  # 60,000 groups, each used again and again
    return ('{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":7,"tid":7,"ts":%d,"dur":3,'
            '"args":{"Process Group Name":"%s","In msg nelems":4,"dtype":"Float"}},'
            '{"ph":"X","cat":"cpu_op","name":"gloo:all_reduce","pid":7,"tid":7,"ts":%d,"dur":1}' % (2 * i, pg, 2 * i + 1))


def flight_memo_bomb(path):
    """A flight dump whose entries all share one large frames list: pickle's memo keeps
    it once in the file, a reader that copies on replay holds it once per entry."""
    frame = {"name": "f" * 200, "filename": "g" * 200, "line": 1}
    frames = [frame] * 20000
    sizes = [[1024, 1024]] * 100
    entries = []
    for i in range(40000):
        entries.append({"record_id": i, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": i + 1,
                        "p2p_seq_id": 0, "op_id": i + 1, "profiling_name": "nccl:all_reduce",
                        "time_created_ns": 1764000000000000000 + i, "input_sizes": sizes, "input_dtypes": ["Float"],
                        "output_sizes": sizes, "output_dtypes": ["Float"], "state": "completed",
                        "time_discovered_started_ns": None, "time_discovered_completed_ns": None, "retired": True,
                        "timeout_ms": 600000, "is_p2p": False, "frames": frames})
    dump = {"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0]"}},
            "pg_status": {}, "entries": entries}
    with open(path, "wb") as f:
        pickle.dump(dump, f, protocol=4)


def flight_json_gz(path, target=9_500_000):
    """A gzipped JSON flight dump of small entries, as many as 10 MB of gzip hold."""
    rng = random.Random(7)
    with open(path, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as gz:
            gz.write(b'{"version":"2.4","pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0]"}},'
                     b'"pg_status":{},"entries":[')
            i = 0
            while raw.tell() < target:
                chunk = []
                for k in range(2000):
                    chunk.append('{"record_id":%d,"pg_id":0,"process_group":["0","default_pg"],"collective_seq_id":%d,'
                                 '"profiling_name":"nccl:all_reduce","time_created_ns":%d,"state":"completed",'
                                 '"input_sizes":[[%d]],"input_dtypes":["Float"],"frames":[]},'
                                 % (i + k, i + k + 1, 1764000000000000000 + rng.randrange(1 << 30), rng.randrange(99)))
                gz.write("".join(chunk).encode())
                gz.flush()
                i += 2000
            gz.write(b'{"record_id":-1,"pg_id":0,"profiling_name":"nccl:all_reduce","state":"scheduled"}]}')


def flight_empty_entries(path):
    """A gzipped JSON flight dump of ten million entries of two fields: each is a row in memory."""
    entry = b'{"profiling_name":"nccl:all_reduce","collective_seq_id":1},'
    with gzip.open(path, "wb", compresslevel=9) as gz:
        gz.write(b'{"version":"2.4","pg_config":{},"pg_status":{},"entries":[')
        for _ in range(10):
            gz.write(entry * 1_000_000)
        gz.write(entry[:-1] + b"]}")


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def run_file_bomb(good, path, columns=15):
    """A good run file plus span packs of 65,536 zero spans each until the file nears 10 MB."""
    shutil.copy(good, path)
    db = sqlite3.connect(path)
    count = 1 << 16
    payload = count * columns
    blob = b"\x02" + varint(count) + varint(payload) + zstd_frame([bytes(payload)])  # RLE blocks of zeros
    first = db.execute("SELECT coalesce(max(first_id), 0) + 1000000 FROM span_packs").fetchone()[0]
    packs = (INPUT_LIMIT - 500_000 - os.path.getsize(path)) // (len(blob) + 40)
    db.executemany("INSERT INTO span_packs(first_id, rank, thread, count, t_min, t_max, kinds, data) "
                   "VALUES (?, 0, 0, ?, 0, 0, 1, ?)", ((first + k * count, count, blob) for k in range(packs)))
    db.commit()
    db.execute("VACUUM")
    db.close()
    return packs * count


def zstd_frame(columns):
    """A zstd frame of the given byte strings, each as one RLE block (all one byte) or as
    raw blocks: what a pack of columns that repeat, and two that do not, compresses to."""
    total = sum(len(c) for c in columns)
    out = bytearray(b"\x28\xb5\x2f\xfd\xa0") + total.to_bytes(4, "little")
    blocks = []
    for c in columns:
        for at in range(0, len(c), 1 << 17):
            part = c[at:at + (1 << 17)]
            if part == part[:1] * len(part):
                blocks.append((1, len(part), part[:1]))
            else:
                blocks.append((0, len(part), part))
    for k, (kind, n, data) in enumerate(blocks):
        last = 1 if k == len(blocks) - 1 else 0
        out += (last | (kind << 1) | (n << 3)).to_bytes(3, "little") + data
    return bytes(out)


KINDS = [23, 28, 27, 1, 2, 11, 8, 5, 16, 0]  # kernels, ops, runtime calls, forward, ... (event.h)


def dense_pack(kind, t0, rng, count=1 << 16):
    """A pack as dense as a run file may hold (2 bytes a span): begins (from t0, inside the
    run's first iteration) and durations that differ, every other column the same (name
    1, ids -1)."""
    same = lambda byte: bytes([byte]) * count
    vary = lambda: bytes(rng.randrange(64) * 2 for _ in range(count))
    # kind, name_id, t_begin (delta), duration, iteration (delta), bucket, param, bytes,
    # peer, seq, ctx_id, msg_id, rref_id, fork_id (deltas), flags; zigzag varints.
    begins = varint(2 * (t0 + 1)) + vary()[1:]
    columns = [same(2 * kind), same(2), begins, vary(), same(0), same(1), same(1), same(1), same(1),
               same(0), same(0), same(0), same(0), same(0), same(0)]
    payload = sum(len(c) for c in columns)
    return b"\x02" + varint(count) + varint(payload) + zstd_frame(columns)


def run_file_dense(good, path):
    """A good run file plus packs at the densest a run file may be, until it nears 10 MB."""
    shutil.copy(good, path)
    db = sqlite3.connect(path)
    rng = random.Random(2)
    first, t0 = db.execute("SELECT coalesce(max(first_id), 0) + 1000000, min(t_min) FROM span_packs").fetchone()
    k = 0
    while os.path.getsize(path) < INPUT_LIMIT - 400_000:
        blob = dense_pack(KINDS[k % len(KINDS)], t0, rng)
        db.execute("INSERT INTO span_packs(first_id, rank, thread, count, t_min, t_max, kinds, data) "
                   "VALUES (?, 0, 0, 65536, ?, ?, ?, ?)",
                   (first + k * 65536, t0, t0 + 8000000, 1 << KINDS[k % len(KINDS)], blob))
        db.commit()
        k += 1
    db.close()
    return k * 65536


def lesson_bomb(path):
    """A lesson file of 10 MB of empty lists where its steps go."""
    with open(path, "w") as f:
        f.write('{"ddpscope_lesson": 1, "title": "bomb", "kind": "backward", "steps": [')
        f.write(",".join(["[]"] * 3_000_000))
        f.write("]}")


def hostfile_bomb(path):
    with open(path, "w") as f:
        for i in range(450_000):
            f.write(f"node-{i} slots=1\n")


class Runner:
    def __init__(self, build, work):
        self.cli = os.path.join(build, "bin", "ddpscope-cli")
        self.app = os.path.join(build, "bin", "ddpscope")
        self.work = work
        # The app imports traces into its workspace: the test's, not the user's (these
        # imports were left in ~/.local/share/ddpscope, 4 GB of them).
        self.env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=os.path.join(work, "xdg-data"),
                        **MPI_ENV)
        self.failed = 0

    def run(self, what, argv, app=False):
        binary = self.app if app else self.cli
        t0 = time.monotonic()
        proc = subprocess.Popen([binary] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
                                cwd=self.work, preexec_fn=lambda: resource.setrlimit(
                                    resource.RLIMIT_AS, (16 << 30, 16 << 30)))
        problems = []
        out = b""
        try:
            out, _ = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            problems.append(f"still running after {TIMEOUT} s")
        # The child is reaped: its peak is the largest of the children waited for so far,
        # so each run is measured in a process of its own (see main).
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        took = time.monotonic() - t0
        text = out.decode(errors="replace").strip()
        lines = [l for l in text.splitlines() if l.strip() and "XDG_RUNTIME_DIR" not in l]
        if proc.returncode < 0:
            problems.append(f"killed by signal {-proc.returncode}")
        if re.search(r"\.(cpp|h):\d+", text) or "terminate called" in text:
            problems.append("an internal error leaked")
        if peak > PEAK_LIMIT:
            problems.append(f"peak {peak / 2**20:.0f} MiB, over 1 GiB")
        said = (lines[-1] if lines else "(nothing)")[:160]
        mark = "FAIL" if problems else "ok"
        self.failed += bool(problems)
        print(f"[{mark}] {what}: exit {proc.returncode}, peak {peak / 2**20:.0f} MiB, {took:.1f} s: "
              f"{'; '.join(problems) + ' / ' if problems else ''}{said}", flush=True)


def measure_alone(args, what, argv, app):
    """Runs one command from a fresh interpreter, so ru_maxrss is that command's alone."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), args.build, "--one", json.dumps([what, argv, app]),
                        "--work", args.work], text=True)
    return r.returncode


# Seconds each case took on a 2-core machine, the two parts side by side (2026-11-30): the
# parts are split by these, not every other case (that split gave one part the dense run file
# and two of the slow traces: 135 s against 66 s alone, 211 s against 112 s in the suite).
CASE_SECONDS = {
    "a run file as dense as one may be": 69,
    "a gzipped trace of threads": 25,
    "a gzipped trace of collectives in 1,000-byte groups": 24,
    "a gzipped trace of kernels": 23,
    "a gzipped trace of CUDA launches": 22,
    "a gzipped trace of 64 KiB names": 11,
    "a gzipped JSON flight dump of small entries": 9,
    "a gzipped JSON flight dump of ten million": 6,
}


def case_seconds(what):
    return next((t for start, t in CASE_SECONDS.items() if what.startswith(start)), 3)


def part_of(chosen, k, n):
    """The k-th of n parts, balanced by each case's time: the longest cases first, each to the
    part with the least time so far (the cases keep their order within a part)."""
    load, owner = [0.0] * n, {}
    for i in sorted(range(len(chosen)), key=lambda i: -case_seconds(chosen[i][0])):
        part = load.index(min(load))
        load[part] += case_seconds(chosen[i][0])
        owner[i] = part
    return [c for i, c in enumerate(chosen) if owner[i] == k - 1]


def cases(build, work):
    """(what, input path, make: () -> None, [(command name, argv, app?)])."""
    p = lambda name: os.path.join(work, name)
    good = p("good.ddprun")

    def make_good():
        if os.path.exists(good):
            os.remove(good)
        subprocess.run([os.path.join(build, "bin", "ddpscope-cli"), "train", "--iters", "3", "--width", "16",
                        "--progress", "lines", "--out", good], check=True, capture_output=True,
                       env=dict(os.environ, **MPI_ENV))

    def trace(name, event, level):
        path = p(name)
        return path, (lambda: gz_events(path, HEADER, event, level)), [
            ("import-torch", ["import-torch", path, "--out", p(name + ".ddprun"), "--force"], False),
            ("the app", [path, "--screenshot", p(name + ".png"), "--size", "1280x800"], True)]

    c = []
    for name, event, level, what in [
            ("launches.json.gz", launch, 9, "a gzipped trace of CUDA launches"),
            ("kernels.json.gz", kernel, 9, "a gzipped trace of kernels and their launches"),
            ("names.json.gz", long_name, 6, "a gzipped trace of 64 KiB names, each its own"),
            ("threads.json.gz", thread_name, 6, "a gzipped trace of threads with 1,000-byte names (the most a name may have)"),
            ("groups.json.gz", group_name, 6, "a gzipped trace of collectives in 1,000-byte groups (the most a name may have)")]:
        c.append((what,) + trace(name, event, level))
    c.append(("a gzipped trace whose process groups list 4 million ranks (the most allowed)", p("groups4m.json.gz"),
              lambda: many_group_ranks(p("groups4m.json.gz")),
              [("import-torch", ["import-torch", p("groups4m.json.gz"), "--out", p("groups4m.ddprun"), "--force"],
                False)]))
    c.append(("a flight dump whose entries share one 20,000-frame list (pickle memo)", p("memo_dump"),
              lambda: flight_memo_bomb(p("memo_dump")),
              [("hang", ["hang", p("memo_dump")], False),
               ("import-torch", ["import-torch", p("memo_dump"), "--out", p("memo.ddprun"), "--force"], False)]))
    c.append(("a gzipped JSON flight dump of small entries", p("dump.json.gz"), lambda: flight_json_gz(p("dump.json.gz")),
              [("hang", ["hang", p("dump.json.gz")], False),
               ("import-torch", ["import-torch", p("dump.json.gz"), "--out", p("dump.ddprun"), "--force"], False)]))
    c.append(("a gzipped JSON flight dump of ten million two-field entries", p("empty.json.gz"),
              lambda: flight_empty_entries(p("empty.json.gz")),
              [("hang", ["hang", p("empty.json.gz")], False),
               ("import-torch", ["import-torch", p("empty.json.gz"), "--out", p("empty.ddprun"), "--force"], False)]))
    bomb = p("packs.ddprun")
    c.append(("a run file of span packs that inflate like zeros", bomb, lambda: (make_good(), run_file_bomb(good, bomb)),
              [("stats", ["stats", bomb], False), ("hang", ["hang", bomb], False),
               ("export", ["export", bomb, "--chrome", p("packs.json"), "--force"], False),
               ("the app", [bomb, "--screenshot", p("packs.png"), "--size", "1280x800"], True)]))
    dense = p("dense.ddprun")
    c.append(("a run file as dense as one may be: 5 million spans in 10 MB", dense,
              lambda: (make_good(), run_file_dense(good, dense)),
              [("stats", ["stats", dense], False), ("hang", ["hang", dense], False),
               ("advise", ["advise", dense], False), ("compare", ["compare", dense, dense], False),
               ("export --chrome", ["export", dense, "--chrome", p("dense.json"), "--force"], False),
               ("export --kineto", ["export", dense, "--kineto", p("dense-kineto"), "--force"], False),
               ("the app", [dense, "--screenshot", p("dense.png"), "--size", "1280x800"], True)]))
    c.append(("a lesson file of three million empty steps", p("bomb.ddplesson"), lambda: lesson_bomb(p("bomb.ddplesson")),
              [("the app", [p("bomb.ddplesson"), "--screenshot", p("lesson.png"), "--size", "1280x800"], True)]))
    c.append(("a hostfile of 450,000 hosts", p("hosts"), lambda: hostfile_bomb(p("hosts")),
              [("train --check", ["train", "--np", "2", "--hostfile", p("hosts"), "--check"], False)]))
    return c


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--only")
    parser.add_argument("--part", metavar="K/N", help="the K-th of N parts, balanced by the cases' times (CTest runs two side by side)")
    parser.add_argument("--keep", help="write the files here and keep them")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)
    if args.one:
        what, argv, app = json.loads(args.one)
        r = Runner(args.build, args.work)
        r.run(what, argv, app)
        sys.exit(1 if r.failed else 0)
    work = args.keep or tempfile.mkdtemp(prefix="ddpscope-bombs-")
    os.makedirs(work, exist_ok=True)
    args.work = work
    failed = 0
    chosen = cases(args.build, work)
    if args.part:
        k, n = (int(x) for x in args.part.split("/"))
        chosen = part_of(chosen, k, n)
    try:
        for what, path, make, runs in chosen:
            if args.only and args.only not in what:
                continue
            began = time.monotonic()
            make()
            size = os.path.getsize(path)
            print(f"-- {what} ({size / 1e6:.1f} MB)", flush=True)
            if size >= INPUT_LIMIT:
                print(f"[FAIL] the input is {size} bytes, not under {INPUT_LIMIT}")
                failed += 1
            for name, argv, app in runs:
                failed += measure_alone(args, f"{name}", argv, app) != 0
            print(f"   ({time.monotonic() - began:.1f} s)", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'all ok' if not failed else f'{failed} failed'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
