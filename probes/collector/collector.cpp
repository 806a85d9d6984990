#include "collector.h"

#include <nlohmann/json.hpp>
#include "ddpscope/log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>

#include "collector_protocol.h"
#include "disk_reserve.h"
#include "probe.h"
#include "probe.h"

namespace ddpscope::probes {
namespace {

constexpr int64_t kMaxBatchMessageBytes = int64_t{256} << 20;
constexpr int64_t kMaxClockMessageBytes = int64_t{1} << 20;

}  // namespace

Collector::Collector(CollectorOptions options)
    : options_(std::move(options)),
      context_(1),
      batches_in_(context_, zmq::socket_type::router),
      clock_socket_(context_, zmq::socket_type::router) {
  writer_ = std::make_unique<RunStoreWriter>(options_.run_file);
  writer_->begin_run(options_.run);
  // 256 KiB: 60 pages of WAL, ample for the end record (a few pages).
  reserve_ = std::make_unique<DiskReserve>(options_.run_file + "-reserve", 256 * 1024);
  batches_in_.set(zmq::sockopt::linger, 0);
  batches_in_.set(zmq::sockopt::rcvhwm, 1024);
  // ZeroMQ reads a whole message before the token in it can be checked: a frame past these
  // is refused as it arrives (the peer disconnected), so a stranger's 1 GiB claim costs
  // nothing. A rank's batch is at most 65,536 events and its records (a few MB); the
  // clock's messages are a few bytes.
  batches_in_.set(zmq::sockopt::maxmsgsize, kMaxBatchMessageBytes);
  clock_socket_.set(zmq::sockopt::maxmsgsize, kMaxClockMessageBytes);
  clock_socket_.set(zmq::sockopt::linger, 0);
  try {
    const auto port = [&](int offset) {
      return options_.port > 0 ? std::to_string(options_.port + offset) : std::string("*");
    };
    batches_in_.bind("tcp://" + options_.bind_host + ":" + port(0));
    clock_socket_.bind("tcp://" + options_.bind_host + ":" + port(1));
  } catch (const zmq::error_t& e) {
    throw DDPSCOPE_ERROR(
        "collector: cannot listen on ", options_.bind_host,
        options_.port > 0 ? ::ddpscope::detail::concat(" ports ", options_.port, " and ", options_.port + 1) : "", ": ",
        e.what(), "; check the host name or address given for the collector",
        options_.port > 0 ? ", and that nothing else listens on those ports" : "");
  }
  batch_endpoint_ = batches_in_.get(zmq::sockopt::last_endpoint);
  clock_endpoint_ = clock_socket_.get(zmq::sockopt::last_endpoint);
  if (options_.bind_host == "*") {
    // Listening on every interface: ranks on other hosts reach us by our host name.
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    for (std::string* e : {&batch_endpoint_, &clock_endpoint_}) {
      if (auto p = e->find("0.0.0.0"); p != std::string::npos) e->replace(p, 7, host);
    }
  }
  clock_thread_ = std::thread([this] { serve_clock(); });
}

Collector::~Collector() {
  stop_clock_ = true;
  clock_thread_.join();
}

void Collector::request_graph() { graph_requested_ = true; }
void Collector::request_stacks() { stacks_requested_ = true; }

void Collector::serve_clock() {
  // Ranks that pinged us, by their socket identity: requests go back the same way.
  std::set<std::string> peers;
  while (!stop_clock_) {
    for (auto [asked, what] : {std::pair{&graph_requested_, kGraphRequest}, {&stacks_requested_, kStacksRequest}}) {
      if (!asked->exchange(false)) continue;
      for (const std::string& peer : peers) {
        clock_socket_.send(zmq::buffer(peer), zmq::send_flags::sndmore);
        clock_socket_.send(zmq::buffer(std::string_view(what)), zmq::send_flags::dontwait);
      }
    }
    zmq::pollitem_t item{clock_socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
    zmq::message_t identity, token, body;
    if (!clock_socket_.recv(identity, zmq::recv_flags::dontwait)) continue;
    const int64_t t_collector = now_ns();  // as close to arrival as we can read it
    bool complete = identity.more() && clock_socket_.recv(token) && token.more() && clock_socket_.recv(body);
    while (body.more() && clock_socket_.recv(body)) {
    }
    if (!complete || token.to_string() != options_.token) continue;
    const auto ping = decode_clock_message<ClockPing>(body.data(), body.size());
    if (!ping) continue;
    peers.insert(identity.to_string());
    const ClockPong pong{ping->sequence, ping->t0_ns, t_collector};
    clock_socket_.send(identity, zmq::send_flags::sndmore);
    clock_socket_.send(zmq::buffer(&pong, sizeof(pong)), zmq::send_flags::dontwait);
  }
}

// A rank's session ended ({"type":"rank_end","restart":R,"max_restarts":M,"failed":F}, as
// the Python package says it). It ended for good unless it failed with restarts left:
// torchrun then starts every rank again, and the next attempt's ends are the ones to wait for.
void Collector::note_rank_end(int rank, const std::string& record) {
  try {
    const auto r = nlohmann::json::parse(record);
    if (r.value("type", "") != "rank_end") return;
    const bool failed = r.value("failed", false);
    const int64_t restart = r.value("restart", int64_t{0}), max_restarts = r.value("max_restarts", int64_t{0});
    if (failed && restart < max_restarts) return;  // another attempt follows
    ranks_ended_.insert(rank);
  } catch (const nlohmann::json::exception&) {
  }
}

std::string Collector::check_batch(EventBatch& batch) {
  if (batch.rank < 0 || batch.rank >= kMaxWorldSize) {
    return ddpscope::detail::concat("a batch from rank ", batch.rank, ", which no job has (ranks are 0 to ",
                                    kMaxWorldSize - 1, ")");
  }
  const int64_t offset = batch.clock_offset_ns;
  const auto storable = [offset](const BatchEvent& e) {
    int64_t begin = 0, end = 0;
    return e.t_end_ns >= e.t_begin_ns && !__builtin_add_overflow(e.t_begin_ns, offset, &begin) &&
           !__builtin_add_overflow(e.t_end_ns, offset, &end);
  };
  const auto kept = std::stable_partition(batch.events.begin(), batch.events.end(), storable);
  const auto refused = static_cast<uint64_t>(batch.events.end() - kept);
  if (refused > 0) {
    // A live rank's batch carries no per-event arguments (indices into its events).
    if (!batch.args.empty()) return "a batch with events that end before they begin";
    events_refused_ += refused;
    events_refused_by_rank_[batch.rank] += refused;
    batch.events.erase(kept, batch.events.end());
    if (!warned_refused_events_) {
      log::warn("collector: refused {} events of rank {} that end before they begin or whose times overflow", refused,
                batch.rank);
      warned_refused_events_ = true;
    }
  }
  return {};
}

bool Collector::receive_one() {
  zmq::message_t identity, token;
  if (!batches_in_.recv(identity, zmq::recv_flags::dontwait)) return false;
  std::vector<zmq::message_t> parts;
  bool more = identity.more() && batches_in_.recv(token) && token.more();
  while (more) {
    zmq::message_t part;
    (void)batches_in_.recv(part);
    more = part.more();
    parts.push_back(std::move(part));
  }
  if (token.to_string() != options_.token || parts.size() != 1) {
    ++rejected_;
    if (!warned_rejected_) {
      log::warn("collector: rejected a batch without this run's token");
      warned_rejected_ = true;
    }
    return true;
  }
  size_t events = 0;  // of the batch being stored: what a full disk loses
  try {
    EventBatch batch = decode(parts[0].data(), parts[0].size());
    if (const std::string why = check_batch(batch); !why.empty()) throw DDPSCOPE_ERROR(why);
    events = batch.events.size();
    if (disk_full_) {
      // Not even tried: room freed since (the reserve) is kept for the end record.
      lost_events_ += events;
      return true;
    }
    writer_->write(batch);
    ++batches_;
    ranks_seen_.insert(batch.rank);
    const bool places = std::any_of(batch.records.begin(), batch.records.end(),
                                    [](const std::string& r) { return r.find("\"placement\"") != std::string::npos; });
    if (!batch.events.empty() || places) ranks_joined_.insert(batch.rank);
    for (const std::string& r : batch.records)
      if (r.find("\"rank_end\"") != std::string::npos && ranks_joined_.count(batch.rank)) note_rank_end(batch.rank, r);
    // Committed: tell the rank (if it is gone, ZeroMQ drops the answer).
    const BatchAck ack{batch.sequence, batch.events.size()};
    batches_in_.send(identity, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    batches_in_.send(zmq::buffer(&ack, sizeof(ack)), zmq::send_flags::dontwait);
  } catch (const RunStoreFullError& e) {
    // The disk is full: training must go on. The batch is not acknowledged (the rank
    // counts it unshipped) and its events, and every later batch's, are counted as lost.
    lost_events_ += events;
    disk_full_ = true;
    reserve_->release();
    log::error("collector: {}; events from now on are counted as lost", e.message());
  } catch (const RunStoreError&) {
    throw;  // the run file itself failed: the caller reports it
  } catch (const std::exception& e) {
    ++rejected_;
    log::warn("collector: rejected a malformed batch: {}", e.what());
  }
  return true;
}

int Collector::poll(std::chrono::milliseconds timeout, int extra_fd, bool* extra_ready) {
  zmq::pollitem_t items[2] = {{batches_in_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, extra_fd, ZMQ_POLLIN, 0}};
  zmq::poll(items, extra_fd >= 0 ? 2 : 1, timeout);
  if (extra_ready) *extra_ready = extra_fd >= 0 && (items[1].revents & (ZMQ_POLLIN | ZMQ_POLLERR));
  int n = 0;
  // Take what is queued now, but come back to the caller regularly.
  while (n < 256 && receive_one())
    ++n;
  return n;
}

void Collector::drain(std::chrono::milliseconds quiet) {
  auto last = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - last < quiet) {
    if (poll(std::chrono::milliseconds(20)) > 0) last = std::chrono::steady_clock::now();
  }
}

void Collector::finish(RunEnd end) {
  std::string& why = end.message;
  if (lost_events_ > 0) {
    log::error("collector: {} events lost: the disk holding the run file is full", lost_events_);
    why += (why.empty() ? "" : "; ") + std::to_string(lost_events_) +
           " events lost: the disk holding the run file filled up";
  }
  try {
    writer_->set_rejected(rejected_);
    for (const auto& [rank, n] : events_refused_by_rank_)  // stats and the Summary read them
      writer_->add_refused_events(rank, n);
    writer_->set_ended_ns(now_ns());  // the run's clock is this process's CLOCK_MONOTONIC
    if (lost_events_ > 0 && end.status == "finished") end.status = "incomplete";
    writer_->end_run(end);
  } catch (const RunStoreFullError& e) {
    // Nowhere to write the outcome, even in the reserve's room: the file keeps what it
    // committed (status running).
    log::error("collector: could not record the run's end: {}", e.message());
  }
  reserve_->release();
  if (disk_full_ && !writer_->fold_wal()) {
    // SQLite keeps committed pages in the WAL until it can copy them into the file; with
    // the disk full it cannot, and the WAL holds the run's last part.
    log::error(
        "collector: the run's last part stays in {}-wal beside the run file (no room to fold it in): copy "
        "or move the two files together",
        options_.run_file);
  }
}

}  // namespace ddpscope::probes
