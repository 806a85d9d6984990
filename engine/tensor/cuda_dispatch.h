// Routes a kernel call to its CUDA implementation when the first tensor lives on a GPU.
// Without CUDA no tensor can live there (allocation already refuses), so the route is
// compiled out.
#pragma once

#ifdef DDPSCOPE_WITH_CUDA
#include "cuda_kernels.h"
#define DDPSCOPE_ROUTE_CUDA(tensor, call)    \
  do {                                       \
    if ((tensor).device().is_cuda()) {       \
      return ::ddpscope::cuda_kernels::call; \
    }                                        \
  } while (0)
#else
#define DDPSCOPE_ROUTE_CUDA(tensor, call) \
  do {                                    \
  } while (0)
#endif
