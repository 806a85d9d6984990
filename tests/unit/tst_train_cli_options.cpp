// The `train` options ddpscope-cli and ddpscope-worker share: what the launcher passes on
// to the worker parses back to the same options, the run records them as JSON, and a bad
// value is refused by the parser.
#include <QtTest/QtTest>

#include <CLI/CLI.hpp>

#include "apps/train_cli_options.h"
#include "test_registry.h"

using namespace ddpscope::apps;

namespace {

// Parses `args` as `train` does; false when CLI11 refuses them.
bool parse(const std::vector<std::string>& args, TrainOptions& o, LaunchOptions& launch) {
  CLI::App app("train");
  add_train_options(app, o, launch);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError&) {
    return false;
  }
  return true;
}

}  // namespace

class TestTrainCliOptions : public QObject {
  Q_OBJECT

 private slots:
  void testWhatTheWorkerGetsParsesBackTheSame() {
    TrainOptions o;
    LaunchOptions launch;
    QVERIFY(parse({"--np", "2", "--model", "mlp", "--width", "96", "--depth", "3", "--bucket-cap-mb", "0.5",
                   "--find-unused-parameters", "--comm-hook", "fp16", "--iters", "7", "--lr", "0.05"},
                  o, launch));
    QCOMPARE(o.width, int64_t{96});
    QVERIFY(o.find_unused_parameters);
    TrainOptions again;
    LaunchOptions again_launch;
    QVERIFY(parse(train_arguments(o, launch), again, again_launch));
    QCOMPARE(options_json(again, again_launch)["width"], options_json(o, launch)["width"]);
    const auto a = options_json(o, launch), b = options_json(again, again_launch);
    for (const char* key :
         {"model", "width", "depth", "bucket_cap_mb", "find_unused_parameters", "comm_hook", "iters", "lr"})
      QVERIFY2(a.contains(key) && a[key] == b[key], key);
  }

  void testBadValuesAreRefused() {
    TrainOptions o;
    LaunchOptions launch;
    QVERIFY(!parse({"--iters", "0"}, o, launch));
    QVERIFY(!parse({"--momentum", "2"}, o, launch));
    QVERIFY(!parse({"--comm-hook", "telepathy"}, o, launch));
    QVERIFY(!parse({"--no-such-option"}, o, launch));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTrainCliOptions)
#include "tst_train_cli_options.moc"
