#!/usr/bin/env bash
# Fuzzing benchmark: every libFuzzer harness for RUNS executions (default
# 10^6), or at most SECONDS each (default 1800); prints each one's executions and
# crashes. Target: 0 crashes.
#   bash tests/bench/bench_fuzz.sh [BUILD_DIR] [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
runs=${2:-1000000}
seconds=${3:-1800}
for target in rpc_wire stream_framing shm_ring event_batch run_file span_pack flight_dump pickle preset torch_trace lesson; do
  bash tests/fuzz/run_fuzz.sh "$build" . "$target" -runs="$runs" -max_total_time="$seconds"
done
