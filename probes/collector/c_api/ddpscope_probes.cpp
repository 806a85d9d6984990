// The C interface over ProbeSession, the probe API and the records queue.
#include "ddpscope_probes.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "ddpscope/error.h"
#include "event.h"
#include "probe.h"
#include "probe_session.h"
#include "records.h"
#include "stall_watcher.h"

namespace {

using namespace ddpscope::probes;

thread_local std::string t_last_error;
std::mutex g_session_mutex;
std::unique_ptr<ProbeSession> g_session;

int fail(std::string message) {
  t_last_error = std::move(message);
  return -1;
}

// ddpscope's own errors without their source location: the caller shows them to users.
int fail(const std::exception& e) {
  const auto* ours = dynamic_cast<const ddpscope::Error*>(&e);
  return fail(ours ? ours->message() : std::string(e.what()));
}

}  // namespace

extern "C" {

int ddpscope_start(int rank, const char* device) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (g_session) return fail("a ddpscope session already runs in this process; stop it first");
  if (rank < 0) return fail("rank " + std::to_string(rank) + " is negative");
  try {
    g_session = ProbeSession::from_environment(rank, device && *device ? device : "cpu");
    return g_session ? 1 : 0;
  } catch (const std::exception& e) {
    return fail(e);
  }
}

int64_t ddpscope_stop(void) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (!g_session) return fail("no ddpscope session runs");
  try {
    g_session->flush();
    const auto lost = static_cast<int64_t>(g_session->dropped());
    g_session.reset();
    return lost;
  } catch (const std::exception& e) {
    g_session.reset();
    return fail(e);
  }
}

int ddpscope_take_stacks_request(void) { return ddpscope::probes::take_stacks_request() ? 1 : 0; }

void ddpscope_flush(void) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  try {
    if (g_session) g_session->flush();
  } catch (const std::exception& e) {
    fail(e);
  }
}

int ddpscope_enabled(void) { return enabled() ? 1 : 0; }

int64_t ddpscope_now_ns(void) { return now_ns(); }

int ddpscope_kind(const char* name) {
  if (!name) return -1;
  for (int k = 0; k < kNumKinds; ++k)
    if (std::strcmp(kind_name(static_cast<Kind>(k)), name) == 0) return k;
  return -1;
}

void ddpscope_set_iteration(int64_t iteration) { set_iteration(iteration); }

void ddpscope_set_thread_name(const char* name) {
  if (name && enabled()) set_thread_name(name);
}

int ddpscope_event(int kind, const char* name, int64_t t_begin_ns, int64_t t_end_ns, int32_t iteration, int32_t param,
                   int32_t bucket, int32_t peer, int64_t bytes, int64_t id, int64_t id2) {
  if (kind < 0 || kind >= kNumKinds) return fail("kind " + std::to_string(kind) + " is not a kind of the run file");
  if (!name) return fail("an event needs a name");
  if (t_end_ns < t_begin_ns) return fail("the event '" + std::string(name) + "' ends before it begins");
  if (!enabled()) return 0;
  EventArgs args;
  args.iteration = iteration;
  args.param = param;
  args.bucket = static_cast<int16_t>(bucket);
  args.peer = static_cast<int16_t>(peer);
  args.bytes = bytes;
  args.id = id;
  args.id2 = id2;
  record(static_cast<Kind>(kind), intern(std::string_view(name), "c_api", 0), t_begin_ns, t_end_ns, args);
  return 0;
}

int ddpscope_record(const char* json) {
  if (!json) return fail("a record needs its JSON text");
  try {
    const auto parsed = nlohmann::json::parse(json);
    if (!parsed.is_object() || !parsed.contains("type"))
      return fail("a record is a JSON object with a \"type\" (buckets, metric, ...)");
  } catch (const nlohmann::json::exception& e) {
    return fail(std::string("a record is not JSON: ") + e.what());
  }
  if (enabled()) queue_record(json);
  return 0;
}

const char* ddpscope_last_error(void) { return t_last_error.c_str(); }

}  // extern "C"
