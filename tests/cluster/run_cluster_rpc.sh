#!/usr/bin/env bash
# CTest: RPC and distributed autograd across 2 simulated hosts, each with a second
# network of its own listed before the job's (DDPS_CLUSTER_SIDE_NET). Seed 000's example
# must finish with its messages recorded: each RPC agent listens on the interface its
# route to the other host leaves from, not on the first address it finds (which the
# other host cannot reach). SKIP (77) where namespaces cannot be made.
#   run_cluster_rpc.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(dirname "$(readlink -f "$0")")
export DDPS_CLUSTER_SIDE_NET=1
source "$here/with_cluster.sh" 2
fail() { echo "FAIL: $*" >&2; exit 1; }
# Both hosts list the private network first.
for h in 0 1; do
  first=$(ip netns exec "ddps-h$h" ip -4 -o addr show scope global | awk '{print $4; exit}')
  [ "$first" = "10.78.$h.10/24" ] || fail "host $h lists $first first, not its side network"
done
run=$work/rpc.ddprun
DDPSCOPE_RPC_TIMEOUT_MS=20000 timeout 120 "$build/bin/ddpscope-cli" example seed --np 2 --hostfile "$work/hosts" \
  --json --out "$run" >"$work/out" 2>&1 || { cat "$work/out"; fail "the 2-host RPC job failed"; }
/usr/bin/python3 - "$run" <<'PY' || exit 1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
status, = db.execute("SELECT status FROM runs").fetchone()
assert status == "finished", f"run status {status}"
hosts = dict(db.execute("SELECT rank, host FROM ranks"))
assert hosts == {0: "ddps-h0", 1: "ddps-h1"}, f"ranks ran on {hosts}"
pairs = db.execute("SELECT src_rank, dst_rank, count(*) FROM messages GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
assert {(0, 1), (1, 0)} <= {(s, d) for s, d, _ in pairs}, f"messages between ranks: {pairs}"
print("RPC across 2 hosts: " + ", ".join(f"{n} messages rank {s} -> {d}" for s, d, n in pairs if s != d))
PY
echo "PASS"
