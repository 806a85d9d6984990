// What differs between two runs' settings: world size, backend, model, who recorded the
// run and every option both record, except those that do not change an iteration's work;
// numbers equal in value are the same setting; one line says them all.
#include <QtTest/QtTest>

#include "run_settings_diff.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

RunRow run(const std::string& config, int world = 2, const std::string& backend = "mpi",
           const std::string& model = "mlp") {
  RunRow r;
  r.config_json = config;
  r.world_size = world;
  r.backend = backend;
  r.model = model;
  return r;
}

std::vector<std::string> names(const std::vector<SettingDifference>& d) {
  std::vector<std::string> out;
  for (const auto& x : d)
    out.push_back(x.name);
  return out;
}

}  // namespace

class TestRunSettingsDiff : public QObject {
  Q_OBJECT

 private slots:
  void testTheSameSettingsDifferInNothing() {
    const RunRow a = run(R"({"width":64,"bucket_cap_mb":25})");
    QVERIFY(setting_differences(a, a).empty());
    QCOMPARE(differences_text({}), std::string());
  }

  void testWhatChangesTheWorkIsSaid() {
    const RunRow a = run(R"({"width":64,"bucket_cap_mb":25,"lr":0.1})", 2, "mpi", "mlp");
    const RunRow b = run(R"({"width":256,"bucket_cap_mb":25.0,"lr":0.1})", 4, "nccl", "transformer");
    const auto d = setting_differences(a, b);
    QCOMPARE(names(d), (std::vector<std::string>{"world size", "backend", "model", "width"}));
    QCOMPARE(d[3].a, std::string("64"));
    QCOMPARE(d[3].b, std::string("256"));
    QCOMPARE(differences_text(d),
             std::string("world size (A 2, B 4); backend (A mpi, B nccl); model (A mlp, B transformer); "
                         "width (A 64, B 256)"));
  }

  void testHowAJobWasRunIsNotAWorkSetting() {
    const RunRow a = run(R"({"iters":10,"seed":1,"out":"a.ddprun","master_port":29500,"dropout":0.1})");
    const RunRow b = run(R"({"iters":500,"seed":2,"out":"b.ddprun","master_port":29501,"dropout":0.1})");
    QVERIFY(setting_differences(a, b).empty());
  }

  void testAnOptionOnlyOneRecordsIsNotCompared() {
    const RunRow a = run(R"({"width":64})");
    const RunRow b = run(R"({"depth":3})");
    QVERIFY(setting_differences(a, b).empty());
  }

  void testAPyTorchScriptAndOurTrainerAreSaidApart() {
    const RunRow ours = run(R"({"width":64})");
    const RunRow torch = run(R"({"script":"train.py"})", 2, "gloo", "torch: Net");
    const auto d = setting_differences(ours, torch);
    QCOMPARE(d.front().name, std::string("recorded by"));
    QCOMPARE(d.front().a, std::string("ddpscope"));
    QCOMPARE(d.front().b, std::string("PyTorch"));
  }

  void testADamagedConfigIsReadAsEmpty() {
    const RunRow a = run("{not json");
    const RunRow b = run(R"({"width":64})");
    QVERIFY(setting_differences(a, b).empty());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunSettingsDiff)
#include "tst_run_settings_diff.moc"
