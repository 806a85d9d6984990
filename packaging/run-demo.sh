#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash packaging/build.sh
echo "== demo: training the character-level transformer on the shipped text (one process) =="
./build/bin/ddpscope-cli train --model transformer --iters 300 --batch 16 --width 64 --depth 2 --seed 1 --log-every 25
