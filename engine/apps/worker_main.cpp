// ddpscope-worker: the per-rank training program that the launcher starts under mpirun.
// It takes the same `train` options as ddpscope-cli (plus --backend) and reports to the
// launcher through job_events.h's lines (worker_protocol.h). With the launcher's collector in
// the environment it records probes and ships them there. DDPSCOPE_FAULT makes a rank fail on purpose
// (fault_injection.h): at an iteration and phase, by an error, SIGKILL or SIGSEGV.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "c10d/mpi_environment.h"
#include "ddpscope/log.h"
#include "c10d/process_group.h"
#include "c10d/work.h"
#include "json_number.h"
#include "probe.h"
#include "probe_session.h"
#include "dist_examples.h"
#include "fault_injection.h"
#include "link_test.h"
#include "remote_embedding_trainer.h"
#include "rpc_ping.h"
#include "tensor/blas_kernels.h"
#include "torchrun_launch.h"
#include "train_cli_options.h"
#include "worker_protocol.h"

namespace {

std::unique_ptr<ddpscope::probes::ProbeSession> g_probes;

// Tells the launcher how many events this rank shipped and could not ship.
void report_probes(int rank) {
  if (!g_probes) return;
  g_probes->flush();
  ddpscope::apps::emit_rank_end(rank, g_probes->shipped(), g_probes->dropped());
}

// Reports the error, then ends every rank: the others may be waiting in a collective
// this rank will never join, and a normal exit would wait for them in MPI_Finalize.
[[noreturn]] void fail_job(int rank, const std::string& message, ddpscope::probes::FailedCollective collective = {}) {
  report_probes(rank);
  ddpscope::apps::job_events::write_event(stderr, ddpscope::apps::job_events::Error{rank, message, collective});
  ddpscope::c10d::MpiEnvironment::abort_job(1);
}

// The iterations of a job (Trainer or RemoteEmbeddingTrainer), reporting progress from
// rank 0 and acting out DDPSCOPE_FAULT.
template <typename AnyTrainer>
void train_loop(AnyTrainer& trainer, ddpscope::c10d::ProcessGroup& group, const std::string& backend_name) {
  using namespace ddpscope;
  using namespace ddpscope::apps;
  const int rank = group.rank();
  set_fault_reporter([rank](const std::string& what) {
    report_probes(rank);
    log::warn("rank {} shipped {} probe events, then raised {} (DDPSCOPE_FAULT)", rank,
              g_probes ? g_probes->shipped() : 0, what);
  });
  if (rank == 0) {
    job_events::write_event(stdout, job_events::Start{group.size(), backend_name, trainer.describe()});
  }
  if (trainer.options().measure_links) measure_links(group);
  const auto start = std::chrono::steady_clock::now();
  double rate = 0;
  int64_t iterations = trainer.options().iters;
  std::unique_ptr<ddp::DistributedDataParallel::JoinContext> join;
  if constexpr (requires { trainer.join_context(); }) {
    iterations = trainer.iterations();  // fewer on an --inject-uneven rank
    join = trainer.join_context();      // --join: shadow the others' allreduces after them
  }
  int64_t completed = 0, stopped_at = -1;
  try {
    for (int64_t i = 0; i < iterations; ++i) {
      fault_point("iteration", rank, i + 1);
      const StepResult r = trainer.step();
      completed = r.iteration;
      const double now = static_cast<double>(trainer.samples_per_step()) / std::max(r.seconds, 1e-9);
      rate = i == 0 ? now : 0.9 * rate + 0.1 * now;
      if (rank == 0) {
        job_events::write_event(stdout,
                                job_events::Progress{.iter = r.iteration, .loss = r.loss, .samples_per_s = rate});
      }
    }
    if (join) join->finish();
  } catch (const ddp::DistributedDataParallel::EarlyTermination& e) {
    // --join-throw: every rank gets here in the same iteration; the job ends normally.
    DDPSCOPE_INSTANT(probes::Kind::Mark, "join: early termination");
    if (rank == 0) log::info("training stopped on every rank: {} (--join-throw)", e.message());
    stopped_at = completed;
  }
  if (rank == 0) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    job_events::write_event(stdout, job_events::Done{.seconds = seconds, .stopped_at = stopped_at});
  }
  if constexpr (requires { trainer.measure_allreduce_cost(); }) {
    if (trainer.options().measure_allreduce) trainer.measure_allreduce_cost();
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddpscope;
  using namespace ddpscope::apps;
  // A rank ends with the mpirun (or orted) that started it. mpirun aborted by a second
  // signal exits without ending its ranks, each in a process group of its own: two
  // Ctrl-C's then SIGKILL left torch ranks training with PPID 1. SIGTERM, as
  // mpirun itself sends: a rank still writes its flight-recorder dump on the way out (a
  // SIGKILL here lost them, and the hang diagnosis with them); the launcher kills what is
  // left after its grace. The signal survives the exec into the interpreter (torchrun) and
  // the BLAS re-exec.
  if (std::getenv("OMPI_COMM_WORLD_RANK")) {
    const pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) return 1;  // it is gone already
  }
  reexec_with_preferred_blas_core(argv);
  if (argc > 1 && std::strcmp(argv[1], "torchrun") == 0) {
    try {
      return torchrun_worker(argc - 1, argv + 1);  // returns only when the interpreter did not start
    } catch (const std::exception& e) {
      const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
      job_events::write_event(stderr, job_events::Error{r ? std::atoi(r) : -1, ddpscope::user_message(e)});
      return 2;
    }
  }
  const bool ping = argc > 1 && std::strcmp(argv[1], "rpc-ping") == 0;
  const bool example = argc > 1 && std::strcmp(argv[1], "example") == 0;
  if (ping || example) {
    try {
      return ping ? rpc_ping_worker(argc - 1, argv + 1) : example_worker(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
      fail_job(r ? std::atoi(r) : -1, ddpscope::user_message(e));
    }
  }
  CLI::App app{"ddpscope-worker: one rank of a training job (started by ddpscope-cli train --np N)"};
  TrainOptions options;
  LaunchOptions launch;
  add_train_options(app, options, launch);
  CLI11_PARSE(app, argc, argv);

  // Known before MPI starts, so even an init failure names its rank.
  const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  int rank = env_rank ? std::atoi(env_rank) : -1;
  // Outside the try: a group destroyed while an error unwinds, with a collective it
  // cannot cancel, ends the job before the error could be reported.
  std::shared_ptr<c10d::ProcessGroup> group;
  try {
    group = c10d::init_process_group({.backend = launch.backend});
    rank = group->rank();
    // Before the model is built: DDP records its bucket assignment at construction.
    g_probes = probes::ProbeSession::from_environment(rank, launch.backend == "nccl" ? "cuda" : "cpu");
    if (g_probes) g_probes->watch_native_stacks();  // where a stalled rank's code stands
    probes::set_thread_name("compute");
    if (options.remote_embedding) {
      RemoteEmbeddingTrainer trainer(options, group);
      train_loop(trainer, *group, launch.backend);
      trainer.finish();
    } else {
      Trainer trainer(options, group);
      train_loop(trainer, *group, launch.backend);
    }
    group->barrier()->wait();
    // Training's events leave now, before MPI's shutdown, which has no timeout: a rank
    // that hangs there (or is stopped) still has every event of its training stored.
    if (g_probes) g_probes->flush();
    fault_point("end", rank, options.iters);
    report_probes(rank);
    g_probes.reset();
  } catch (const c10d::CommError& e) {
    // The collective it ended, typed: the hang verdict reads these, never the words.
    fail_job(rank, e.message(), {e.op_name(), e.sequence_number(), e.timed_out()});
  } catch (const Error& e) {
    fail_job(rank, e.message());
  } catch (const std::exception& e) {
    fail_job(rank, e.what());
  }
  return 0;
}
