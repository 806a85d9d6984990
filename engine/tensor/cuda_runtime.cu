// The CUDA runtime facade (cuda_runtime_facade.h) on the real runtime.
#include "cuda_common.cuh"
#include "cuda_runtime_facade.h"

namespace ddpscope::cuda {

int device_count() {
  // Without a driver cudaGetDeviceCount fails and leaves the count unwritten.
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return count;
}

bool available() { return device_count() > 0; }

namespace {
void use_device(int device) {
  DDPSCOPE_CHECK(device >= 0 && device < device_count(), "CUDA device ", device, " does not exist (", device_count(),
                 " visible)");
  CUDA_CHECK(cudaSetDevice(device));
}
}  // namespace

void* device_malloc(size_t nbytes, int device) {
  use_device(device);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, nbytes);
  if (err != cudaSuccess) {
    throw DDPSCOPE_ERROR("out of GPU memory on cuda:", device, " allocating ", nbytes,
                         " bytes: ", cudaGetErrorString(err));
  }
  return p;
}

void device_free(void* ptr, int device) noexcept {
  cudaSetDevice(device);
  cudaFree(ptr);
}

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  use_device(device);
  CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice));
}

void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device) {
  use_device(device);
  CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost));
}

void copy_device_to_device(void* dst, const void* src, size_t nbytes, int device) {
  use_device(device);
  CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToDevice));
}

void synchronize(int device) {
  use_device(device);
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace ddpscope::cuda
