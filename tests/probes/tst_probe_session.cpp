// Probe sessions: one at a time in a process; a second is refused while the first runs.
#include <QtTest/QtTest>

#include <limits>

#include <QTemporaryDir>
#include <thread>

#include "clock_offset_estimator.h"
#include "event_batch.h"
#include "probe.h"
#include "probe_session.h"
#include "run_store_reader.h"
#include "thread_buffer.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace ddpscope::probes::testing {
int record_with_probes_compiled_out();  // compiled_out_calls.cpp
}

class TestProbeSession : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const char* name) { return dir_.filePath(name); }

 private slots:

  void testOnlyOneSessionAtATime() {
    ProbeSession a({.rank = 0, .run_file = path("one.ddprun").toStdString()});
    QVERIFY_THROWS_EXCEPTION(Error, ProbeSession({.rank = 0, .run_file = path("two.ddprun").toStdString()}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestProbeSession)
#include "tst_probe_session.moc"
