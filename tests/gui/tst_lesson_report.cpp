// `ddpscope-cli lesson show` and `lesson list` (issue 50, lesson_report.h): what each
// lesson's steps show without a window, run as a user runs them. The ring's blocks and
// counters at every step obey causality; the numbers are the Learn menu's and the links'.
#include <QtTest/QtTest>

#include "lesson_report_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::BatchEvent;
using ddpscope::probes::EventBatch;
using ddpscope::probes::RunStoreReader;
using ddpscope::probes::RunStoreWriter;
using namespace ddpscope::gui::lesson_report_fixture;

class TestLessonReport : public LessonReportTest {
  Q_OBJECT

 private slots:

  // One numbering: the list, the menu's titles and `show` agree.
  void testTheListNumbersAsTheMenuDoes() {
    const Ran r = cli({"lesson", "list"});
    QVERIFY2(r.status == 0, qPrintable(r.err));
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), int(lessons().size()));
    for (size_t i = 0; i < lessons().size(); ++i) {
      QCOMPARE(lines[int(i)], lessonMenuTitle(i));
      QVERIFY(lines[int(i)].startsWith(QString("%1. ").arg(i + 1)));
    }
    QVERIFY(lines.contains("7. The ring allreduce"));
    QVERIFY(lines.contains("1. Distributed backward (FAST mode)"));
  }

  // The ring, every step: blocks as the ranks summed in them, steps sent; nothing held
  // that the rank before has not sent; at the end every block sums every rank.
  void testTheRingAtEveryStep() {
    const Ran r = cli({"lesson", "show", QString::number(ringIndex()), "--json"});
    QVERIFY2(r.status == 0, qPrintable(r.err));
    const QJsonObject o = json(r);
    QCOMPARE(o["kind"].toString(), QString("ring"));
    const QJsonArray each = o["each_step"].toArray();
    QCOMPARE(each.size(), o["steps"].toInt() + 1);
    const int n = each[0].toObject()["ranks"].toInt();
    QCOMPARE(n, 4);
    for (int k = 0; k < each.size(); ++k) {
      const QJsonObject s = each[k].toObject();
      QCOMPARE(s["step"].toInt(), k);
      const QJsonArray blocks = s["blocks"].toArray(), sent = s["sent_steps"].toArray(),
                       received = s["received_steps"].toArray();
      for (int rank = 0; rank < n; ++rank) {
        const int left = (rank + n - 1) % n;
        QVERIFY2(received[rank].toInt() <= sent[left].toInt(),
                 qPrintable(QString("step %1: rank %2 received %3, rank %4 sent %5")
                                .arg(k)
                                .arg(rank)
                                .arg(received[rank].toInt())
                                .arg(left)
                                .arg(sent[left].toInt())));
        for (int b = 0; b < n; ++b) {
          const QJsonArray summed = blocks[rank].toArray()[b].toArray();
          QVERIFY(summed.contains(rank) || received[rank].toInt() >= n - 1);  // own values until all-gather
          if (k == 0) QCOMPARE(summed, QJsonArray({rank}));
          if (k + 1 == each.size()) QCOMPARE(summed, QJsonArray({0, 1, 2, 3}));
        }
      }
      if (k > 0) QVERIFY(!s["narration"].toString().isEmpty());
    }
    // One step asked alone is that step of the whole.
    const Ran one = cli({"lesson", "show", QString::number(ringIndex()), "--step", "5", "--json"});
    QCOMPARE(json(one)["step"].toObject(), each[5].toObject());
  }

  // The other kinds: what their views draw, and the words, as text and JSON.
  void testOtherLessonsAtChosenSteps() {
    Ran r = cli({"lesson", "show", "1", "--step", "5"});
    QVERIFY2(r.status == 0, qPrintable(r.err));
    QVERIFY2(r.out.startsWith("Distributed backward (FAST mode) (") && r.out.contains("Step 5 of ") &&
                 r.out.contains("dependency counts:") && r.out.contains("worker 0"),
             qPrintable(r.out));
    r = cli({"lesson", "show", "1", "--step", "5", "--json"});
    const QJsonObject s = json(r)["step"].toObject();
    QCOMPARE(s["kind"].toString(), QString("autograd"));
    QVERIFY(!s["nodes"].toArray().isEmpty());
    QVERIFY(!s["narration"].toString().isEmpty());
    r = cli({"lesson", "show", "4", "--step", "20", "--json"});
    QVERIFY2(r.status == 0, qPrintable(r.err));
    const QJsonObject d = json(r)["step"].toObject();
    QCOMPARE(d["kind"].toString(), QString("ddp"));
    QVERIFY(!d["buckets"].toArray().isEmpty());
    QVERIFY(d["buckets"].toArray()[0].toObject().contains("phase"));
  }

  // A teacher's lesson file: its own words at its step.
  void testALessonFileWithItsNarration() {
    QTemporaryDir dir;
    const QString run = dir.filePath("ring.ddprun");
    QVERIFY(QFile::copy(QStringLiteral(DDPSCOPE_LESSONS_DIR) + "/ring-allreduce.ddprun", run));
    Ran r = cli({"lesson", "make", run, "--title", "Our ring", "--narrate", "2:Watch rank 1 now."});
    QVERIFY2(r.status == 0, qPrintable(r.err + r.out));
    r = cli({"lesson", "show", dir.filePath("ring.ddplesson"), "--step", "2"});
    QVERIFY2(r.status == 0 && r.out.startsWith("Our ring (") && r.out.contains("Step 2 of ") &&
                 r.out.contains("Watch rank 1 now."),
             qPrintable(r.out + r.err));
  }

  // Each kind behind one interface (lesson_kind.h): every shipped lesson loads as its
  // kind, found in its run when nothing says which, and the kind answers for it.
  void testEveryLessonByItsKind() {
    QCOMPARE(int(lessonKinds().size()), 3);
    for (const LessonKind* k : lessonKinds())
      QCOMPARE(lessonKindNamed(k->name()), k);
    QVERIFY(lessonKindNamed("zero") == nullptr);
    for (const LessonInfo& info : lessons()) {
      RunStoreReader run((QStringLiteral(DDPSCOPE_LESSONS_DIR) + "/" + info.file).toStdString());
      std::string why;
      const Lesson l = loadRunLesson(run, info.ddp ? "ddp" : "", info.rank, why);
      QVERIFY2(!l.steps.empty(), why.c_str());
      const std::string expected = info.ring ? "ring" : info.ddp ? "ddp" : "autograd";
      QCOMPARE(std::string(kindOf(l).name()), expected);
      QCOMPARE(l.kind, &kindOf(l));
      // The kind the run holds, unasked, is the lesson's, except DDP runs, whose ranks
      // replay when asked (the run's first kind is then whatever else it holds).
      if (!info.ddp) {
        const Lesson found = loadRunLesson(run, "", info.rank, why);
        QCOMPARE(std::string(kindOf(found).name()), expected);
      }
      const auto asked =
          std::count_if(l.steps.begin(), l.steps.end(), [&](const LessonStep& s) { return kindOf(l).asksBefore(s); });
      QVERIFY2(asked > 0, qPrintable(info.title));  // predict mode has questions in every lesson
    }
    std::string why;
    RunStoreReader ring((QStringLiteral(DDPSCOPE_LESSONS_DIR) + "/ring-allreduce.ddprun").toStdString());
    QVERIFY(loadRunLesson(ring, "zero", 0, why).steps.empty());
    QCOMPARE(why, std::string("\"zero\" is no kind of lesson (autograd, ddp or ring)"));
  }

  // A damaged or outsized ring is refused with what is wrong, never indexed blindly (a
  // block of 1000000 crashed lesson show and the app; 63 ranks took 3 GB; issue 49).
  void testDamagedRingsAreRefused_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("badBlock");
    QTest::addColumn<QString>("words");
    QTest::newRow("block 1000000") << 4 << 1000000 << "lies outside its 4-rank ring";
    QTest::newRow("block -5") << 4 << -5 << "lies outside its 4-rank ring";
    QTest::newRow("17 ranks") << 17 << -1 << "has 17 ranks; the ring lesson shows rings of at most 16";
  }

  void testDamagedRingsAreRefused() {
    QFETCH(int, ranks);
    QFETCH(int, badBlock);
    QFETCH(QString, words);
    QTemporaryDir dir;
    const std::string file = dir.filePath("ring.ddprun").toStdString();
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"example":"ring"})", ranks, "mpi", "ring"});
      for (int r = 0; r < ranks; ++r) {
        EventBatch b;
        b.rank = r;
        b.threads = {{0, 100, "main"}};
        b.names = {"reduce_scatter", "all_gather"};
        for (int k = 0; k < 2 * (ranks - 1); ++k) {
          BatchEvent e{};
          e.t_begin_ns = 1000 * k + 10 * r;
          e.t_end_ns = e.t_begin_ns + 500;
          e.bytes = 8;
          e.id = 1;   // the allreduce's sequence number
          e.id2 = k;  // the step
          e.param = (r - k + 2 * ranks) % ranks;
          e.bucket = static_cast<int16_t>((r - k - 1 + 2 * ranks) % ranks);
          if (badBlock != -1 && r == 1 && k == 1) e.param = badBlock;  // the block it sent
          e.peer = static_cast<int16_t>((r + 1) % ranks);
          e.kind = static_cast<uint8_t>(ddpscope::probes::Kind::RingStep);
          e.name = k < ranks - 1 ? 0 : 1;
          b.events.push_back(e);
        }
        w.write(b);
      }
      w.end_run("finished");
    }
    const Ran r = cli({"lesson", "show", QString::fromStdString(file), "--json"});
    QCOMPARE(r.status, 2);
    QVERIFY2(r.err.contains(words) && !r.err.contains(".cpp:"), qPrintable(r.err));
  }

  void testBadLessonsAreSaid() {
    Ran r = cli({"lesson", "show", "99"});
    QCOMPARE(r.status, 2);
    QVERIFY2(r.err.contains(QString("there is no lesson 99: the lessons are 1 to %1").arg(lessons().size())),
             qPrintable(r.err));
    r = cli({"lesson", "show", "1", "--step", "100000"});
    QCOMPARE(r.status, 2);
    QVERIFY2(r.err.contains("--step 100000: the lesson has"), qPrintable(r.err));
    // A lesson file nested 60,000 deep (it crashed): refused as read, in one short line.
    QTemporaryDir dir;
    QFile deep(dir.filePath("deep.ddplesson"));
    QVERIFY(deep.open(QIODevice::WriteOnly));
    deep.write(R"({"format": "ddpscope-lesson", "version": 1, "run": "x.ddprun", "stops": )" + QByteArray(60000, '[') +
               QByteArray(60000, ']') + "}");
    deep.close();
    r = cli({"lesson", "show", deep.fileName()});
    QCOMPARE(r.status, 2);
    QVERIFY2(r.err.contains("nests deeper than 64 levels") && r.err.size() < 400, qPrintable(r.err.left(400)));
    r = cli({"lesson", "show", "/nonexistent.ddprun"});
    QCOMPARE(r.status, 2);
    QVERIFY2(r.err.contains("error:") && !r.err.contains(".cpp:"), qPrintable(r.err));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonReport)
#include "tst_lesson_report.moc"
