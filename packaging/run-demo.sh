#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job: a 2-rank DDP
# job recorded into a run file, then the run's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash packaging/build.sh
run=build/demo.ddprun
rm -f "$run" "$run-wal" "$run-shm"
echo "== demo: the character-level transformer on the shipped text, 2 ranks under mpirun (DDP) =="
./build/bin/ddpscope-cli train --np 2 --model transformer --iters 200 --batch 16 --width 64 \
  --depth 2 --seed 1 --log-every 25 --out "$run"
echo "== the run's summary (ddpscope-cli stats --summary $run) =="
./build/bin/ddpscope-cli stats --summary "$run"
echo "== per-iteration timings: ./build/bin/ddpscope-cli stats $run"
echo "== a trace for https://ui.perfetto.dev: ./build/bin/ddpscope-cli export $run --chrome demo.json"
