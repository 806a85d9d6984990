# Sets DDPSCOPE_CUDA_AVAILABLE when the CUDA toolkit and NCCL are both found, and
# defines the imported target ddpscope::nccl. NCCL ships no CMake package, so it is
# looked up next to the CUDA toolkit.
set(DDPSCOPE_CUDA_AVAILABLE OFF)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(DDPSCOPE_CUDA_AVAILABLE ON)
    if(NOT TARGET ddpscope::nccl)
      add_library(ddpscope::nccl UNKNOWN IMPORTED)
      set_target_properties(ddpscope::nccl PROPERTIES
        IMPORTED_LOCATION "${NCCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    endif()
  endif()
endif()
