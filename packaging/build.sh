#!/usr/bin/env bash
# Configures and builds ddpscope into ./build (Release). Used by both README commands.
# Ninja when it is there and the folder is new (it keeps both cores busy across targets);
# a folder configured before keeps the generator it was made with.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
