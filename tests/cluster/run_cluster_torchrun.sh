#!/usr/bin/env bash
# CTest: an unchanged PyTorch DDP script across 2 simulated hosts, launched by
# `ddpscope-cli torchrun --hostfile`: rank 0 and the rendezvous (MASTER_ADDR) on the first
# host, the collector reached over the bridge. The run must finish with each rank on its
# host and the bucket allreduces the script's own hook counted. gloo picks its interface
# by GLOO_SOCKET_IFNAME, as on a real cluster; the launcher passes it on. SKIP (77) where
# namespaces cannot be made or /usr/bin/python3 has no torch.
#   run_cluster_torchrun.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(dirname "$(readlink -f "$0")")
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "SKIP: /usr/bin/python3 has no torch"; exit 77; }
source "$here/with_cluster.sh" 2
fail() { echo "FAIL: $*" >&2; exit 1; }
export GLOO_SOCKET_IFNAME=eth0
run=$work/torch.ddprun
timeout 240 "$build/bin/ddpscope-cli" torchrun --np 2 --hostfile "$work/hosts" --out "$run" --progress lines \
  "$here/../torch/ddp_unchanged_script.py" --iters 4 --user-hook --counts "$work/counts" >"$work/out" 2>&1 ||
  { cat "$work/out"; fail "the 2-host torch job failed"; }
grep -q "training Sequential (1.1M parameters) under DDP on 2 ranks (gloo backend)" "$work/out" ||
  { cat "$work/out"; fail "no start line"; }
/usr/bin/python3 - "$run" "$work/counts" "$build/lib/libddpscope_sqlite.so" <<'PY' || exit 1
import json, sqlite3, sys
run, counts = sys.argv[1], sys.argv[2]
db = sqlite3.connect(run)
db.enable_load_extension(True)
db.load_extension(sys.argv[3])  # spans are packed: the extension shows them as `spans`
status, config = db.execute("SELECT status, config_json FROM runs").fetchone()
assert status == "finished", f"run status {status}"
assert json.loads(config)["master_addr"] == "10.77.0.10", config
hosts = dict(db.execute("SELECT rank, host FROM ranks"))
assert hosts == {0: "ddps-h0", 1: "ddps-h1"}, f"ranks ran on {hosts}"
kind = db.execute("SELECT kind FROM kinds WHERE name = 'allreduce'").fetchone()[0]
per_rank = dict(db.execute("SELECT rank, COUNT(*) FROM spans WHERE kind = ? GROUP BY rank", (kind,)))
for rank in (0, 1):
    seen = json.load(open(f"{counts}.{rank}"))
    assert seen["replicas_equal"], "the script's hook must still average"
    expected = sum(len(v) for v in seen["buckets"].values())
    assert per_rank.get(rank) == expected, f"rank {rank}: {per_rank.get(rank)} bucket allreduces recorded, {expected} ran"
print(f"torch DDP across 2 hosts: {per_rank} bucket allreduces recorded, as the script's hook counted")
PY
echo "PASS"
