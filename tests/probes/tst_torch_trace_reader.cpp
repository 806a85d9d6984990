// Reading PyTorch profiler traces as their writers write them, and refusing what no
// profiler writes at a bounded cost: each event's args kept up to 64 KiB, bad numbers
// left out and counted, huge strings and long labels refused naming the byte, and a gzip
// bomb refused once it inflates past 64 times its size.
#include <QtTest/QtTest>

#include "torch_import_support.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestTorchTraceReader : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString list_dir_;

 private slots:

  // A trace profiled without a schedule has no ProfilerStep: it is one iteration, as
  // TensorBoard and HTA take it, and the import says so.
  // Each event's args are kept as written for the Details panel; an args object over
  // 64 KiB is left out whole (and not held while it is read), the next event's kept.
  void testEventArgumentsAreKeptAndBounded() {
    const QString file = tmp_.path() + "/args.json";
    {
      QString huge;
      for (int i = 0; i < 40000; ++i)
        huge += QStringLiteral("%1,").arg(i);
      huge.chop(1);
      QFile f(file);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QStringLiteral(R"({"traceEvents":[
        {"ph":"X","name":"k","cat":"kernel","pid":0,"tid":7,"ts":1,"dur":2,
         "args":{"grid":[4,1,1],"stream":7,"name":"x","occupancy %":0.5,"flag":true,"none":null}},
        {"ph":"X","name":"big","cat":"cpu_op","pid":1,"tid":1,"ts":3,"dur":1,"args":{"Input Dims":[[%1]]}},
        {"ph":"X","name":"after","cat":"cpu_op","pid":1,"tid":1,"ts":5,"dur":1,"args":{"External id":9}}]})")
                  .arg(huge)
                  .toUtf8());
    }
    std::map<std::string, std::string> args;
    read_torch_trace(file.toStdString(), [&](const TraceEvent& e) { args[e.name] = e.args_json; });
    QCOMPARE(args["k"],
             std::string(R"({"grid":[4,1,1],"stream":7,"name":"x","occupancy %":0.5,"flag":true,"none":null})"));
    QCOMPARE(args["big"], std::string());
    QCOMPARE(args["after"], std::string(R"({"External id":9})"));
  }

  // Bad numbers are left out and counted, never stored: NaN and infinite times, times past
  // what ns since 1970 hold, negative durations (issue 49).
  void testBadNumbersAreLeftOutAndCounted() {
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    const nlohmann::json first = trace["traceEvents"][10];
    auto bad = [&](const char* ts, const char* dur) {
      nlohmann::json e = first;
      e["ph"] = "X";
      e["ts"] = ts;
      e["dur"] = dur;
      trace["traceEvents"].push_back(e);
    };
    bad("1.0", "-5.0");
    bad("2.0", "-0.5");
    bad("NaN", "1.0");
    bad("1.0", "Infinity");
    bad("1e300", "1.0");
    // nlohmann writes numbers it can hold: the literals go in as text, then unquoted.
    std::string text = trace.dump();
    for (const char* literal : {"-5.0", "-0.5", "NaN", "1.0", "Infinity", "1e300", "2.0"})
      text = QString::fromStdString(text).replace(QString("\"%1\"").arg(literal), QString(literal)).toStdString();
    const QString dir = tmp_.path() + "/badnumbers";
    QDir().mkpath(dir);
    write_file(dir, "rank0.json", QByteArray::fromStdString(text));
    const std::string out = (tmp_.path() + "/badnumbers.ddprun").toStdString();
    const auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    const std::string note =
        "rank 0: 5 events left out (2 with a negative duration and 3 with a time that is not a number, infinite or "
        "out of range)";
    QVERIFY2(std::find(r.notes.begin(), r.notes.end(), note) != r.notes.end(), r.notes.front().c_str());
    RunStoreReader run(out);
    for (const SpanRow& s : run.spans()) {
      QVERIFY(s.t_end_ns >= s.t_begin_ns);
      QVERIFY(s.t_begin_ns > 1'000'000'000'000'000'000LL);  // 2001 on: the trace's own times
    }
  }

  // A huge string is refused at a bounded cost, naming the file and the byte: a 1 MiB+
  // name, and a 64 MiB string in a gzip of a few hundred kB (a 2 GB one took 10.6 GB).
  void testHugeStringsAreRefusedInBoundedMemory() {
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["traceEvents"][5]["name"] = std::string((1 << 20) + 1, 'n');
    QString file = write_file(tmp_.path(), "longname.json", QByteArray::fromStdString(trace.dump()));
    QString error = import_error({file.toStdString()}, (tmp_.path() + "/longname.ddprun").toStdString());
    QVERIFY2(error.contains("an event's name of 1048577 bytes (over 1 MiB) near byte"), qPrintable(error));
    trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["traceEvents"][5]["args"]["Call stack"] = "PLACEHOLDER";
    const std::string text = trace.dump();
    const size_t at = text.find("PLACEHOLDER");
    const QString gz = tmp_.path() + "/bomb.json.gz";
    gzFile f = gzopen(gz.toStdString().c_str(), "wb9");
    gzwrite(f, text.data(), static_cast<unsigned>(at));
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 64; ++i)
      gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    gzwrite(f, text.data() + at + 11, static_cast<unsigned>(text.size() - at - 11));
    gzclose(f);
    QVERIFY(QFileInfo(gz).size() < 2 * 1024 * 1024);
    const long before = peak_rss_kb();
    error = import_error({gz.toStdString()}, (tmp_.path() + "/bomb.ddprun").toStdString());
    QVERIFY2(error.contains("holds a string over 16 MiB near byte"), qPrintable(error));
    QVERIFY2(peak_rss_kb() - before < 48 * 1024, qPrintable(QString::number(peak_rss_kb() - before)));
  }

  // Names kept once per thread or op are labels: over 1 KiB is refused, naming the byte
  // (8 KiB names of 65,000 threads made 1.2 GB in the app).
  void testLongLabelsAreRefused_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("words");
    QTest::newRow("thread name") << "thread_name"
                                 << "a thread or process name of 1025 bytes (over 1 KiB) near byte";
    QTest::newRow("group name") << "Process Group Name"
                                << "a process group name of 1025 bytes (over 1 KiB) near byte";
  }

  void testLongLabelsAreRefused() {
    QFETCH(QString, field);
    QFETCH(QString, words);
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    const std::string label(1025, 'l');
    if (field == "thread_name") {
      trace["traceEvents"].push_back(
          {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 2}, {"args", {{"name", label}}}});
    } else {
      trace["traceEvents"][5]["args"][field.toStdString()] = label;
    }
    const QString file = write_file(tmp_.path(), "label.json", QByteArray::fromStdString(trace.dump()));
    const QString error = import_error({file.toStdString()}, (tmp_.path() + "/label.ddprun").toStdString());
    QVERIFY2(error.contains(words) && error.contains("label.json"), qPrintable(error));
  }

  // A gzip bomb (a few hundred kB inflating to 200 MB of events) is refused once it
  // inflates past 64 times its size: memory follows what is read (issue 49).
  void testAGzipBombIsRefused() {
    const QString gz = tmp_.path() + "/bomb_events.json.gz";
    gzFile f = gzopen(gz.toStdString().c_str(), "wb9");
    const std::string head = R"({"schemaVersion": 1, "traceEvents": [)";
    gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
    const std::string event =
        R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1},)";
    std::string chunk;
    for (int i = 0; i < 10000; ++i)
      chunk += event;
    for (int i = 0; i < 200; ++i)
      gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    const std::string tail = R"({"ph": "X", "cat": "cpu_op", "name": "end", "pid": 1, "tid": 1, "ts": 2, "dur": 1}]})";
    gzwrite(f, tail.data(), static_cast<unsigned>(tail.size()));
    gzclose(f);
    QVERIFY(QFileInfo(gz).size() < 4 * 1024 * 1024);
    const long before = peak_rss_kb();
    const QString error = import_error({gz.toStdString()}, (tmp_.path() + "/bomb_events.ddprun").toStdString());
    QVERIFY2(error.contains("inflates to more than 64 times") && error.contains("gzip bomb"), qPrintable(error));
    QVERIFY2(peak_rss_kb() - before < 256 * 1024, qPrintable(QString::number(peak_rss_kb() - before)));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTorchTraceReader)
#include "tst_torch_trace_reader.moc"
