// The imported spans' arguments of one span pack, as one zstd frame: a trace's args are
// JSON with the same keys on every event (Input Dims, External id, ...), so raw they made
// a run file 37 times larger than its spans (110 MB against 3 MB for 257 MB of traces);
// compressed together they cost a fraction of that.
//
// Layout before compression: per span of the pack, a little-endian u32 length and that
// many bytes of JSON (length 0: the span has none).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ddpscope::probes {

// `args[i]` is span i's arguments, or null.
std::string encode_args_pack(const std::vector<const std::string*>& args);

// Span `index`'s arguments in a blob encode_args_pack wrote ("" when it has none or the
// pack holds fewer spans). Throws ddpscope::Error when the blob is not a sound pack.
std::string args_in_pack(const void* data, size_t size, size_t index);

}  // namespace ddpscope::probes
