#!/usr/bin/env bash
# Screenshots of every view of the desktop app, from real runs, under Xvfb: a 2-rank
# transformer job followed live (the Live tab), the finished run's other views, and a
# job whose rank 1 stalls (the Hang tab), an RPC example (the Messages tab), and a PyTorch
# job's profiler traces opened by the app (tests/torch/fixtures), and an unchanged PyTorch
# script launched from the app. Every shot at a laptop's 1280x800 (issue 34). Writes
# docs/images/*.png (shown in README.md and docs/).
#   bash packaging/screenshots.sh   (after packaging/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=docs/images
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DDPSCOPE_WORKSPACE="$work/runs"
app=./build/bin/ddpscope
shot() { xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --size 1280x800 "$@" | grep --line-buffered -v '^run file' || true; }

echo "why: a 2-rank job whose rank 1 loads its input 20 ms late every iteration (--inject-slow)"
slow="$work/slow.ddprun"
./build/bin/ddpscope-cli train --np 2 --model transformer --iters 60 --batch 16 --width 64 --depth 2 \
  --bucket-cap-mb 0.1 --inject-slow 1:outside_step:20 --out "$slow" --progress lines >/dev/null 2>&1
shot "$slow" --tab Summary --screenshot "$out/why_summary.png"
echo "live: launching the demo job from the app"
shot --demo --tab Live --screenshot "$out/live.png"
run=$(ls "$DDPSCOPE_WORKSPACE"/*.ddprun | head -1)
for tab in Summary Overlap Buckets Graph Breakdown; do
  shot "$run" --tab "$tab" --screenshot "$out/$(tr 'A-Z' 'a-z' <<<"$tab").png"
done
echo "timeline: iteration 5, an allreduce selected (details panel), then a dragged range"
shot "$run" --tab Timeline --iteration 5 --find "allreduce" --screenshot "$out/timeline.png"
sql() { sqlite3 -cmd ".load ./build/lib/libddpscope_sqlite" "$@"; }  # spans are packed: the extension shows them
t0=$(sql "$run" "SELECT (MIN(t_begin_ns) - (SELECT MIN(t_begin_ns) FROM spans)) / 1e6 FROM spans WHERE kind = 0 AND rank = 0 AND iteration = 5")
t1=$(sql "$run" "SELECT (MAX(t_end_ns) - (SELECT MIN(t_begin_ns) FROM spans)) / 1e6 FROM spans WHERE kind = 0 AND rank = 0 AND iteration = 5")
shot "$run" --tab Timeline --iteration 5 --range "$t0:$t1" --screenshot "$out/timeline_range.png"
echo "hang: rank 1 stalls before its backward in iteration 20; rank 0 times out after 5 s"
hung="$work/hung.ddprun"
DDPSCOPE_PG_TIMEOUT_MS=5000 ./build/bin/ddpscope-cli train --np 2 --model transformer \
  --iters 100 --batch 16 --width 64 --depth 2 --inject-stall 1:20:60 --out "$hung" \
  --progress lines --log-every 1000 >/dev/null 2>&1 || true
shot "$hung" --tab Hang --screenshot "$out/hang.png"
echo "hang in a PyTorch script: rank 1 stalls in its own load_batch; the verdict names the line"
torch_hung="$work/torch_hung.ddprun"
DDPSCOPE_STACKS_AFTER_S=2 ./build/bin/ddpscope-cli torchrun --np 2 --out "$torch_hung" \
  tests/torch/stall_in_user_code.py 6 20 >/dev/null 2>&1 || true
shot "$torch_hung" --tab Hang --screenshot "$out/hang_torch_line.png"
xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --size 1024x700 "$torch_hung" --tab Hang \
  --screenshot "$out/hang_torch_line_1024.png" | grep -v '^run file' || true
echo "hang timeline: rank 0's allreduce drawn open (never finished), rank 1's stall mark"
shot "$hung" --tab Timeline --iteration 20 --screenshot "$out/hang_timeline.png"
echo "messages: the send/recv view of a nested RPC chain across 4 workers"
chain="$work/chain.ddprun"
./build/bin/ddpscope-cli example chain --np 4 --out "$chain" >/dev/null 2>&1
shot "$chain" --tab Messages --screenshot "$out/messages.png"
echo "distributed graph: the chain's pass, one cluster per worker"
shot "$chain" --tab Graph --screenshot "$out/dist_graph.png"
echo "PyTorch traces: a 2-rank DDP job PyTorch 2.11 profiled on an H100, imported by the app"
shot tests/torch/fixtures/kineto_cuda_gloo_2 --tab Timeline --iteration 3 --find "Memcpy DtoH" --screenshot "$out/torch_timeline.png"
shot tests/torch/fixtures/kineto_cuda_gloo_2 --tab Summary --screenshot "$out/torch_summary.png"
echo "PyTorch traces of two ranks of a 128-GPU NCCL job (HTA's test data): the GPU's figures"
shot tests/torch/fixtures/hta_nccl_of_128 --tab Summary --screenshot "$out/torch_nccl_summary.png"
shot tests/torch/fixtures/hta_nccl_of_128 --tab Overlap --screenshot "$out/torch_nccl_overlap.png"
echo "PyTorch traces of a job whose rank 1 stopped after two steps: the Hang tab"
shot tests/torch/fixtures/kineto_cuda_stopped --tab Hang --screenshot "$out/torch_hang.png"
echo "PyTorch flight-recorder dumps of a 4-rank job whose rank 2 gathered where the others allreduced: the Hang tab"
shot tests/torch/fixtures/flight_4_ranks --tab Hang --screenshot "$out/torch_flight_hang.png"
echo "learn: lesson 1 stopped at step 26 (worker 1's recv function runs), lesson 2b at its end"
shot --lesson 1 --step 26 --screenshot "$out/learn.png"
shot --lesson 3 --step 200 --screenshot "$out/learn_smart.png"
shot --lesson 4 --step 52 --screenshot "$out/learn_ddp.png"
shot --lesson 5 --step 500 --screenshot "$out/learn_hang.png"
shot --lesson 2 --step 40 --side-by-side --screenshot "$out/learn_side_by_side.png"
echo "learn: the ring allreduce, rank 1 passing its first full sum on (all-gather)"
shot --lesson 7 --step 20 --screenshot "$out/learn_ring.png"
echo "classroom: a teacher's window (the ring, lesson 7, at step 3: two sends at the same time) with students' apps"
echo "  joined on loopback (the class bar names them; Ben stepped ahead on his own), one student's following"
echo "  and one's on their own"
port=47411
DDPSCOPE_SCREENSHOT_DELAY_MS=9000 shot --teach "127.0.0.1:$port" --lesson 7 --step 3 --screenshot "$out/class_teacher.png" \
  >"$work/teacher.out" &
teacher=$!
for _ in $(seq 50); do grep -q "join code" "$work/teacher.out" 2>/dev/null && break; sleep 0.1; done
code=$(sed -n 's/.*join code \([A-Z0-9-]*\).*/\1/p' "$work/teacher.out" | head -1)
students=()
QT_QPA_PLATFORM=offscreen "$app" --join "127.0.0.1:$port" --code "$code" --name Ana >/dev/null 2>&1 &
students+=($!)
QT_QPA_PLATFORM=offscreen "$app" --join "127.0.0.1:$port" --code "$code" --name Ben --step 2 >/dev/null 2>&1 &
students+=($!)
DDPSCOPE_SCREENSHOT_DELAY_MS=2500 shot --join "127.0.0.1:$port" --code "$code" --name Cleo \
  --screenshot "$out/class_student.png" &
DDPSCOPE_SCREENSHOT_DELAY_MS=3000 shot --join "127.0.0.1:$port" --code "$code" --name Dana --step 2 \
  --screenshot "$out/class_student_own.png"
wait "$teacher"
kill "${students[@]}" 2>/dev/null || true
echo "ZeRO: a 2-rank transformer job with ZeRO overlapped with DDP, its shards (Buckets, Summary), and lesson 5"
zero="$work/zero.ddprun"
./build/bin/ddpscope-cli train --np 2 --model transformer --iters 20 --bucket-cap-mb 0.5 --zero-overlap \
  --out "$zero" --progress lines >/dev/null 2>&1
shot "$zero" --tab Buckets --screenshot "$out/zero_buckets.png"
shot "$zero" --tab Summary --screenshot "$out/zero_summary.png"
shot --lesson 6 --step 77 --screenshot "$out/learn_zero.png"
echo "compare: overlapped buckets (A) against one allreduce after backward (B), at a laptop's 1280x800"
for mode in overlap no-overlap; do
  extra=(); [ "$mode" = no-overlap ] && extra=(--no-overlap)
  ./build/bin/ddpscope-cli train --np 2 --iters 15 --width 1024 --depth 6 --batch 64 "${extra[@]}" \
    --out "$work/$mode.ddprun" --progress lines >/dev/null 2>&1
done
shot "$work/overlap.ddprun" --compare "$work/no-overlap.ddprun" --screenshot "$out/compare.png"
echo "ranks: a synthetic 1,024-rank run, rank 517 slow, at 1280x800"
./build/tests/bench/make_wide_run "$work/wide.ddprun" --ranks 1024 --iterations 20 --slow 517
shot "$work/wide.ddprun" --tab Ranks --screenshot "$out/ranks.png"
echo "PyTorch: an unchanged DDP script (tests/torch/ddp_unchanged_script.py) launched from the app with"
echo "Debian's PyTorch, followed live; then its timeline; then the same script with rank 1 stalled"
torch_preset() {  # $1: the script's arguments
  cat >"$work/torch.json" <<JSON
{"job": "torch", "script": "$PWD/tests/torch/ddp_unchanged_script.py", "python": "/usr/bin/python3",
 "script_arguments": "$1", "world_size": 2, "probes": true}
JSON
}
torch_preset "--iters 60 --width 256 --depth 4 --log-loss"
shot --launch "$work/torch.json" --tab Live --screenshot "$out/torchrun_live.png"
torch_run=$(ls -t "$DDPSCOPE_WORKSPACE"/*.ddprun | head -1)
shot "$torch_run" --tab Timeline --iteration 5 --screenshot "$out/torchrun_timeline.png"
echo "PyTorch: the Buckets tab's advice in DDP's own arguments (the script's 0.25 MiB buckets), 1280x800 and 1024x700"
torch_adv="$work/torch_adv.ddprun"
./build/bin/ddpscope-cli torchrun --np 2 --out "$torch_adv" tests/torch/ddp_unchanged_script.py --iters 30 >/dev/null 2>&1
shot "$torch_adv" --tab Buckets --screenshot "$out/buckets_torch.png"
xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --size 1024x700 "$torch_adv" --tab Buckets \
  --screenshot "$out/buckets_torch_1024.png" | grep -v '^run file' || true
torch_preset "--iters 40 --stall-rank 1 --stall-at 5 --stall-seconds 60 --timeout 5"
shot --launch "$work/torch.json" --tab Hang --screenshot "$out/torchrun_hang.png"
echo "collect: the app collects from a job a plain shell loop starts (torchrun's variables and the prefix"
echo "the app printed), the Collect dialog listing each rank with its host, mid-job"
collect_shot() {
  exec 3< <(DDPSCOPE_SCREENSHOT_DELAY_MS=14000 xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --size 1280x800 \
    --collect 2 --tab Live --screenshot "$out/collect.png")
  local line prefix=""
  while read -r line <&3; do
    case "$line" in "collect: "*) prefix=${line#collect: }; break ;; esac
  done
  local pids=""
  for r in 0 1; do
    sh -c "exec $prefix RANK=$r LOCAL_RANK=$r GROUP_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29661 \
      /usr/bin/python3 $PWD/tests/torch/ddp_unchanged_script.py --iters 100000 --width 256 --depth 4 --log-loss" \
      >/dev/null 2>&1 &
    pids="$pids $!"
  done
  cat <&3 || true  # the shot is taken mid-job; then the job is no longer needed
  kill $pids 2>/dev/null || true
  wait
}
collect_shot
ls -l "$out"
