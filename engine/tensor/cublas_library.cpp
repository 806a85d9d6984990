#include "cublas_library.h"

#include <dlfcn.h>

#include <fstream>
#include <mutex>
#include <string>

#include "ddpscope/error.h"

namespace ddpscope::cuda_kernels {
namespace {

// The soname this build was compiled against (libcublas.so.<CUDA major>), found through the
// loader's search path (LD_LIBRARY_PATH, ldconfig) first, then in the toolkit's own folder,
// where CMake found it, as the programs' RUNPATH found it when it was linked.
void* open_cublas(std::string& tried) {
  for (const std::string& path :
       {std::string(DDPSCOPE_CUBLAS_SONAME), std::string(DDPSCOPE_CUDA_LIBRARY_DIR) + "/" + DDPSCOPE_CUBLAS_SONAME}) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + path + ": " + (why ? why : "not found");
  }
  return nullptr;
}

template <typename Function>
void resolve(void* handle, const char* name, Function& into) {
  into = reinterpret_cast<Function>(dlsym(handle, name));
  DDPSCOPE_CHECK(into != nullptr, "cuBLAS (", DDPSCOPE_CUBLAS_SONAME, ") has no ", name,
                 ": it is not the cuBLAS this build was compiled against; install the CUDA toolkit's cuBLAS ",
                 "of the same major version");
}

CublasLibrary load() {
  std::string tried;
  void* handle = open_cublas(tried);
  DDPSCOPE_CHECK(handle != nullptr, "cannot load cuBLAS for a GEMM on the GPU (", tried,
                 "); install the CUDA toolkit's cuBLAS or add its folder to LD_LIBRARY_PATH");
  CublasLibrary lib;
  resolve(handle, "cublasCreate_v2", lib.create);
  resolve(handle, "cublasSgemm_v2", lib.sgemm);
  resolve(handle, "cublasDgemm_v2", lib.dgemm);
  return lib;  // the handle stays open for the process's life, as a linked library would
}

}  // namespace

const CublasLibrary& cublas_library() {
  static const CublasLibrary library = load();  // a failed load throws and is tried again next time
  return library;
}

bool cublas_is_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("/libcublas.so") != std::string::npos) return true;
  return false;
}

}  // namespace ddpscope::cuda_kernels
