#include "process_group.h"
#include "process_group_mpi.h"
#ifdef DDPSCOPE_WITH_CUDA
#include "process_group_nccl.h"
#endif

namespace ddpscope::c10d {

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& init) {
  ProcessGroupOptions options = ProcessGroupOptions::from_environment();
  if (init.timeout != kUseGroupTimeout) options.timeout = init.timeout;
  if (init.backend == "mpi") return ProcessGroupMPI::create_world(options);
  if (init.backend == "nccl") {
#ifdef DDPSCOPE_WITH_CUDA
    return ProcessGroupNCCL::create_world(options);
#else
    throw DDPSCOPE_ERROR(
        "init_process_group: backend 'nccl' needs a build with CUDA and NCCL; "
        "this one has none (use --backend mpi)");
#endif
  }
  throw DDPSCOPE_ERROR("init_process_group: unknown backend '", init.backend, "'; choose mpi or nccl");
}

}  // namespace ddpscope::c10d
