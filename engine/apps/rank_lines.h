// RankLines: each rank's lines whole again, from mpirun's merged stream.
//
// mpirun forwards a rank's output in chunks of up to 4 KiB as it reads them from the rank's
// pipe. When a rank prints faster than mpirun reads, a chunk ends mid-line and the next
// rank's chunk lands in the middle of it ("rank 1rank 0 says 1002"). With --tag-output,
// every chunk starts with its rank's tag ("[1,0]<stdout>:"), so the pieces can be put back
// together per rank: a piece that does not end its line waits for the rank's next piece.
// Text without a tag at the start of a line is mpirun's own and passes through.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace ddpscope::apps {

class RankLines {
 public:
  using Sink = std::function<void(const std::string&)>;
  // `stream` is the tag's name for the stream read: "stdout" or "stderr".
  RankLines(std::string stream, Sink sink);
  // One line of mpirun's stream, without its newline.
  void line(const std::string& merged);
  // The ranks' last pieces that never got their newline (the job ended), each as a line.
  void flush();

 private:
  std::string tag_end_;  // "]<stdout>:"
  Sink sink_;
  std::map<int, std::string> pending_;  // a rank's line so far, by rank
  // Where the next tag starts at or after `from`, and its rank and length; npos if none.
  size_t find_tag(const std::string& text, size_t from, int& rank, size_t& length) const;
};

}  // namespace ddpscope::apps
