#!/usr/bin/env bash
# Re-records the runs the Learn menu's lessons open: real jobs of the distributed autograd
# examples, recorded by the engine's probes (after packaging/build.sh).
#   bash resources/lessons/record.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cli=./build/bin/ddpscope-cli
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=resources/lessons
rm -f "$dir"/*.ddprun "$dir"/*.ddprun-wal "$dir"/*.ddprun-shm
# Lesson 1: FAST mode on seed 000's example.
"$cli" example seed --np 2 --force --out "$dir/seed-fast.ddprun"
# Lesson 2: an RPC whose result does not feed the loss. FAST fails (by design: its error
# names the send function that never got a gradient); SMART completes.
"$cli" example unused-rpc --np 2 --mode fast --force --out "$dir/unused-fast.ddprun" || true
"$cli" example unused-rpc --np 2 --mode smart --force --out "$dir/unused-smart.ddprun"
# Lesson 3: DDP bucketing, rank 0 of a 2-rank MLP job with three 1 MiB-capped buckets
# (the Learn tab's "Run live" runs this with the student's cap).
"$cli" train --np 2 --model mlp --iters 3 --width 512 --depth 4 --batch 16 --bucket-cap-mb 1 \
  --progress lines --force --out "$dir/ddp-buckets.ddprun" >/dev/null
# Lesson 4: the same job with an unused parameter on rank 1 and no --find-unused-parameters.
# It fails by design; a short collective timeout ends it in seconds.
DDPSCOPE_PG_TIMEOUT_MS=5000 "$cli" train --np 2 --model mlp --iters 3 --width 512 --depth 4 --batch 16 \
  --bucket-cap-mb 1 --inject-unused 1 --progress lines --force --out "$dir/ddp-unused.ddprun" >/dev/null 2>&1 || true
# Lesson 5: ZeRO, the lesson 3 job with ZeroRedundancyOptimizer overlapped with DDP (AdamW).
"$cli" train --np 2 --model mlp --iters 3 --width 512 --depth 4 --batch 16 --bucket-cap-mb 1 \
  --zero-overlap --optimizer adamw --progress lines --force --out "$dir/zero-overlap.ddprun" >/dev/null
# Lesson 6: the ring allreduce, one allreduce of a small tensor on 4 ranks, every step recorded.
"$cli" example ring --np 4 --force --out "$dir/ring-allreduce.ddprun" >/dev/null
# Shipped in the repository: small pages and no WAL (the writer's 16 KiB pages leave each
# file at 368 KiB for a few hundred rows).
for f in "$dir"/*.ddprun; do
  /usr/bin/python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE"); db.execute("PRAGMA page_size=4096"); db.execute("VACUUM")' "$f"
done
ls -l "$dir"
