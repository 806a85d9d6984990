#include "job_monitor.h"
#include "ddpscope/log.h"

#include <signal.h>

#include <cstdio>
#include <regex>
#include <tuple>

#include "collector_process.h"
#include "ddpscope/error.h"
#include "hang_analysis.h"
#include "rank_state_watch.h"
#include "json_number.h"
#include "mpirun_messages.h"
#include "run_store_reader.h"
#include "worker_protocol.h"

namespace ddpscope::apps {
namespace {

using namespace std::chrono_literals;

// How long mpirun has to end the ranks once asked: after a signal from the user, and
// after the launcher gave up on the job itself.
constexpr auto kStopGrace = 10s;
constexpr auto kGiveUpGrace = 3s;

// Why a job has not started training, from what its run file holds so far: the ranks
// that never reached the collector (still starting MPI), or, when all did, the hang
// analysis, which names the rank that never entered the collective the others wait in
// (DDP's parameter broadcast, say). Empty when the file says nothing more.
std::string describe_stuck_start(const std::string& run_file, int np) {
  try {
    probes::RunStoreReader run(run_file);
    std::vector<bool> seen(static_cast<size_t>(np), false);
    for (const auto& r : run.ranks())
      if (r.rank >= 0 && r.rank < np) seen[static_cast<size_t>(r.rank)] = true;
    std::string missing;
    for (int r = 0; r < np; ++r)
      if (!seen[static_cast<size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (!missing.empty()) return "; ranks that never reached the run's collector: " + missing;
    const probes::HangReport report = probes::analyze_hang(run);
    std::string verdict = report.verdict;
    if (!verdict.empty() && verdict.back() == '.') verdict.pop_back();  // the caller goes on
    if (!verdict.empty()) return "; every rank reached the run's collector. " + verdict;
  } catch (const std::exception&) {
    // Nothing readable yet: the message stands without it.
  }
  return {};
}

}  // namespace

JobMonitor::JobMonitor(const Settings& settings, CollectorProcess* collector)
    : settings_(settings),
      collector_(collector),
      progress_(settings.iterations, settings.style, settings.log_every),
      failure_grace_(settings.limits.failure_grace),
      start_watchdog_(settings.limits.start_timeout, WatchdogClock::now(), settings.training),
      end_watchdog_(settings.limits.end_timeout, settings.world_size),
      out_lines_("stdout", [this](const std::string& line) { stdout_line(line); }),
      err_lines_("stderr", [this](const std::string& line) { stderr_line(line); }) {
  // A script's own rendezvous has a timeout (torch's). RPC jobs report their start once
  // every rank is up: a rank stopped in MPI's start-up held them for ever.
  if (settings_.script) start_watchdog_.started();
  // RPC jobs report no training's end: their first rank's end arms the end watchdog (a
  // worker stopped by a signal hung them for ever).
  if (!settings_.training) end_watchdog_.trains_nothing();
  if (collector_) rank_states_.emplace(collector_->run_file(), settings_.world_size);
}

ProcessSupervisor::Events JobMonitor::events(ProcessSupervisor& job) {
  return {[this](const std::string& line) { out_lines_.line(line); },
          [this](const std::string& line) { err_lines_.line(line); }, [this, &job](int sig) { signal(sig, job); },
          [this, &job](WatchdogClock::time_point now) { tick(now, job); }};
}

void JobMonitor::stdout_line(const std::string& line) {
  const auto ev = job_events::parse_line(line);
  if (!ev) {
    std::printf("%s\n", line.c_str());
    return;
  }
  if (const auto* start = std::get_if<job_events::Start>(&*ev)) {
    start_watchdog_.started();
    started_ = true;
    // A rank stopped in its start-up goes on once mpirun continues it to end it: a start
    // said after the launcher gave up is not news.
    if (gave_up_) return;
    if (!settings_.training) {
      std::printf("%s on %d ranks: every rank is up\n", start->describe.c_str(), start->world_size);
    } else if (settings_.style == ProgressStyle::Json) {
      job_events::write_event(stdout, *start);
    } else {
      std::printf("training %s on %d rank%s (%s backend)", start->describe.c_str(), start->world_size,
                  start->world_size == 1 ? "" : "s", start->backend.c_str());
      if (settings_.iterations > 0) std::printf(" for %lld iterations", static_cast<long long>(settings_.iterations));
      std::printf("\n");
    }
  } else if (const auto* progress = std::get_if<job_events::Progress>(&*ev)) {
    progress_.update(progress->iter, progress->loss, progress->samples_per_s);
  } else if (const auto* done = std::get_if<job_events::Done>(&*ev)) {
    seconds_ = done->seconds;
    stopped_at_ = done->stopped_at;
    end_watchdog_.training_done(WatchdogClock::now());
  }
  std::fflush(stdout);
}

void JobMonitor::stderr_line(const std::string& line) {
  if (const auto ev = job_events::parse_line(line)) {
    const auto now = WatchdogClock::now();
    if (const auto* end = std::get_if<job_events::RankEnd>(&*ev)) {
      dropped_by_rank_.emplace_back(end->rank, end->dropped);
      end_watchdog_.rank_ended(end->rank, now);
    } else if (const auto* error = std::get_if<job_events::Error>(&*ev); error && failed_rank_ < 0) {
      failed_rank_ = error->rank;
      failure_ = error->message;
      failed_collective_ = error->collective;
      failure_grace_.rank_failed(failed_rank_, now);
      start_watchdog_.rank_failed();
      end_watchdog_.rank_failed();
      // mpirun may end the job itself once the failed rank exits.
      if (rank_states_) rank_states_->freeze();
    }
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  err_tail_.push_back(line);
  if (err_tail_.size() > 64) err_tail_.pop_front();
}

void JobMonitor::signal(int sig, ProcessSupervisor& job) {
  if (sig == SIGUSR2) {  // where every rank's code stands now (`hang --ask`)
    if (collector_) {
      collector_->request_stacks();
      log::info("asked every rank for its threads' stacks");
    }
    return;
  }
  if (sig == SIGUSR1) {  // record the next iteration's autograd graph
    if (collector_) {
      collector_->request_graph();
      log::info("asked every rank for the autograd graph of its next iteration");
    }
    return;
  }
  if (interrupted_) {
    job.stop(0s);  // a second signal: stop now
    return;
  }
  interrupted_ = true;
  std::fprintf(stderr, "\n");  // off the progress bar's line
  log::warn("stopping the job (signal {}): forwarding SIGTERM to every rank", sig);
  if (rank_states_) rank_states_->freeze();
  job.stop(kStopGrace);
}

void JobMonitor::tick(WatchdogClock::time_point now, ProcessSupervisor& job) {
  if (job.stopping()) return;  // stopped by the user, or given up already
  if (rank_states_) rank_states_->poll(now);
  if (auto why = failure_grace_.expired(now)) {
    gave_up_ = true;
    log::warn("{}", *why);
    if (rank_states_) rank_states_->freeze();
    job.stop(kGiveUpGrace);
    return;
  }
  // Looked at before ending the job: mpirun continues stopped ranks as it ends them.
  const auto stuck_why = [this] {
    return collector_ ? describe_stuck_start(collector_->run_file(), settings_.world_size) : std::string();
  };
  std::optional<std::string> timeout = start_watchdog_.expired(now, stuck_why);
  if (!timeout) timeout = end_watchdog_.expired(now);
  if (!timeout) return;
  gave_up_ = timed_out_ = true;
  failure_ = *timeout;
  log::error("{}. Ending it", failure_);
  if (rank_states_) rank_states_->freeze();
  job.stop(kGiveUpGrace);
}

// With no rank's own report, mpirun's words name the rank: a fatal MPI error, or a rank
// killed by a signal. Another rank's report of what that death did to it (a broken
// connection, a timeout) keeps mpirun's words, so the diagnosis names the rank that died.
void JobMonitor::name_failure_from_mpirun() {
  if (failed_rank_ < 0) std::tie(failed_rank_, failure_) = mpi_fatal_error(err_tail_);
  const auto [dead, line] = rank_death(err_tail_);
  if (dead < 0) return;
  static const std::regex signal_re("signal ([0-9]+)( \\(([^)]*)\\))?");
  if (std::smatch m; std::regex_search(line, m, signal_re)) {
    dead_rank_ = dead;
    dead_signal_ = m[0].str();
  }
  if (failed_rank_ < 0) {
    failed_rank_ = dead;
    failure_ = line;
  } else if (dead != failed_rank_) {
    failure_ += " (mpirun: " + line + ")";
  }
}

void JobMonitor::close_run(const std::string& status, const std::string& message) {
  if (!collector_) return;
  // A job that ended by itself keeps no states: its ranks were not ended while stopped.
  if (rank_states_ && status != "finished") collector_->note_rank_end_states(rank_states_->states());
  probes::RunEnd end{status, message, failed_rank_, dead_rank_, dead_signal_, {}};
  if (status == "failed") end.failed = failed_collective_;
  collector_->finish(end, dropped_by_rank_);
  std::printf("run file: %s (summary: ddpscope-cli stats %s)\n", collector_->run_file().c_str(),
              collector_->run_file().c_str());
  std::fflush(stdout);
}

// The rank that reports a timeout is rarely the culprit: the run file knows which rank
// never entered the collective (the hang analysis, as `ddpscope-cli hang` prints it).
void JobMonitor::print_diagnosis() const {
  if (!collector_) return;
  try {
    probes::RunStoreReader run(collector_->run_file());
    const probes::HangReport report = probes::analyze_hang(run);
    if (!report.verdict.empty()) std::fprintf(stderr, "diagnosis: %s\n", report.verdict.c_str());
  } catch (const std::exception&) {
    // A run file too damaged to read: the error above is all there is.
  }
}

int JobMonitor::finish(int wait_status) {
  out_lines_.flush();  // a rank's last words without a newline
  err_lines_.flush();
  // mpirun ended by the launcher dies by its signal: that is no crash of the job's.
  const int code = gave_up_ ? 1 : ProcessSupervisor::exit_code(wait_status);
  const bool json = settings_.style == ProgressStyle::Json;
  if (code == 0 && !interrupted_) {
    if (settings_.script && !started_) {
      std::printf(
          "note: the script ran no DistributedDataParallel forward, so the run has no iterations; it holds the "
          "torch.distributed collectives the script called, if any\n");
    } else if (settings_.training) {
      progress_.finish(seconds_, stopped_at_);
    }
    close_run("finished", "");
    return 0;
  }
  // Not after the launcher ended a job stuck starting or ending: those are its own signals.
  if (!timed_out_) name_failure_from_mpirun();
  if (interrupted_) {
    close_run("stopped", "stopped by a signal");
    std::fprintf(stderr, "error: the job was stopped by a signal\n");
    return 130;
  }
  if (timed_out_) {
    close_run("failed", failure_);
    if (json) job_events::write_event(stdout, job_events::Failed{-1, failure_, code});
    std::fprintf(stderr, "error: %s\n", failure_.c_str());
    return code;
  }
  const std::string unreported = detail::concat("mpirun exited with code ", code, " and no rank reported an error");
  close_run("failed", failed_rank_ >= 0 ? failure_ : unreported);
  if (json) {
    job_events::write_event(
        stdout, job_events::Failed{failed_rank_, failed_rank_ >= 0 ? failure_ : "no rank reported an error", code});
  }
  if (failed_rank_ >= 0)
    std::fprintf(stderr, "error: the job failed: rank %d: %s\n", failed_rank_, failure_.c_str());
  else
    std::fprintf(stderr, "error: the job failed: %s\n", unreported.c_str());
  print_diagnosis();
  return code == 0 ? 1 : code;
}

}  // namespace ddpscope::apps
