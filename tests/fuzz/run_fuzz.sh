#!/usr/bin/env bash
# Builds a libFuzzer harness with Debian's clang 14 and runs it on its seed corpus.
#   run_fuzz.sh BUILD_DIR SOURCE_DIR TARGET [libFuzzer options...]
# Targets: rpc_wire (the RPC wire format), event_batch (the collector's batch decoder),
# run_file (the run-file reader on damaged files), span_pack (the span-pack decoder),
# flight_dump (flight-recorder dumps, JSON and pickles), pickle (the pickle reader alone),
# preset (the launch dialog's job presets), torch_trace (PyTorch profiler traces), lesson
# (lesson files and ddpscope: links), stream_framing and shm_ring (the RPC transports' reading
# sides). CTest runs each briefly
# (-max_total_time=2); tests/bench/bench_fuzz.sh with -runs=1000000.
# Prints "fuzz_TARGET: N executions, C crashes" and fails on any crash.
set -euo pipefail
build=$1
src=$(cd "$2" && pwd)  # absolute: the dependency files name headers by it
target=$3
shift 3
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "run_fuzz.sh: clang++-14 is not installed; run packaging/install-deps.sh" >&2
  exit 1
fi
extra_cflags=()
case "$target" in
  rpc_wire) sources=("$src/engine/rpc/wire_format.cpp"); libs=() ;;
  stream_framing) sources=("$src/engine/rpc/stream_framing.cpp"); libs=() ;;
  shm_ring) sources=("$src/engine/rpc/shm_ring.cpp" "$src/engine/rpc/stream_framing.cpp"); libs=() ;;
  event_batch) sources=("$src/probes/runtime/event_batch.cpp" "$src/probes/runtime/clock_offset_estimator.cpp"); libs=() ;;
  run_file)
    sources=("$src/probes/store/run_store_reader.cpp" "$src/probes/store/sqlite_db.cpp" "$src/probes/store/run_store_schema.cpp"
             "$src/probes/runtime/event.cpp" "$src/probes/store/flight_records.cpp" "$src/probes/store/span_pack.cpp" "$src/probes/store/args_pack.cpp"
             "$src/probes/store/span_table.cpp" "$src/probes/store/run_store_stacks.cpp" "$src/probes/store/flight_dump_reader.cpp" "$src/probes/store/flight_dump_builder.cpp" "$src/probes/store/pickle_reader.cpp"
             "$src/probes/store/gz_stream.cpp")
    libs=(-lsqlite3 -lzstd -lz) ;;
  span_pack) sources=("$src/probes/store/span_pack.cpp"); libs=(-lzstd) ;;
  flight_dump)
    sources=("$src/probes/store/flight_records.cpp" "$src/probes/analysis/flight_analysis.cpp" "$src/probes/analysis/flight_words.cpp" "$src/probes/analysis/library_frames.cpp"
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
    read -r -a extra_cflags <<<"-fPIC -I$src/gui/models $(pkg-config --cflags Qt6Core)"
    read -r -a libs <<<"$(pkg-config --libs Qt6Core)" ;;
  preset)
    sources=("$src/gui/models/launch_config.cpp")
    # Qt Core from its pkg-config file; -fPIC as Qt's headers demand.
    read -r -a extra_cflags <<<"-fPIC -I$src/gui/models $(pkg-config --cflags Qt6Core)"
    read -r -a libs <<<"$(pkg-config --libs Qt6Core)" ;;
  *) echo "run_fuzz.sh: unknown target '$target' (rpc_wire, stream_framing, shm_ring, event_batch, run_file, span_pack, flight_dump, pickle, preset, torch_trace, lesson)" >&2; exit 2 ;;
esac
out="$build/fuzz/$target"
mkdir -p "$out/work"
bin="$out/fuzz_$target"
harness="$src/tests/fuzz/fuzz_$target.cpp"
# pointer-overflow is left out: Debian's RapidJSON 1.1.0 compares null + offset in its
# internal stack before its first allocation (stack.h:117), harmless and not ours.
# -O1 by default (the long runs of bench_fuzz.sh); CTest's 2-second smoke runs set
# DDPSCOPE_FUZZ_OPT=-O0: the sanitizers check the same, and the eleven harnesses compile in
# 82 s of CPU instead of 118 s.
opt=${DDPSCOPE_FUZZ_OPT:--O1}
cflags=(-std=c++20 "$opt" -gline-tables-only -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
        -fno-sanitize=pointer-overflow
        -I"$src/base" -I"$src/engine" -I"$src/probes/runtime" -I"$src/probes/store" -I"$src/probes/analysis"
        -I"$src/probes/formats" -I"$src/tests/fuzz" "${extra_cflags[@]}")
# Each source is compiled once into build/fuzz/obj and shared by every harness that needs it
# (gz_stream.cpp serves five, the pickle reader three): the eleven harnesses compiled each
# source again, 160 s of the suite's CPU. An object is rebuilt when its source or a header
# it includes (clang's dependency file) is newer; a lock keeps two harnesses building at
# once from writing the same object.
objdir="$build/fuzz/obj/$(printf '%s\n' "${cflags[@]}" | md5sum | cut -c1-8)"
stale() {  # OBJECT: missing, or older than anything its dependency file names
  [ -f "$1" ] && [ -f "$1.d" ] || return 0
  local dep
  for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$1.d"); do
    [ "$dep" -nt "$1" ] && return 0
  done
  return 1
}
compile() {  # SOURCE OBJECT
  mkdir -p "$(dirname "$2")"
  (
    flock 9
    if stale "$2"; then
      "$cxx" "${cflags[@]}" -MMD -MF "$2.d.part" -c "$1" -o "$2.part"
      mv "$2.d.part" "$2.d"
      mv "$2.part" "$2"
    fi
  ) 9>"$2.lock"
}
objects=()
running=0
for source in "$harness" "${sources[@]}"; do
  object="$objdir/${source#"$src"/}.o"
  objects+=("$object")
  compile "$source" "$object" &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then wait -n || exit 1; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || exit 1; running=$((running - 1)); done
relink=0
[ -x "$bin" ] || relink=1
for object in "${objects[@]}"; do [ "$object" -nt "$bin" ] && relink=1; done
if [ "$relink" = 1 ]; then
  "$cxx" -fsanitize=fuzzer,address,undefined "${objects[@]}" "${libs[@]}" -o "$bin.part"
  mv "$bin.part" "$bin"
fi
# New inputs go to a scratch folder; the committed seeds stay as they are.
log="$out/fuzz.log"
rm -f "$out"/crash-* "$out"/leak-* "$out"/oom-* "$out"/timeout-*
set +e
"$bin" -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=5 -print_final_stats=1 \
  -artifact_prefix="$out/" "$@" "$out/work" "$src/tests/fuzz/corpus/$target" >"$log" 2>&1 &
pid=$!
wait "$pid"
code=$?
set -e
# A harness that writes its inputs to a file removes it when it ends (fuzz_scratch_file.h).
left=$(find /dev/shm -maxdepth 1 -name "ddpscope-fuzz-*-$pid*" 2>/dev/null)
if [ "$code" = 0 ] && [ -n "$left" ]; then
  rm -f $left
  echo "fuzz_$target: left its scratch file behind: $left" >&2
  exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
crashes=$(find "$out" -maxdepth 1 \( -name "crash-*" -o -name "leak-*" -o -name "oom-*" -o -name "timeout-*" \) | wc -l)
echo "fuzz_$target: ${runs:-0} executions, $crashes crashes (exit $code)"
if [ "$code" -ne 0 ]; then
  tail -40 "$log" >&2
  exit 1
fi
