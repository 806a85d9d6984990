#!/usr/bin/env bash
# Builds a libFuzzer harness with Debian's clang 14 and runs it on its seed corpus.
#   run_fuzz.sh BUILD_DIR SOURCE_DIR TARGET [libFuzzer options...]
# Targets: rpc_wire (the RPC wire format), event_batch (the collector's batch decoder),
# run_file (the run-file reader on damaged files), span_pack (the span-pack decoder),
# flight_dump (flight-recorder dumps, JSON and pickles), pickle (the pickle reader alone),
# preset (the launch dialog's job presets), torch_trace (PyTorch profiler traces), lesson
# (lesson files and ddpscope: links), tcp_framing and shm_ring (the RPC transports' reading
# sides). CTest runs each briefly
# (-max_total_time=5); tests/bench/bench_fuzz.sh with -runs=1000000.
# Prints "fuzz_TARGET: N executions, C crashes" and fails on any crash.
set -euo pipefail
build=$1
src=$2
target=$3
shift 3
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "run_fuzz.sh: clang++-14 is not installed; run packaging/install-deps.sh" >&2
  exit 1
fi
case "$target" in
  rpc_wire) sources=("$src/engine/rpc/wire_format.cpp"); libs=() ;;
  tcp_framing) sources=("$src/engine/rpc/tcp_framing.cpp"); libs=() ;;
  shm_ring) sources=("$src/engine/rpc/shm_ring.cpp" "$src/engine/rpc/tcp_framing.cpp"); libs=() ;;
  event_batch) sources=("$src/probes/runtime/event_batch.cpp" "$src/probes/runtime/clock_offset_estimator.cpp"); libs=() ;;
  run_file)
    sources=("$src/probes/store/run_store_reader.cpp" "$src/probes/store/sqlite_db.cpp" "$src/probes/store/run_store_schema.cpp"
             "$src/probes/runtime/event.cpp" "$src/probes/store/flight_records.cpp" "$src/probes/store/span_pack.cpp" "$src/probes/store/args_pack.cpp"
             "$src/probes/store/span_table.cpp" "$src/probes/store/flight_dump_reader.cpp" "$src/probes/store/flight_dump_builder.cpp" "$src/probes/store/pickle_reader.cpp"
             "$src/probes/store/gz_stream.cpp")
    libs=(-lsqlite3 -lzstd -lz) ;;
  span_pack) sources=("$src/probes/store/span_pack.cpp"); libs=(-lzstd) ;;
  flight_dump)
    sources=("$src/probes/store/flight_records.cpp" "$src/probes/analysis/flight_analysis.cpp" "$src/probes/analysis/flight_words.cpp"
             "$src/probes/analysis/flight_p2p.cpp" "$src/probes/analysis/flight_grid.cpp"
             "$src/probes/store/sqlite_db.cpp" "$src/probes/store/flight_dump_reader.cpp" "$src/probes/store/flight_dump_builder.cpp" "$src/probes/store/pickle_reader.cpp"
             "$src/probes/store/gz_stream.cpp")
    libs=(-lsqlite3 -lz) ;;
  pickle) sources=("$src/probes/store/pickle_reader.cpp" "$src/probes/store/gz_stream.cpp"); libs=(-lz) ;;
  torch_trace)
    sources=("$src/probes/formats/torch_trace_reader.cpp" "$src/probes/store/gz_stream.cpp" "$src/probes/runtime/event.cpp")
    libs=(-lz) ;;
  lesson)
    sources=("$src/probes/formats/lesson_file.cpp" "$src/probes/store/atomic_file.cpp" "$src/gui/models/lesson_link.cpp")
    read -r -a qt <<<"$(pkg-config --cflags --libs Qt6Core)"
    libs=(-fPIC -I"$src/gui/models" "${qt[@]}") ;;
  preset)
    sources=("$src/gui/models/launch_config.cpp")
    # Qt Core from its pkg-config file; -fPIC as Qt's headers demand.
    read -r -a qt <<<"$(pkg-config --cflags --libs Qt6Core)"
    libs=(-fPIC -I"$src/gui/models" "${qt[@]}") ;;
  *) echo "run_fuzz.sh: unknown target '$target' (rpc_wire, tcp_framing, shm_ring, event_batch, run_file, span_pack, flight_dump, pickle, preset, torch_trace, lesson)" >&2; exit 2 ;;
esac
out="$build/fuzz/$target"
mkdir -p "$out/work"
bin="$out/fuzz_$target"
harness="$src/tests/fuzz/fuzz_$target.cpp"
stale=0
[ -x "$bin" ] || stale=1
for f in "$harness" "${sources[@]}"; do [ "$f" -nt "$bin" ] && stale=1; done
# pointer-overflow is left out: Debian's RapidJSON 1.1.0 compares null + offset in its
# internal stack before its first allocation (stack.h:117), harmless and not ours.
if [ "$stale" = 1 ]; then
  "$cxx" -std=c++20 -O1 -gline-tables-only -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -fno-sanitize=pointer-overflow \
    -I"$src/base" -I"$src/engine" -I"$src/probes/runtime" -I"$src/probes/store" -I"$src/probes/analysis" -I"$src/probes/formats" -I"$src/tests/fuzz" "$harness" "${sources[@]}" "${libs[@]}" -o "$bin"
fi
# New inputs go to a scratch folder; the committed seeds stay as they are.
log="$out/fuzz.log"
rm -f "$out"/crash-* "$out"/leak-* "$out"/oom-* "$out"/timeout-*
set +e
"$bin" -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=5 -print_final_stats=1 \
  -artifact_prefix="$out/" "$@" "$out/work" "$src/tests/fuzz/corpus/$target" >"$log" 2>&1
code=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
crashes=$(find "$out" -maxdepth 1 \( -name "crash-*" -o -name "leak-*" -o -name "oom-*" -o -name "timeout-*" \) | wc -l)
echo "fuzz_$target: ${runs:-0} executions, $crashes crashes (exit $code)"
if [ "$code" -ne 0 ]; then
  tail -40 "$log" >&2
  exit 1
fi
