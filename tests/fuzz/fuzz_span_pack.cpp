// libFuzzer harness of the span-pack decoder (span_pack.h), which reads the blobs of a
// run file: a damaged pack must give an Error, never a crash, a hang or a huge
// allocation; a pack that decodes encodes back to the same spans.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "ddpscope/error.h"
#include "span_pack.h"

using namespace ddpscope::probes;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<PackedSpan> spans;
  try {
    decode_pack(data, size, spans);
  } catch (const ddpscope::Error&) {
    return 0;
  }
  std::vector<PackedSpan> again;
  const std::string blob = encode_pack(spans);
  decode_pack(blob.data(), blob.size(), again);
  if (again != spans) std::abort();
  return 0;
}
