// cuBLAS, opened the first time a GEMM runs on a GPU instead of linked into every program.
//
// Loading libcublas runs its static initialisers, which touch about 25,800 pages: 175 ms of
// CPU (page faults, mostly in the kernel) in every process that links it, GPU or none.
// Linked into the engine, that was every `ddpscope-cli` command, every rank of every job
// and every test program: 185 ms for `ddpscope-cli --version` (9 ms without), and about
// 200 s of the test suite's 1,500 s of CPU. Only the GEMM kernels call cuBLAS, so only a
// process that multiplies matrices on a GPU pays for it now.
#pragma once

#include <cublas_v2.h>

#include <string>
#include <vector>

namespace ddpscope::cuda_kernels {

// The cuBLAS entry points the engine calls, resolved from the library.
struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
};

// Opens cuBLAS on the first call (thread-safe) and returns its entry points. Throws an error
// naming the library, what the loader said and what to install when it cannot be opened or
// lacks one of them.
const CublasLibrary& cublas_library();

// Opens the first of `candidates` (sonames or paths) that dlopen finds and resolves the entry
// points from it; throws an error naming each candidate and why it failed, or the entry point
// the library lacks (and closes it). cublas_library() calls it with this build's cuBLAS.
CublasLibrary load_cublas(const std::vector<std::string>& candidates);

// Whether this process has cuBLAS mapped (it is not until cublas_library() runs).
bool cublas_is_loaded();

}  // namespace ddpscope::cuda_kernels
