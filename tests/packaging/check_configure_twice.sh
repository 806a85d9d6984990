#!/usr/bin/env bash
# CI check: configuring a built folder again must change no compile flag, so a
# build right after compiles nothing. README's second command on a fresh machine used to
# rebuild everything the first had built (about 6 minutes on 2 cores) for this reason.
set -euo pipefail
build=${1:-build}
cmake -S . -B "$build" >/dev/null
out=$(cmake --build "$build" -j2 2>&1)
compiled=$(grep -c "Building \(CXX\|CUDA\|C\) object" <<<"$out" || true)
if [ "$compiled" -ne 0 ]; then
  echo "configure is not idempotent: a second configure made the build compile $compiled files:" >&2
  grep "Building" <<<"$out" | head -5 >&2
  exit 1
fi
echo "configure twice: the second build compiled nothing"
