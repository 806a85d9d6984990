// libFuzzer harness of the RPC decoder: any bytes, split into frames, must either decode
// or be rejected with a WireError; never crash, hang or allocate beyond the input.
// Built and run by run_fuzz.sh (clang, -fsanitize=fuzzer,address).
#include "fuzz_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto frames = ddpscope::fuzz::split_frames(data, size);
  try {
    const auto m = ddpscope::rpc::wire::decode_message(frames, ddpscope::fuzz::kFuzzToken);
    // Touch what a caller would read.
    volatile size_t sink = m.body.list.size() + m.tensor_frames.size() + m.body.s.size();
    (void)sink;
  } catch (const ddpscope::rpc::wire::WireError&) {
  }
  return 0;
}
