// Built when DDPSCOPE_WITH_CUDA is OFF: the CUDA facade reports no device and refuses work.
#include "cuda_runtime_facade.h"
#include "ddpscope/error.h"

namespace ddpscope::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw DDPSCOPE_ERROR(what,
                       ": this ddpscope was built without CUDA; reconfigure with "
                       "-DDDPSCOPE_WITH_CUDA=ON on a machine with the CUDA toolkit and NCCL");
}
}  // namespace

bool available() { return false; }
int device_count() { return 0; }
void* device_malloc(size_t, int) { no_cuda("device_malloc"); }
void device_free(void*, int) noexcept {}
void copy_host_to_device(void*, const void*, size_t, int) { no_cuda("copy to device"); }
void copy_device_to_host(void*, const void*, size_t, int) { no_cuda("copy to host"); }
void copy_device_to_device(void*, const void*, size_t, int) { no_cuda("device copy"); }
void synchronize(int) { no_cuda("synchronize"); }

}  // namespace ddpscope::cuda
