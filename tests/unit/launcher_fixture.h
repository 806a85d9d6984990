// ddpscope-cli jobs for the launcher's tests: run to their end with their output and time,
// the ddpscope-worker processes still alive, and the figures read from their output.
#pragma once

#include <QtTest/QtTest>

#include <signal.h>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <cmath>
#include <map>
#include <set>
#include "ddpscope/env.h"
#include "own_processes.h"
#include "nn/state_dict.h"
#include "run_store_reader.h"

namespace ddpscope::testing::launcher_fixture {

// What the tests of this fixture share.
class LauncherTest : public QObject {
 public:
  // Every process this test starts carries its tag (own_processes.h), so the ranks counted
  // are its own, whatever else runs beside it.
  LauncherTest() { ddpscope_tests::test_tag(); }

 protected:
  struct Result {
    int code;
    QString out, err;
    qint64 ms;
  };

  Result run(const QStringList& args, const QMap<QString, QString>& extra_env = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (auto it = extra_env.begin(); it != extra_env.end(); ++it)
      env.insert(it.key(), it.value());
    p.setProcessEnvironment(env);
    QElapsedTimer timer;
    timer.start();
    p.start(DDPSCOPE_CLI_PATH, args);
    if (!p.waitForFinished(120000)) {
      p.kill();
      p.waitForFinished();
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError()), timer.elapsed()};
  }

  // This test's live rank processes. Waits up to 5 s for ranks that are still being torn
  // down.
  static int workers_running(int expected_at_most = 0) {
    int live = 0;
    for (int attempt = 0; attempt < 50; ++attempt) {
      live = ddpscope_tests::own_processes("ddpscope-worker");
      if (live <= expected_at_most) break;
      QThread::msleep(100);
    }
    return live;
  }

  // ddpscope-cli example: seed 000's example prints each worker's inputs and gradients
  // as JSON, which a local computation checks; FAST mode fails on the unused RPC naming
  // its send functions, SMART mode completes.
  static QList<QJsonObject> json_lines(const QString& out) {
    QList<QJsonObject> lines;
    for (const QString& line : out.split('\n'))
      if (line.startsWith('{')) lines << QJsonDocument::fromJson(line.toUtf8()).object();
    return lines;
  }

  static std::vector<float> flat(const QJsonValue& nested) {
    std::vector<float> v;
    for (const auto& row : nested.toArray())
      for (const auto& x : row.toArray())
        v.push_back(static_cast<float>(x.toDouble()));
    return v;
  }

  // The trainers' average loss at every iteration, from a run file.
  static std::vector<double> losses_of(const QString& run_file) {
    ddpscope::probes::RunStoreReader file(run_file.toStdString());
    std::vector<double> out;
    for (const auto& m : file.metrics("loss", 0))
      out.push_back(m.value);
    return out;
  }

  // The largest relative difference between two loss curves of one length.
  static double largest_relative_gap(const std::vector<double>& a, const std::vector<double>& b) {
    double gap = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      gap = std::max(gap, std::abs(a[i] - b[i]) / std::abs(a[i]));
    return gap;
  }
};

}  // namespace ddpscope::testing::launcher_fixture
