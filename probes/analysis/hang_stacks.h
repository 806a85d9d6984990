// Where each rank's code stood in a hang or a stall: its latest stack capture
// (run_store_reader.h, schema 12), the innermost frame of the user's own code in it, and the
// words the verdict, `ddpscope-cli hang` and the Hang tab use for it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hang_analysis.h"
#include "library_frames.h"

namespace ddpscope::probes {

// The innermost frame of the user's own code; -1 when every frame is a library's.
int user_frame(const ThreadStack& thread);
// "load_batch at train.py:15 (`time.sleep(30)`), called from main at train.py:21": the
// innermost user frame and, with_caller, the next user frame out (file names without their
// folder; a native frame without a line is named with its function, less its parameters, and
// its program: "ddpscope::apps::Trainer::step in ddpscope-worker"). Empty when no frame is
// the user's.
std::string code_position(const ThreadStack& thread, bool with_caller = true);
// Each rank's latest capture, by rank; a later one whose training thread gave no frame (it
// did not answer) does not replace one that did.
std::vector<StackCapture> latest_stacks(const std::vector<StackCapture>& all);
// True when the capture was taken at or after the rank's last event, or while the rank waited
// in the collective it never left: the rank still stood there when the run ended (or now, live).
bool stack_is_current(const HangReport& report, const StackCapture& capture);
// The verdict's sentences on the ranks' code: the culprits first ("Rank 1 is in load_batch at
// train.py:15 (`time.sleep(30)`), called from main at train.py:21 (its stack, after 3.0 s
// without progress)."), then the ranks waiting in a collective ("Rank 0 waits in allreduce
// #6, called from main at train.py:22 (`loss.backward()`)."). Empty without current stacks.
std::string stacks_sentences(const HangReport& report);
// `hang`'s listing of one capture: the user's frames, innermost first, and how many library
// frames were left out (all of them with all_frames), for the training thread (every thread
// with all_frames).
std::string stack_text(const StackCapture& capture, bool all_frames, int64_t run_start_ns);
// PyTorch's flight records keep the Python stack that made each collective: for the collective
// a finding is about, each member's record with frames becomes that rank's stack (language
// "record") where the rank sent none of its own, so dumps are shown as captures are (`hang`'s
// listing, its JSON, the Hang tab's "Its code").
void add_flight_record_stacks(HangReport& report);
nlohmann::ordered_json stacks_json(const HangReport& report);

}  // namespace ddpscope::probes
