#!/usr/bin/env bash
# CTest: a DDP job across N simulated hosts (cluster.sh) with probes. The ranks run on
# different hosts, the run file is complete (finished, every rank's events and host),
# and every rank's clock offset was measured. SKIP (77) where namespaces cannot be made.
#   run_cluster_job.sh BUILD_DIR N
set -euo pipefail
build=$1
n=$2
here=$(dirname "$(readlink -f "$0")")
source "$here/with_cluster.sh" "$n"
fail() { echo "FAIL: $*" >&2; exit 1; }
run=$work/job.ddprun
timeout 300 "$build/bin/ddpscope-cli" train --np "$n" --hostfile "$work/hosts" --collector-address 10.77.0.1 \
  --iters 10 --batch 16 --progress lines --log-every 10 --out "$run" >"$work/out" 2>&1 \
  || { cat "$work/out"; fail "the $n-host job failed"; }
grep -q "done: 10 iterations" "$work/out" || { cat "$work/out"; fail "the job did not finish its iterations"; }

/usr/bin/python3 - "$run" "$n" "$build/lib/libddpscope_sqlite.so" <<'PY' || exit 1
import sqlite3, sys
run, n = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(run)
db.enable_load_extension(True)
db.load_extension(sys.argv[3])  # spans are packed: the extension shows them as `spans`
status, = db.execute("SELECT status FROM runs").fetchone()
assert status == "finished", f"run status {status}"
ranks = db.execute("SELECT rank, host, clock_offset_ns, events_received FROM ranks ORDER BY rank").fetchall()
assert len(ranks) == n, f"{len(ranks)} ranks in the run file, expected {n}"
hosts = {h for _, h, _, _ in ranks}
assert hosts == {f"ddps-h{i}" for i in range(n)}, f"ranks ran on {sorted(hosts)}"
for rank, host, offset, events in ranks:
    assert offset is not None, f"rank {rank}: no clock offset measured"
    assert events and events > 0, f"rank {rank}: no events received"
    spans, = db.execute("SELECT count(*) FROM spans WHERE rank = ?", (rank,)).fetchone()
    assert spans == events, f"rank {rank}: {events} events received, {spans} spans stored"
    its, = db.execute("SELECT count(*) FROM spans s JOIN kinds k ON k.kind = s.kind "
                      "WHERE s.rank = ? AND k.name = 'iteration'", (rank,)).fetchone()
    assert its == 10, f"rank {rank}: {its} iterations recorded"
print(f"{n} hosts: " + ", ".join(f"rank {r} on {h} (clock offset {o} ns, {e} events)" for r, h, o, e in ranks))
PY
echo "PASS"
