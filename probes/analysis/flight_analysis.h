// The hang verdict from flight-recorder records alone (flight_records.h): for each process
// group, the ranks' records are matched by collective sequence number, and the first one
// that does not match is classified as PyTorch's flight-recorder analyzer classifies it:
//
//   fully matched             every member recorded it with the same op, sizes and dtypes,
//                             and each is in the same state
//   missing ranks             some member never recorded it (never called it)
//   collective type mismatch  the members called different ops as this number
//   size mismatch             same op, different input or output sizes
//   dtype mismatch            same op and sizes, different dtypes
//   state mismatch            all alike, but some completed it and some did not, or
//                             some started it and some have it only scheduled
//   unknown values            a record names an op, dtype or state no PyTorch writes
//
// Sends and receives are paired per group and direction, in order (by p2p number when a
// ring dropped older records), and judged likewise: a receive no rank sent, a send no
// rank received, sizes or dtypes that differ between the two ends.
//
// The verdict names the group, the collective, the ranks on each side with what each was
// doing (phase and iteration, or the stack's top frame in PyTorch's dumps), and the likely
// culprit first: the minority; a rank that called it from a later step than the others
// (it skipped one: it never called what they called); a rank that deviated from what it
// called at the same point of an earlier iteration; the ranks that did not complete it.
// No message text is read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "flight_records.h"

namespace ddpscope::probes {

enum class MatchClass {
  FullyMatched,
  MissingRanks,
  TypeMismatch,
  SizeMismatch,
  DtypeMismatch,
  StateMismatch,
  UnknownValues,  // a record names an op, dtype or state no PyTorch writes: not judged
};
const char* match_class_name(MatchClass c);  // "size mismatch", ...

// The first collective of a group that does not match, or (all matched) the last one.
struct GroupFinding {
  std::string group;  // the group's name ("world", "0", "world[0,2]")
  std::string desc;
  std::vector<int> members;  // global ranks
  MatchClass cls = MatchClass::FullyMatched;
  int64_t seq = -1;        // its collective sequence number (p2p: the send's p2p number)
  int64_t first_seq = -1;  // the first number every rank's records hold
  // A point-to-point finding: a send and its receive (global ranks of the two ends).
  bool p2p = false;
  int p2p_src = -1, p2p_dst = -1;
  std::map<int, CollectiveRow> calls;  // each member's record of it (absent: none)
  std::vector<int> culprits;           // likely culprits, first the likeliest
  std::vector<int> others;             // the other side
  std::vector<int> no_records;         // members of which nothing of this group is known
  bool skipped = false;                // a culprit never called it: its record is of a later step
  bool pending = false;                // it never completed everywhere (the job stopped in it)
  std::string verdict;                 // one paragraph
};

struct FlightVerdict {
  std::vector<GroupFinding> groups;  // those with a finding first
  std::vector<int> culprits;         // over every group, likeliest first
  // The first thing to read (empty when every group fully matched and completed).
  std::string verdict;
  bool all_matched() const { return verdict.empty(); }
};

// dead_rank / dead_signal: a rank the launcher saw die (-1: none), named in the verdict.
// live_now_ns: for a job still running, the time now on the run's clock: a collective
// some rank has not finished (or not called) yet is no finding while its latest record is
// younger than 5 s (it is in flight); calls that do not match always are. 0: the job ended.
FlightVerdict analyze_flight(const FlightData& data, int dead_rank = -1, const std::string& dead_signal = {},
                             int64_t live_now_ns = 0);

// The records as they stood when the first rank's watchdog fired on time (the job failed
// then; a stopped rank continued at teardown may finish a collective afterwards): what the
// verdict and the grid are drawn from. Unchanged when no rank timed out.
FlightData records_at_failure(FlightData data);

// "allreduce f32[1024]" / "allreduce_coalesced 3 tensors f32[...] " as a record shows it.
std::string call_text(const CollectiveRow& row);

}  // namespace ddpscope::probes
