#!/usr/bin/env bash
# CTest: an unchanged PyTorch DDP script across 2 simulated hosts, started by a launcher
# that is not ddpscope's (one plain command per host, with torchrun's variables, as
# `torchrun --nnodes 2` sets them), recorded through `ddpscope-cli collect` on host 0 and
# the prefix it prints. Each rank ships to the collector over the bridge; the run must
# finish by itself (--expect 2) with each rank on its host and the bucket allreduces the
# script's own hook counted. SKIP (77) where namespaces cannot be made or
# /usr/bin/python3 has no torch.
#   run_cluster_collect.sh BUILD_DIR
set -euo pipefail
build=$(readlink -f "$1")
here=$(dirname "$(readlink -f "$0")")
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "SKIP: /usr/bin/python3 has no torch"; exit 77; }
source "$here/with_cluster.sh" 2
fail() { echo "FAIL: $*" >&2; exit 1; }
run=$work/collected.ddprun
bash "$cluster" agent ddps-h0 "$build/bin/ddpscope-cli" collect --out "$run" --listen 10.77.0.10:29700 --expect 2 \
  >"$work/collect.out" 2>&1 &
collector=$!
for _ in $(seq 100); do grep -q "^Waiting for" "$work/collect.out" && break; sleep 0.1; done
prefix=$(grep -m1 "^  env DDPSCOPE_COLLECTOR=" "$work/collect.out" | sed 's/^  //')
[ -n "$prefix" ] || { cat "$work/collect.out"; fail "collect printed no prefix"; }
pids=""
for r in 0 1; do
  bash "$cluster" agent "ddps-h$r" "$prefix" RANK=$r LOCAL_RANK=0 GROUP_RANK=$r WORLD_SIZE=2 \
    MASTER_ADDR=10.77.0.10 MASTER_PORT=29710 GLOO_SOCKET_IFNAME=eth0 \
    /usr/bin/python3 "$here/../torch/ddp_unchanged_script.py" --iters 4 --user-hook --counts "$work/counts" \
    >"$work/rank$r.out" 2>&1 &
  pids="$pids $!"
done
for p in $pids; do wait "$p" || { cat "$work"/rank*.out; fail "a rank failed"; }; done
timeout 60 tail --pid=$collector -f /dev/null || fail "the collector did not end once both ranks had"
wait $collector || { cat "$work/collect.out"; fail "collect failed"; }
grep -q "ranks: 2 joined, 2 ended" "$work/collect.out" || { cat "$work/collect.out"; fail "collect saw no 2 ranks"; }
/usr/bin/python3 - "$run" "$work/counts" "$build/lib/libddpscope_sqlite.so" <<'PY' || exit 1
import json, sqlite3, sys
run, counts = sys.argv[1], sys.argv[2]
db = sqlite3.connect(run)
db.enable_load_extension(True)
db.load_extension(sys.argv[3])  # spans are packed: the extension shows them as `spans`
status, world, config = db.execute("SELECT status, world_size, config_json FROM runs").fetchone()
assert (status, world) == ("finished", 2), (status, world)
assert json.loads(config)["launcher"] == "torchrun", config
hosts = dict(db.execute("SELECT rank, host FROM ranks"))
assert hosts == {0: "ddps-h0", 1: "ddps-h1"}, f"ranks ran on {hosts}"
kind = db.execute("SELECT kind FROM kinds WHERE name = 'allreduce'").fetchone()[0]
per_rank = dict(db.execute("SELECT rank, COUNT(*) FROM spans WHERE kind = ? GROUP BY rank", (kind,)))
for rank in (0, 1):
    seen = json.load(open(f"{counts}.{rank}"))
    expected = sum(len(v) for v in seen["buckets"].values())
    assert per_rank.get(rank) == expected, f"rank {rank}: {per_rank.get(rank)} bucket allreduces recorded, {expected} ran"
print(f"a foreign launcher's job across 2 hosts: {per_rank} bucket allreduces recorded, as the script's hook counted")
PY
echo "PASS"
