// The number of CPU threads the engine's math may use. OpenBLAS follows it; our own
// elementwise loops run on the calling thread. Multi-rank jobs default to 1 per rank so
// that ranks sharing a machine do not fight over cores.
#pragma once

namespace ddpscope {

void set_num_threads(int threads);  // >= 1
int get_num_threads();

}  // namespace ddpscope
