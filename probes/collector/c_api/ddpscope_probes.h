/* The probes' C interface: what a process that is not C++ (a PyTorch job, through
 * Python's ctypes) needs to record into a ddpscope run. One implementation of shipping,
 * batching, the token and clock alignment serves the engine and these callers alike.
 *
 *   ddpscope_start(rank, "cpu");          // a rank started by ddpscope's launcher
 *   int64_t t0 = ddpscope_now_ns();
 *   ...
 *   ddpscope_event(DDPSCOPE_KIND_FORWARD, "forward", t0, ddpscope_now_ns(), -1, -1, -1, -1, -1, -1, -1);
 *   ddpscope_stop();
 *
 * Kinds are the run file's (probes/runtime/event.h); ddpscope_kind("allreduce") gives a kind's
 * number by its name. Times are CLOCK_MONOTONIC nanoseconds (ddpscope_now_ns). Integer
 * arguments of -1 mean "not set"; an event's iteration -1 is the current one
 * (ddpscope_set_iteration).
 *
 * Every function may be called from any thread, and is a no-op while no session runs.
 * No function throws or aborts: a failure returns -1 and ddpscope_last_error() says
 * what went wrong on this thread. */
#ifndef DDPSCOPE_PROBES_C_H
#define DDPSCOPE_PROBES_C_H

#include <stdint.h>

#define DDPSCOPE_C_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording for `rank` when the job was started by ddpscope's launcher (the
 * collector's address is in the environment). 1: started; 0: not under the launcher
 * (nothing is recorded); -1: error. A second start while one runs is an error. */
DDPSCOPE_C_API int ddpscope_start(int rank, const char* device);
/* Ships what is left and stops recording. Returns the events lost (full buffers, batches
 * refused or never confirmed), or -1 when no session ran. */
DDPSCOPE_C_API int64_t ddpscope_stop(void);
/* Ships everything recorded so far before returning. */
DDPSCOPE_C_API void ddpscope_flush(void);
DDPSCOPE_C_API int ddpscope_enabled(void);

DDPSCOPE_C_API int64_t ddpscope_now_ns(void);
/* The kind's number by its name in the run file ("forward", "grad_ready", ...); -1 when
 * there is no such kind. */
DDPSCOPE_C_API int ddpscope_kind(const char* name);
DDPSCOPE_C_API void ddpscope_set_iteration(int64_t iteration);
DDPSCOPE_C_API void ddpscope_set_thread_name(const char* name);

/* One span (t_end_ns > t_begin_ns) or instant (t_end_ns == t_begin_ns). Returns -1 for
 * an unknown kind, a missing name or an end before the begin. */
DDPSCOPE_C_API int ddpscope_event(int kind, const char* name, int64_t t_begin_ns, int64_t t_end_ns, int32_t iteration,
                                  int32_t param, int32_t bucket, int32_t peer, int64_t bytes, int64_t id, int64_t id2);
/* A structured record as JSON text (probes/store/RUN_FILE.md: "buckets", "metric", ...).
 * Returns -1 when the text is not a JSON object with a "type". */
DDPSCOPE_C_API int ddpscope_record(const char* json);

/* 1 once after the user asked where every rank's code stands (`hang --ask`): the caller
 * records its threads' stacks then; else 0. */
DDPSCOPE_C_API int ddpscope_take_stacks_request(void);

/* What the last failing call on this thread said ("" when none failed). */
DDPSCOPE_C_API const char* ddpscope_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
