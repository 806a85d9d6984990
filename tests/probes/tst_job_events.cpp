// job_events.h, the one definition of what a job's processes say to their launcher and to the
// app: every event survives a line and back with its fields; the job's own output, broken
// JSON and unknown events are not events; a loss that is not finite keeps its value; and the
// PyTorch probe's Python writer (probes/python/ddpscope/_report.py) speaks the same events,
// the collective a failure ended typed in its error.
#include <QtTest/QtTest>

#include <cmath>
#include <set>

#include "job_events.h"
#include "test_registry.h"

using namespace ddpscope::probes;
namespace ev = ddpscope::probes::job_events;

class TestJobEvents : public QObject {
  Q_OBJECT

  // One of each event, every field away from its default.
  static std::vector<ev::Event> everyEvent() {
    return {ev::Start{4, "mpi", "mlp 6x256"},
            ev::Progress{12, 200, 0.25, 1234.5, -1},
            ev::Done{3.5, 200, 150, 999.0, 0.125},
            ev::Error{1, "timeout: rank 1 waited 4000 ms in allreduce #7", {"allreduce", 7, true}},
            ev::RankEnd{3, 1000, 2},
            ev::Failed{2, "rank 2 died", 137},
            ev::Collector{"tcp://127.0.0.1:5000", "tcp://127.0.0.1:5001"},
            ev::Collect{"/tmp/run.ddprun", {"export A=1", "export B=2"}, "A=1 B=2"},
            ev::Ranks{4, 1}};
  }

 private slots:
  void testEveryEventSurvivesALine() {
    const auto events = everyEvent();
    QCOMPARE(events.size(), std::variant_size_v<ev::Event>);
    std::set<size_t> kinds;
    for (const ev::Event& e : events) {
      const std::string line = ev::to_line(e);
      QVERIFY2(line.rfind("@ddpscope {", 0) == 0, line.c_str());
      QVERIFY2(line.find(std::string("\"event\":\"") + ev::name_of(e) + "\"") != std::string::npos, line.c_str());
      const auto back = ev::parse_line(line);
      QVERIFY2(back.has_value(), line.c_str());
      QCOMPARE(back->index(), e.index());
      QCOMPARE(ev::to_line(*back), line);  // every field came back
      kinds.insert(e.index());
    }
    QCOMPARE(kinds.size(), std::variant_size_v<ev::Event>);
  }

  // An error that ended no collective says none; one that did says which, typed.
  void testAnErrorTypesTheCollectiveItEnded() {
    const auto plain = std::get<ev::Error>(*ev::parse_line(ev::to_line(ev::Error{2, "bad batch"})));
    QVERIFY(!plain.collective.known());
    QVERIFY(ev::to_line(ev::Error{2, "bad batch"}).find("\"seq\"") == std::string::npos);
    const auto typed = std::get<ev::Error>(*ev::parse_line(
        R"(@ddpscope {"event":"error","rank":1,"message":"?","op":"broadcast","seq":9,"timed_out":false})"));
    QCOMPARE(typed.collective.op, std::string("broadcast"));
    QCOMPARE(typed.collective.seq, int64_t{9});
    QVERIFY(!typed.collective.timed_out);
  }

  void testOtherLinesAreNotEvents() {
    for (const char* line :
         {"training mlp on 2 ranks", "", "@ddpscope", "@ddpscope not json", "@ddpscope []", "@ddpscope {\"iter\":3}",
          "@ddpscope {\"event\":3}", "@ddpscope {\"event\":\"no-such-event\"}",
          "rank 1: @ddpscope {\"event\":\"done\"}", "@ddpscope {\"event\":\"progress\",\"iter\":"}) {
      QVERIFY2(!ev::parse_line(line).has_value(), line);
    }
    // A field of the wrong type reads as not said, not as a failure of the whole line.
    const auto odd = ev::parse_line(R"(@ddpscope {"event":"progress","iter":"seven","samples_per_s":2})");
    QVERIFY(odd.has_value());
    QCOMPARE(std::get<ev::Progress>(*odd).iter, int64_t{0});
    QCOMPARE(std::get<ev::Progress>(*odd).samples_per_s, 2.0);
  }

  void testALossThatIsNotFiniteKeepsItsValue() {
    const std::string line = ev::to_line(ev::Progress{.iter = 5, .loss = std::nan(""), .nonfinite_since = 5});
    QVERIFY2(line.find("\"loss\":\"nan\"") != std::string::npos, line.c_str());
    const auto p = std::get<ev::Progress>(*ev::parse_line(line));
    QVERIFY(p.loss && std::isnan(*p.loss));
    QCOMPARE(p.nonfinite_since, int64_t{5});
    // No loss said (a PyTorch script that logs none): none read.
    QVERIFY(!std::get<ev::Progress>(*ev::parse_line(ev::to_line(ev::Progress{.iter = 1}))).loss);
  }

  // The PyTorch probe writes its lines in Python: its start, progress (a NaN loss), done,
  // probes and error lines are each the event this header reads.
  void testThePythonProbeSpeaksTheSameEvents() {
    QProcess python;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("PYTHONPATH", DDPSCOPE_SOURCE_DIR "/probes/python");
    env.insert("WORLD_SIZE", "2");
    python.setProcessEnvironment(env);
    python.start("/usr/bin/python3", {"-c", R"py(
import sys
from ddpscope import _report
r = _report.Reporter(0)
r.start("mlp", "gloo")
r.iteration_done(1, 0.01, 32, float("nan"))
r.finished(3)
r.failed = False
r.collective_failed("allreduce (group g)", 41, True)
try:
    raise ValueError("bad batch")
except ValueError:
    sys.excepthook(*sys.exc_info())
)py"});
    QVERIFY(python.waitForFinished(30000));
    const QString out = QString::fromUtf8(python.readAllStandardOutput() + python.readAllStandardError());
    std::set<std::string> said;
    for (const QString& line : out.split('\n')) {
      if (!line.startsWith("@ddpscope ")) continue;
      const auto e = ev::parse_line(line.toStdString());
      QVERIFY2(e.has_value(), qPrintable(line));
      said.insert(ev::name_of(*e));
      if (const auto* p = std::get_if<ev::Progress>(&*e)) QVERIFY(p->loss && std::isnan(*p->loss));
      if (const auto* end = std::get_if<ev::RankEnd>(&*e)) QCOMPARE(end->dropped, uint64_t{3});
      if (const auto* error = std::get_if<ev::Error>(&*e)) {
        QVERIFY2(error->message.find("bad batch") != std::string::npos, error->message.c_str());
        QCOMPARE(error->collective.op, std::string("allreduce (group g)"));
        QCOMPARE(error->collective.seq, int64_t{41});
        QVERIFY(error->collective.timed_out);
      }
    }
    QCOMPARE(said, (std::set<std::string>{"start", "progress", "done", "probes", "error"}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestJobEvents)
#include "tst_job_events.moc"
