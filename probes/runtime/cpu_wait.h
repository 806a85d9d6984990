// How long a thread has waited for a CPU: ready to run, but not running, because other
// threads had the host's cores (the kernel's run-queue delay, /proc/thread-self/schedstat).
// A rank that is late only because it waited for a core is not slow at its work: the host is
// oversubscribed (more busy threads than cores), and `why` says so instead of naming a phase.
//
// The training thread says which phase it enters; its wait is summed by phase, as the cause
// analysis cuts a rank's time (slow_cause.h): forward, backward until its last gradient, the
// optimizer, and outside them everything else (between iterations, waking from collectives,
// DDP's finalize). A communication thread's wait to start an op it was handed delays the
// rank's arrival at the collective, which the analysis counts outside the phases: it is
// added to "outside".
#pragma once

#include <array>
#include <cstdint>

namespace ddpscope::probes {

// Nanoseconds the calling thread has waited on a run queue since it started; -1 where the
// kernel does not say (then nothing is recorded, rather than a zero that reads as "never
// waited").
int64_t thread_cpu_wait_ns();

enum class CpuPhase { Outside = 0, Forward, Backward, Optimizer };
inline constexpr int kCpuPhases = 4;

// The calling thread enters `phase`: its wait since its last call goes to the phase it left.
void enter_cpu_phase(CpuPhase phase);

// The calling thread's wait by phase since its last take (indexed by CpuPhase), in ms, with
// the communication threads' waits to start an op added to Outside; all -1 when the kernel
// does not say or the thread never entered a phase.
std::array<double, kCpuPhases> take_cpu_phase_waits_ms();

// A communication thread's wait for a CPU between being handed an op and starting it.
void add_comm_cpu_wait_ns(int64_t ns);

}  // namespace ddpscope::probes
