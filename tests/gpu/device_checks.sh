#!/bin/bash
# The GPU checks, in one call on a lent GPU machine (see tests/gpu/README.md): run from the
# repository root with .gpu/bundle.tar.xz carried (tests/gpu/pack_for_device.sh makes it).
# Each step has its own time limit and the whole stays under DEADLINE seconds; what does not
# fit is reported as skipped. Logs and run files go to $OUT/results.tar.gz, and the last
# lines printed are a table of the steps.
#
# Usage: OUT=folder tests/gpu/device_checks.sh [STEP...]    (no step: all of them)
set -u
OUT=${OUT:-/tmp/ddps-out}
DEADLINE=${DEADLINE:-400}
root=$PWD
work=/tmp/ddps
started=$(date +%s)
rm -rf "$work" && mkdir -p "$work" "$OUT"
tar -C "$work" -xJf .gpu/bundle.tar.xz || { echo "no .gpu/bundle.tar.xz: run tests/gpu/pack_for_device.sh and carry .gpu"; exit 1; }
logs=$work/logs
mkdir -p "$logs" "$work/lib"
bin=$work/build/bin
tests=$work/build/tests
summary=$logs/summary.txt

# The machine's own libraries first; ours only where it has none of that name.
have() { ldconfig -p | grep -q -F "	$1 ("; }
for f in "$work"/deblib/*; do have "$(basename "$f")" || ln -s "$f" "$work/lib/$(basename "$f")"; done
libpath=$work/lib
for soname in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  have "$soname" && continue
  found=$(find /usr/local/cuda*/ /usr/lib /opt -name "$soname" 2>/dev/null | head -1)
  [ -n "$found" ] && libpath=$libpath:$(dirname "$found")
done
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Open MPI: the machine's if it has one (libmpi.so.40); else Debian's, at the paths it was built for.
if ! have libmpi.so.40; then
  [ -d /usr/lib/x86_64-linux-gnu/openmpi ] || { mkdir -p /usr/lib/x86_64-linux-gnu/openmpi &&
    cp -r "$work/ompi/lib" /usr/lib/x86_64-linux-gnu/openmpi/lib; }
  [ -d /usr/share/openmpi ] || cp -r "$work/ompi/share" /usr/share/openmpi
  ln -sf orterun "$work/ompi/bin/mpirun"
  export PATH=$work/ompi/bin:$PATH
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 QT_QPA_PLATFORM=offscreen
export OMPI_MCA_btl_vader_single_copy_mechanism=none PYTHONUNBUFFERED=1
PY=$(command -v python3)

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  grep PRETTY_NAME /etc/os-release
  ldd --version | head -1
  echo "nproc $(nproc); python3 $PY; mpirun $(command -v mpirun)"
  mpirun --version 2>&1 | head -1
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "ours linked in: $(ls "$work/lib" | tr '\n' ' ')"
} >"$logs/info.txt" 2>&1
cat "$logs/info.txt"

# step NAME LIMIT COMMAND...: runs it with its output in logs/NAME.log, unless too little time is left.
step() {
  local name=$1 limit=$2
  shift 2
  if [ ${#selected[@]} -gt 0 ] && [[ ! " ${selected[*]} " =~ " $name " ]]; then return; fi
  local left=$((DEADLINE - ($(date +%s) - started)))
  if [ "$left" -lt 20 ]; then
    printf '%-28s %s\n' "$name" "skipped (time)" >>"$summary"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  echo "=== $name: $*" >"$logs/$name.log"
  timeout -k 5 "$limit" "$@" >>"$logs/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc %-3d %4ds\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$summary"
  echo "--- $name rc $rc"
  tail -n 6 "$logs/$name.log"
}
selected=("$@")
cli=$bin/ddpscope-cli

# The engine's GPU tests, as CTest runs them.
step cuda_kernels 90 "$tests/tst_cuda_kernels"
step pg_nccl_np1 90 mpirun -np 1 "$tests/tst_process_group_nccl"
step ddp_cuda_np1 90 mpirun -np 1 "$tests/tst_ddp_cuda"
# `train --backend nccl`: the model, batches and loss on the GPU, against the CPU job.
step train_nccl 200 /usr/bin/env python3 tests/gpu/test_train_nccl.py "$work/build"
step train_nccl_wide 60 "$cli" train --np 1 --backend nccl --width 1024 --depth 8 --batch 64 --iters 40 --progress lines --out "$logs/train_nccl_wide.ddprun"
step train_mpi_wide 60 "$cli" train --np 1 --backend mpi --width 1024 --depth 8 --batch 64 --iters 40 --progress lines --out "$logs/train_mpi_wide.ddprun"
# An unchanged PyTorch DDP script under `ddpscope-cli torchrun`: NCCL, then gloo with this torch.
step torch_nccl 200 env DDPSCOPE_TEST_PYTHON="$PY" DDPSCOPE_TEST_BACKEND=nccl "$PY" tests/torch/test_torch_instrumentation.py "$work/build"
step torch_nccl_job 60 "$cli" torchrun --np 1 --python "$PY" --progress lines --out "$logs/torch_nccl.ddprun" tests/torch/ddp_unchanged_script.py --backend nccl --user-hook --log-loss --iters 20 --gpu-sleep-cycles 2000000
step torch_gloo 200 env DDPSCOPE_TEST_PYTHON="$PY" "$PY" tests/torch/test_torch_instrumentation.py "$work/build"
# The per-op cost of our NCCL group against raw NCCL and PyTorch's, world size 1.
step bench_nccl 90 mpirun -np 1 "$tests/bench/bench_nccl_allreduce"
step bench_nccl_torch 90 env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29531 "$PY" tests/bench/nccl_allreduce_torch.py
# The recording's cost on 16 quiet cores.
step torchrun_cost 300 "$PY" tests/bench/run_torchrun_cost.py --build "$work/build" --python "$PY" --rounds ${COST_ROUNDS:-2}

tar -C "$work" -czf "$OUT/results.tar.gz" logs
cp "$summary" "$OUT/summary.txt"
echo "=== $(($(date +%s) - started)) s in all"
cat "$summary"
