// Writes the seed corpus of fuzz_event_batch: batches as a rank encodes them (empty, one
// span, threads and names, records, many events). Rebuild the seeds with:
//   g++ -std=c++20 -Iengine -Iprobes tests/fuzz/make_batch_corpus.cpp probes/runtime/event_batch.cpp \
//     -o /tmp/make_batch_corpus && /tmp/make_batch_corpus tests/fuzz/corpus/event_batch
#include <cstdio>
#include <string>

#include "event_batch.h"

using namespace ddpscope::probes;

static void save(const std::string& dir, const std::string& name, const EventBatch& b) {
  const std::string bytes = encode(b);
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  EventBatch empty;
  save(dir, "empty.bin", empty);
  EventBatch one;
  one.rank = 1;
  one.sequence = 7;
  one.threads = {{0, 1234, "compute"}};
  one.names = {{"forward", "engine/apps/trainer.cpp", 42}};
  one.events.push_back(BatchEvent{100, 200, -1, -1, -1, 1, -1, 0, -1, -1, 0, 1, 0});
  save(dir, "one-span.bin", one);
  EventBatch rich = one;
  rich.clock_offset_ns = -5000;
  rich.threads.push_back({1, 1235, "comm: world collectives"});
  rich.names.push_back({"allreduce", "engine/ddp/reducer.cpp", 7});
  rich.records = {R"({"type":"metric","iteration":1,"name":"loss","value":0.5})"};
  for (int i = 0; i < 64; ++i)
    rich.events.push_back(BatchEvent{1000 + i, 1500 + i, 4096, i, -1, 1, i, 1, int16_t(i % 4), -1, 1, 8, 0});
  save(dir, "rich.bin", rich);
  return 0;
}
