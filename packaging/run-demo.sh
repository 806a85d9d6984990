#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job: a 2-rank DDP
# job of the character transformer. With a display, the desktop app launches it and
# follows it live; without one, the job runs headless into build/demo.ddprun and the
# run's summary is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash packaging/build.sh
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x build/bin/ddpscope ] && [ -z "${DDPSCOPE_HEADLESS:-}" ]; then
  echo "== demo: the desktop app launches a 2-rank DDP job of the character transformer and follows it live =="
  echo "   (Run > Launch job... starts others; DDPSCOPE_HEADLESS=1 runs the demo without the app)"
  exec ./build/bin/ddpscope --demo
fi
run=build/demo.ddprun
rm -f "$run" "$run-wal" "$run-shm"
echo "== demo (no display: headless): the character-level transformer on the shipped text, 2 ranks under mpirun (DDP) =="
# Small buckets: the transformer's 0.4 MiB of gradients in 4 buckets that overlap backward.
./build/bin/ddpscope-cli train --np 2 --model transformer --iters 200 --batch 16 --width 64 \
  --depth 2 --seed 1 --log-every 25 --bucket-cap-mb 0.1 --first-bucket-cap-mb 0.05 --out "$run"
echo "== where each rank stood at the end (ddpscope-cli hang $run) =="
./build/bin/ddpscope-cli hang "$run"
echo "== the run's summary (ddpscope-cli stats --summary $run) =="
./build/bin/ddpscope-cli stats --summary "$run"
echo "== why its iterations take the time they take (ddpscope-cli why $run) =="
./build/bin/ddpscope-cli why "$run"
echo "== per-iteration timings: ./build/bin/ddpscope-cli stats $run"
echo "== a trace for https://ui.perfetto.dev: ./build/bin/ddpscope-cli export $run --chrome demo.json"
echo "== on a desktop: ./build/bin/ddpscope $run"
