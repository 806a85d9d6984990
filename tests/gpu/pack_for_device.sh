#!/bin/bash
# Packs what tests/gpu/device_checks.sh needs on a lent GPU machine into .gpu/bundle.tar.xz
# (.gpu/ is git-ignored; the device tool carries it): this build's programs, the GPU tests
# and benchmark, the probes' libraries, the Python package where an installed ddpscope
# keeps it, the Debian libraries they load (the device keeps those it already has) and
# Open MPI's programs, plugins and help files, for a machine that has no Open MPI.
# glibc, libstdc++ and the CUDA libraries (cudart, cuBLAS, NCCL) are left out: the GPU
# machine's own are newer, and torch loads them in the same processes.
#
# Usage: tests/gpu/pack_for_device.sh [BUILD_DIR]    (then carry .gpu)
set -euo pipefail
build=${1:-build}
[ -x "$build/tests/tst_cuda_kernels" ] || {
  echo "pack_for_device: $build has no GPU tests; configure with CUDA and NCCL (DDPSCOPE_WITH_CUDA=ON) and build" >&2
  exit 1
}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/bin" "$stage/build/lib" "$stage/build/tests/bench" "$stage/build/share/ddpscope" \
         "$stage/deblib" "$stage/ompi/bin"
cp "$build"/bin/ddpscope-cli "$build"/bin/ddpscope-worker "$build"/bin/ddpscope-collector "$stage/build/bin/"
cp "$build"/lib/*.so "$stage/build/lib/"
cp "$build"/tests/tst_cuda_kernels "$build"/tests/tst_process_group_nccl "$build"/tests/tst_ddp_cuda "$stage/build/tests/"
cmake --build "$build" --target bench_nccl_allreduce >/dev/null  # benchmarks are not in the default build
cp "$build"/tests/bench/bench_nccl_allreduce "$stage/build/tests/bench/"
cp -r probes/python "$stage/build/share/ddpscope/python"
find "$stage/build/share" -name __pycache__ -prune -exec rm -rf {} +

ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi
for p in orterun orted; do cp "/usr/bin/$p" "$stage/ompi/bin/"; done
cp -r "$ompi_lib/lib" "$stage/ompi/lib"
cp -r /usr/share/openmpi "$stage/ompi/share"

# Every library any of them loads, but the C library, the compiler's and CUDA's.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libnccl|libnvidia)'
find "$stage/build" "$stage/ompi" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
  xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r soname path; do
    [[ $soname =~ $skip ]] || cp -L "$path" "$stage/deblib/$soname"
  done
mkdir -p .gpu
tar -C "$stage" -cJf .gpu/bundle.tar.xz .
echo "pack_for_device: .gpu/bundle.tar.xz $(du -h .gpu/bundle.tar.xz | cut -f1) ($(ls "$stage/deblib" | wc -l) libraries)"
