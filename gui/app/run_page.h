// A page that shows the open run. The window keeps a list of them and hands each the run
// (the page on screen at once, the others when they are next shown) without knowing what a
// page draws or which of its parts need what.
#pragma once

#include <QString>
#include <memory>
#include <optional>

#include "run_data.h"

namespace ddpscope::probes {
class RunStoreReader;
}

namespace ddpscope::gui {

// The run as the window shows it now.
struct ShownRun {
  std::shared_ptr<const RunData> run;
  // A live reload (or reopening) of the run shown before: keep the user's place.
  bool sameRun = false;
  // The file, open, for a page that reads more than RunData holds; null when unreadable.
  probes::RunStoreReader* reader = nullptr;
  bool stalled = false;       // a live job made no progress for a while
  bool followingJob = false;  // the run is the running job's, followed live
};

class RunPage {
 public:
  virtual ~RunPage() = default;
  virtual void showRun(const ShownRun& shown) = 0;
  // Another run (or a reload of this one) is coming: let go of what holds the run shown so
  // far, which may be freed before this page is next shown.
  virtual void releaseRun(bool sameRun) {}
  // Why the page has nothing to show for `run` (null: no run is open, see noRunOpen()), said
  // in place of its content by the EmptyState in its tab; empty: it has something to show.
  // Asked at every run, whether the page is on screen or not. nullopt: the page says it
  // itself, or is never empty.
  virtual std::optional<QString> whyEmpty(const RunData* run) const { return std::nullopt; }
  static QString noRunOpen();
  // What a page that needs DDP iterations says on a run without any.
  static QString noDdpIterations();
};

}  // namespace ddpscope::gui
