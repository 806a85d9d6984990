#!/usr/bin/env bash
# Builds the RPC decoder's libFuzzer harness with Debian's clang 14 and runs it on the
# seed corpus. Usage: run_fuzz.sh BUILD_DIR SOURCE_DIR [libFuzzer options...]
#   CTest runs it briefly (-max_total_time=15); the benchmark with -runs=1000000.
# Prints "fuzz_rpc_wire: N executions, C crashes" and fails on any crash.
set -euo pipefail
build=$1
src=$2
shift 2
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "run_fuzz.sh: clang++-14 is not installed; run packaging/install-deps.sh" >&2
  exit 1
fi
out="$build/fuzz"
mkdir -p "$out/work"
bin="$out/fuzz_rpc_wire"
if [ ! -x "$bin" ] || [ "$src/engine/rpc/wire_format.cpp" -nt "$bin" ] || [ "$src/tests/fuzz/fuzz_rpc_wire.cpp" -nt "$bin" ] ||
   [ "$src/engine/rpc/wire_format.h" -nt "$bin" ]; then
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src/engine" -I"$src/tests/fuzz" \
    "$src/tests/fuzz/fuzz_rpc_wire.cpp" "$src/engine/rpc/wire_format.cpp" -o "$bin"
fi
# New inputs go to a scratch folder; the committed seeds stay as they are.
log="$out/fuzz.log"
set +e
"$bin" -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=5 -print_final_stats=1 \
  -artifact_prefix="$out/" "$@" "$out/work" "$src/tests/fuzz/corpus/rpc_wire" >"$log" 2>&1
code=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
crashes=$(find "$out" -maxdepth 1 \( -name "crash-*" -o -name "leak-*" -o -name "oom-*" -o -name "timeout-*" \) | wc -l)
echo "fuzz_rpc_wire: ${runs:-0} executions, $crashes crashes (exit $code)"
if [ "$code" -ne 0 ]; then
  tail -40 "$log" >&2
  exit 1
fi
