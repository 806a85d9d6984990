// export --kineto: an imported job exported as Kineto traces imports into the same run,
// every span with its fields and thread, the clock uncertainty, the metrics and the
// statistics, GPU time included; both trace forms (the list form made here by Debian's
// torch 1.13, and Kineto traces PyTorch 2.11 wrote on an H100).
#include <QtTest/QtTest>

#include "torch_import_support.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestKinetoExport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString list_dir_;

 private slots:

  void initTestCase() {
    QVERIFY(tmp_.isValid());
    list_dir_ = tmp_.path() + "/list";
    QVERIFY(make_list_traces(list_dir_));
  }

  // An imported job exported again as Kineto traces (export --kineto) imports into the
  // same run: every span with its fields and thread, the clock uncertainty, the metrics
  // and the statistics, GPU time included. Both trace forms.
  void testKinetoExportRoundTrip_data() {
    QTest::addColumn<QString>("source");
    QTest::newRow("kineto, CUDA") << kFixtures + "/kineto_cuda_gloo_2";
    QTest::newRow("list form, torch 1.13") << list_dir_;
  }

  void testKinetoExportRoundTrip() {
    QFETCH(QString, source);
    const QString dir = tmp_.path() + "/roundtrip-" + QString::number(QTest::currentDataTag()[0]);
    const std::string first = (dir + "-first.ddprun").toStdString(), again = (dir + "-again.ddprun").toStdString();
    import_torch_traces({source.toStdString()}, first, {.force = true});
    RunStoreReader a(first);
    const auto exported = export_kineto_traces(a, (dir + "/traces").toStdString(), true);
    QCOMPARE(exported.files.size(), a.ranks().size());
    const auto r = import_torch_traces({(dir + "/traces").toStdString()}, again, {.force = true});
    RunStoreReader b(again);
    auto rows = [](RunStoreReader& run) {
      std::vector<std::string> out;
      const auto threads = run.threads();
      for (const SpanRow& s : run.spans()) {
        std::string thread;
        for (const auto& t : threads)
          if (t.rank == s.rank && t.thread == s.thread) thread = t.name;
        out.push_back(nlohmann::json{s.rank, thread, kind_name(s.kind), s.name, s.t_begin_ns, s.t_end_ns, s.iteration,
                                     s.bucket, s.param, s.bytes, s.peer, s.seq, s.ctx_id, s.msg_id}
                          .dump());
      }
      std::sort(out.begin(), out.end());
      return out;
    };
    const auto before = rows(a), after = rows(b);
    QVERIFY(before.size() > 1000);
    QCOMPARE(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i)
      QCOMPARE(after[i], before[i]);
    QCOMPARE(b.metrics().size(), a.metrics().size());
    for (size_t k = 0; k < r.clocks.size(); ++k) {
      QVERIFY(r.clocks[k].kept);
      SqliteDb da(first, SQLITE_OPEN_READONLY), db(again, SQLITE_OPEN_READONLY);
      const std::string q =
          "SELECT coalesce(clock_uncertainty_ns, -1) FROM ranks WHERE rank = " + std::to_string(r.clocks[k].rank);
      QCOMPARE(db.query_int64(q), da.query_int64(q));
    }
    auto stats = [](RunStoreReader& run) {
      auto j = run_stats_json(run);
      j.erase("run");
      j.erase("ranks");
      return j.dump();
    };
    QCOMPARE(stats(b), stats(a));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestKinetoExport)
#include "tst_kineto_export.moc"
