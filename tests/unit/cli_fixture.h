// ddpscope-cli run to its end for the CLI tests: its exit code and what it printed.
#pragma once

#include <QtTest/QtTest>

#include <unistd.h>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <sys/stat.h>
#include <QTemporaryDir>
#include "run_store_reader.h"

namespace ddpscope::testing::cli_fixture {

// What the tests of this fixture share.
class CliTest : public QObject {
 protected:
  struct Result {
    int code;
    QString out, err;
  };

  Result run(const QStringList& args) {
    QProcess p;
    p.start(DDPSCOPE_CLI_PATH, args);
    if (!p.waitForFinished(120000)) {
      p.kill();
      return {-1, {}, "timed out"};
    }
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
  }

  // A run as comparable text: its Chrome-trace events (every span with its kind, rank,
  // thread, times and fields; thread names), less the call sites, which a trace does not
  // carry, sorted.
  QStringList run_events(const QString& run_file, const QString& dir) {
    const QString json = dir + "/" + QFileInfo(run_file).fileName() + ".json";
    const Result r = run({"export", run_file, "--chrome", json});
    if (r.code != 0) return {"export failed: " + r.err};
    QFile f(json);
    f.open(QIODevice::ReadOnly);
    QStringList events;
    for (const QJsonValue& v : QJsonDocument::fromJson(f.readAll()).object()["traceEvents"].toArray()) {
      QJsonObject e = v.toObject();
      QJsonObject args = e["args"].toObject();
      args.remove("src");
      e["args"] = args;
      events << QString::fromUtf8(QJsonDocument(e).toJson(QJsonDocument::Compact));
    }
    events.sort();
    return events;
  }

  // stats --json less what an import sets anew (the run's row, clock offsets).
  QJsonObject stats_of(const QString& run_file) {
    const Result r = run({"stats", "--json", run_file});
    QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    o.remove("run");
    QJsonArray ranks;
    for (const QJsonValue& v : o["ranks"].toArray()) {
      QJsonObject k = v.toObject();
      for (const char* key : {"clock_offset_ns", "clock_rtt_ns", "events_received", "events_dropped"})
        k.remove(key);
      ranks.append(k);
    }
    o["ranks"] = ranks;
    return o;
  }
};

}  // namespace ddpscope::testing::cli_fixture
