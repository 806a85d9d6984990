// The few CUDA runtime calls the tensor layer needs, behind plain C++ functions so that
// no header outside the .cu files includes CUDA. Built without CUDA, every call throws a
// clear error and available() is false.
#pragma once

#include <cstddef>

namespace ddpscope::cuda {

// True when the build has CUDA and at least one device answers.
bool available();
int device_count();  // 0 without a usable device; never throws

void* device_malloc(size_t nbytes, int device);
void device_free(void* ptr, int device) noexcept;
// Copies between host and device (or device and device); synchronous.
void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device);
void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device);
void copy_device_to_device(void* dst, const void* src, size_t nbytes, int device);
void synchronize(int device);

}  // namespace ddpscope::cuda
