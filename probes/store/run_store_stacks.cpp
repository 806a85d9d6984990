// Stack captures (schema 12): every thread's stack as a rank took it when it made no
// progress for a while or a collective failed, stored from the rank's "stacks" record and
// read back for the hang analysis.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "run_store_reader.h"
#include "run_store_schema.h"
#include "run_store_writer.h"

namespace ddpscope::probes {
namespace {

// What one rank may store: a record comes from any holder of the job's token, so what it
// claims is bounded here (a real capture holds a few threads of under 50 frames).
constexpr size_t kMaxThreads = 64;
constexpr size_t kMaxFrames = 128;
constexpr size_t kMaxText = 1024;
constexpr int64_t kMaxCapturesPerRank = 256;

std::string bounded_text(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  const auto& text = it->get_ref<const std::string&>();
  if (text.size() <= kMaxText) return text;
  size_t cut = kMaxText;  // not inside a UTF-8 sequence: the text is read back as JSON
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return text.substr(0, cut);
}

int64_t whole_number(const nlohmann::json& object, const char* key, int64_t otherwise) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : otherwise;
}

// "python" (probes/python/ddpscope/_stacks.py) or "native" (our engine's ranks).
std::string capture_language(const nlohmann::json& r) {
  const auto l = r.find("language");
  return l != r.end() && l->is_string() && l->get<std::string>() == "native" ? "native" : "python";
}

// The threads of a capture as stored: bounded, with only the fields the reader knows.
nlohmann::json bounded_threads(const nlohmann::json& threads) {
  if (!threads.is_array()) throw std::invalid_argument("'threads' is not a list");
  nlohmann::json out = nlohmann::json::array();
  for (size_t t = 0; t < std::min(threads.size(), kMaxThreads); ++t) {
    const auto& th = threads[t];
    if (!th.is_object()) continue;
    const auto frames = th.find("frames");
    const size_t given = frames != th.end() && frames->is_array() ? frames->size() : 0;
    const size_t kept = std::min(given, kMaxFrames);
    nlohmann::json kept_frames = nlohmann::json::array();
    for (size_t d = 0; d < kept; ++d) {
      const auto& f = (*frames)[d];
      if (!f.is_object()) continue;
      kept_frames.push_back({{"file", bounded_text(f, "file")},
                             {"line", std::max<int64_t>(0, whole_number(f, "line", 0))},
                             {"function", bounded_text(f, "function")},
                             {"code", bounded_text(f, "code")}});
    }
    const int64_t omitted = std::max<int64_t>(0, whole_number(th, "omitted", 0)) + static_cast<int64_t>(given - kept);
    out.push_back({{"tid", whole_number(th, "thread", -1)},
                   {"name", bounded_text(th, "name")},
                   {"omitted", omitted},
                   {"frames", std::move(kept_frames)}});
    if (const auto a = th.find("answered"); a != th.end() && a->is_boolean() && !a->get<bool>())
      out.back()["answered"] = false;  // a native thread that never ran the capture's handler
  }
  return out;
}

ThreadStack thread_from_json(const nlohmann::json& th) {
  ThreadStack t;
  t.tid = whole_number(th, "tid", -1);
  t.name = bounded_text(th, "name");
  t.omitted = std::max<int64_t>(0, whole_number(th, "omitted", 0));
  if (const auto a = th.find("answered"); a != th.end() && a->is_boolean()) t.answered = a->get<bool>();
  if (const auto frames = th.find("frames"); frames != th.end() && frames->is_array())
    for (const auto& f : *frames)
      if (f.is_object() && t.frames.size() < kMaxFrames)
        t.frames.push_back({bounded_text(f, "function"), bounded_text(f, "file"), whole_number(f, "line", 0),
                            bounded_text(f, "code")});
  return t;
}

}  // namespace

// {"type":"stacks","language":"python"|"native","t_ns":T,"reason":R,"stalled_ns":S,"iteration":I,
// "threads":[{"thread":TID,"name":N,"frames":[{"file":F,"line":L,"function":FN,"code":C}, ...],
// "omitted":K,"answered":false (a native thread that never answered)}, ...]}
// (probes/python/ddpscope/_stacks.py). Frames innermost first.
void RunStoreWriter::store_stacks(int64_t rank, const nlohmann::json& r, int64_t offset) {
  Statement count = db_.prepare("SELECT count(*) FROM stacks WHERE rank = ?");
  count.bind(1, rank);
  if (count.step() && count.column_int64(0) >= kMaxCapturesPerRank) return;  // the earlier ones tell the story
  const std::string threads = bounded_threads(r.at("threads")).dump();
  Statement s = db_.prepare(
      "INSERT INTO stacks(rank, t_ns, reason, stalled_ns, iteration, language, threads_json) VALUES(?,?,?,?,?,?,?)");
  s.bind(1, rank).bind(2, whole_number(r, "t_ns", 0) + offset).bind(3, bounded_text(r, "reason"));
  s.bind(4, std::max<int64_t>(0, whole_number(r, "stalled_ns", 0)));
  s.bind(5, whole_number(r, "iteration", -1)).bind(6, capture_language(r)).bind(7, threads);
  s.step();
}

std::vector<StackCapture> RunStoreReader::stacks() {
  std::vector<StackCapture> out;
  if (schema_version(db_) < 12) return out;
  Statement c = db_.prepare(
      "SELECT rank, t_ns, stalled_ns, iteration, reason, language, threads_json FROM stacks "
      "ORDER BY rank, t_ns, capture_id");
  while (c.step()) {
    StackCapture s;
    s.rank = static_cast<int>(c.column_int64(0));
    s.t_ns = c.column_int64(1);
    s.stalled_ns = c.column_int64(2);
    s.iteration = c.column_int64(3);
    s.reason = c.column_text(4);
    s.language = c.column_text(5);
    // A damaged or hand-made row reads as a capture without threads, never as an error.
    const auto threads = nlohmann::json::parse(c.column_text(6), nullptr, false);
    if (threads.is_array())
      for (size_t t = 0; t < std::min(threads.size(), kMaxThreads); ++t)
        if (threads[t].is_object()) {
          s.threads.push_back(thread_from_json(threads[t]));
          s.threads.back().native = s.language == "native";
        }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ddpscope::probes
