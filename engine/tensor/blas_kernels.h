// Choice of OpenBLAS's CPU kernels. OpenBLAS picks its kernels once, when the library
// loads, from the CPU it detects (or from OPENBLAS_CORETYPE). Debian 12's OpenBLAS
// 0.3.21 detects a Cooper Lake Xeon as "Cooperlake" but then runs generic kernels:
// measured here, SGEMM 64x1024x1024 took 6.9 ms against 1.6 ms with the SkylakeX
// kernels on the same CPU. Our programs therefore re-run themselves once with
// OPENBLAS_CORETYPE set when OpenBLAS chose a core known to be slow and the CPU can run
// a better one. Setting OPENBLAS_CORETYPE yourself turns this off.
#pragma once

#include <string>

namespace ddpscope {

// The core OpenBLAS is using now ("Haswell", "SkylakeX", ...).
std::string openblas_core();
// The OPENBLAS_CORETYPE that should replace OpenBLAS's own choice, or "" to keep it.
std::string preferred_openblas_core();
// Call first in main(): when preferred_openblas_core() is not empty, sets
// OPENBLAS_CORETYPE and re-executes the program with the same arguments (once).
void reexec_with_preferred_blas_core(char** argv);
// Takes back the OPENBLAS_CORETYPE that reexec_with_preferred_blas_core set (not one the
// user set), for a program that is not ours: a PyTorch script runs with the kernels it
// would have chosen itself.
void forget_preferred_blas_core();

}  // namespace ddpscope
