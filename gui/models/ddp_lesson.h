// DDP lessons: one rank's first two iterations of a recorded DDP run, replayed for the
// Learn tab. The steps are:
//   - an iteration starting, with its bucket assignment (rebuilt from iteration 2);
//   - autograd nodes running;
//   - gradients becoming ready and filling their buckets;
//   - buckets ready, their allreduces launched and done;
//   - finalize waiting for what is still reducing;
//   - under ZeRO (a run with a partition), this rank stepping its share of each bucket
//     and the parameters broadcast from their owners.
// These show the reducer's rules at work: gradients come in reverse order, allreduces
// launch in bucket index order, communication overlaps the rest of backward, and the
// buckets are rebuilt after the first iteration.
#pragma once

#include "lesson.h"

namespace ddpscope::gui {

// Throws probes::RunStoreError when the run cannot be read; steps are empty when `rank`
// recorded no DDP iteration.
Lesson loadDdpLesson(probes::RunStoreReader& run, int rank = 0);

// Lesson::explain for a DDP lesson's step.
std::string explainDdpStep(const Lesson& lesson, size_t i);

}  // namespace ddpscope::gui
