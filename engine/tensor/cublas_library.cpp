#include "cublas_library.h"

#include <dlfcn.h>

#include <fstream>
#include <string>
#include <vector>

#include "ddpscope/error.h"

namespace ddpscope::cuda_kernels {
namespace {

void* open_first(const std::vector<std::string>& candidates, std::string& tried, std::string& opened) {
  for (const std::string& path : candidates) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      opened = path;
      return handle;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + path + ": " + (why ? why : "not found");
  }
  return nullptr;
}

template <typename Function>
void resolve(void* handle, const std::string& path, const char* name, Function& into) {
  into = reinterpret_cast<Function>(dlsym(handle, name));
  DDPSCOPE_CHECK(into != nullptr, "cuBLAS (", path, ") has no ", name,
                 ": it is not the cuBLAS this build was compiled against (", DDPSCOPE_CUBLAS_SONAME,
                 "); install the CUDA toolkit's cuBLAS of the same major version");
}

}  // namespace

CublasLibrary load_cublas(const std::vector<std::string>& candidates) {
  std::string tried, path;
  void* handle = open_first(candidates, tried, path);
  DDPSCOPE_CHECK(handle != nullptr, "cannot load cuBLAS for a GEMM on the GPU (", tried,
                 "); install the CUDA toolkit's cuBLAS or add its folder to LD_LIBRARY_PATH");
  CublasLibrary lib;
  try {
    resolve(handle, path, "cublasCreate_v2", lib.create);
    resolve(handle, path, "cublasSgemm_v2", lib.sgemm);
    resolve(handle, path, "cublasDgemm_v2", lib.dgemm);
  } catch (...) {
    dlclose(handle);
    throw;
  }
  return lib;  // the handle stays open for the process's life, as a linked library would
}

const CublasLibrary& cublas_library() {
  // The soname this build was compiled against (libcublas.so.<CUDA major>), found through the
  // loader's search path (LD_LIBRARY_PATH, ldconfig) first, then in the toolkit's own folder,
  // where CMake found it, as the programs' RUNPATH found it when it was linked. A failed load
  // throws and is tried again at the next call.
  static const CublasLibrary library =
      load_cublas({DDPSCOPE_CUBLAS_SONAME, std::string(DDPSCOPE_CUDA_LIBRARY_DIR) + "/" + DDPSCOPE_CUBLAS_SONAME});
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
