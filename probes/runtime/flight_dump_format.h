// The flight-recorder dump's keys and version, defined once: ddpscope's writer
// (flight_recorder.cpp, which writes from a signal handler) and the reader of PyTorch's
// and ddpscope's dumps (flight_dump_reader.cpp) both spell them from here. The keys are
// PyTorch's FlightRecorder's (its "version" 2.x), plus a few of ddpscope's own, which
// PyTorch's tools ignore.
//
// Bumping the version: ddpscope writes PyTorch's major version and its own minor.
//   - A key ddpscope adds, or a value it now writes in a new form that old readers skip
//     safely: the minor goes up (readers take any minor of a major they know).
//   - A key renamed or removed, or a value whose meaning changes: follow PyTorch's major,
//     and teach the reader both forms first (dumps of every version in the field stay
//     readable: tst_flight_dumps keeps one of each).
#pragma once

namespace ddpscope::probes::flight_keys {

// The version ddpscope writes, and its producer's name.
inline constexpr char kWrittenVersion[] = "2.4";
inline constexpr char kProducerName[] = "ddpscope";

// Top level.
inline constexpr char version[] = "version";
inline constexpr char producer[] = "producer";  // ddpscope's
inline constexpr char rank[] = "rank";
inline constexpr char dump_reason[] = "dump_reason";    // ddpscope's
inline constexpr char dump_trigger[] = "dump_trigger";  // ddpscope's: timeout | signal | sigterm
inline constexpr char dump_time_ns[] = "dump_time_ns";  // ddpscope's
inline constexpr char stall_ns[] = "stall_ns";          // ddpscope's
inline constexpr char stall_end_ns[] = "stall_end_ns";  // ddpscope's
inline constexpr char pg_config[] = "pg_config";
inline constexpr char pg_status[] = "pg_status";
inline constexpr char entries[] = "entries";
inline constexpr char comm_lib_version[] = "comm_lib_version";
inline constexpr char nccl_version[] = "nccl_version";  // older PyTorch's comm_lib_version
inline constexpr char nccl_comm_state[] = "nccl_comm_state";

// A group of pg_config.
inline constexpr char group_name[] = "name";
inline constexpr char group_desc[] = "desc";
inline constexpr char group_ranks[] = "ranks";

// An entry.
inline constexpr char record_id[] = "record_id";
inline constexpr char pg_id[] = "pg_id";
inline constexpr char process_group[] = "process_group";
inline constexpr char collective_seq_id[] = "collective_seq_id";
inline constexpr char p2p_seq_id[] = "p2p_seq_id";
inline constexpr char op_id[] = "op_id";
inline constexpr char profiling_name[] = "profiling_name";
inline constexpr char is_p2p[] = "is_p2p";
inline constexpr char input_sizes[] = "input_sizes";
inline constexpr char output_sizes[] = "output_sizes";
inline constexpr char input_dtypes[] = "input_dtypes";
inline constexpr char output_dtypes[] = "output_dtypes";
inline constexpr char input_numel[] = "input_numel";  // ddpscope's: inputs of differing shapes
inline constexpr char state[] = "state";
inline constexpr char time_created_ns[] = "time_created_ns";
inline constexpr char time_started_ns[] = "time_discovered_started_ns";
inline constexpr char time_completed_ns[] = "time_discovered_completed_ns";
inline constexpr char retired[] = "retired";
inline constexpr char duration_ms[] = "duration_ms";
inline constexpr char timeout_ms[] = "timeout_ms";
inline constexpr char phase[] = "phase";          // ddpscope's: forward, backward, ...
inline constexpr char iteration[] = "iteration";  // ddpscope's
inline constexpr char frames[] = "frames";

}  // namespace ddpscope::probes::flight_keys
