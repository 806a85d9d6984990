#include "future.h"

namespace ddpscope::c10d {

// Compiled once here; every other file sees the extern declaration in future.h.
template class BasicFuture<std::vector<Tensor>>;

}  // namespace ddpscope::c10d
