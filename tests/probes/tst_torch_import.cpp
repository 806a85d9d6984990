// import-torch on real PyTorch profiler traces: the older list form made here by Debian's
// torch 1.13 (/usr/bin/python3, a 2-rank gloo DDP job with several buckets), and Kineto
// traces that PyTorch 2.11 wrote on an H100 (tests/torch/fixtures: CPU and CUDA DDP over
// gloo, a 1-rank NCCL job, tensorboard_trace_handler's .pt.trace.json.gz, a job where
// rank 1 stopped early). Every figure is checked against the trace files themselves.
#include <QtTest/QtTest>

#include "torch_import_support.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestTorchImport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString list_dir_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // A real 2-rank gloo DDP job under Debian's torch 1.13: the list form.
    list_dir_ = tmp_.path() + "/list";
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedChannels);
    p.start("/usr/bin/python3",
            {QStringLiteral(DDPSCOPE_TORCH_SCRIPTS) + "/make_torch_traces.py", list_dir_, "--np", "2", "--steps", "3"});
    QVERIFY(p.waitForFinished(240000));
    QCOMPARE(p.exitCode(), 0);
  }

  // Iterations are the ProfilerStep spans, one for one, with their durations; the rank
  // comes from the file name (the list form has no distributedInfo).
  void testIterationsAreTheProfilerSteps_data() {
    QTest::addColumn<QString>("dir");
    QTest::addColumn<QString>("form");
    QTest::newRow("list form (torch 1.13, gloo, CPU)") << QString("list") << "list";
    QTest::newRow("Kineto (torch 2.11, gloo, CPU)") << kFixtures + "/kineto_cpu_gloo_2"
                                                    << "kineto";
    QTest::newRow("Kineto (torch 2.11, gloo, CUDA)") << kFixtures + "/kineto_cuda_gloo_2"
                                                     << "kineto";
    QTest::newRow("Kineto .pt.trace.json.gz") << kFixtures + "/kineto_tb_gz"
                                              << "kineto";
  }
  void testIterationsAreTheProfilerSteps() {
    QFETCH(QString, dir);
    QFETCH(QString, form);
    if (dir == "list") dir = list_dir_;
    const std::string out = (tmp_.path() + "/steps.ddprun").toStdString();
    TorchImportOptions options{.force = true};
    double last = -1;
    bool monotonic = true;
    options.progress = [&](double f, const std::string&) {
      monotonic = monotonic && f >= last;
      last = f;
      return true;
    };
    const TorchImportResult r = import_torch_traces({dir.toStdString()}, out, options);
    QVERIFY(monotonic);
    QCOMPARE(last, 1.0);
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    QVERIFY(r.absent.empty());
    RunStoreReader run(out);
    QCOMPARE(QString::fromStdString(nlohmann::json::parse(run.run().config_json)["form"]), form);
    const QStringList files = QDir(dir).entryList({"*.json", "*.json.gz"}, QDir::Files, QDir::Name);
    QCOMPARE(files.size(), 2);
    for (int rank = 0; rank < 2; ++rank) {
      const auto steps = profiler_steps(dir + "/" + files[rank]);
      QVERIFY(steps.size() >= 3);
      SpanQuery q;
      q.rank = rank;
      q.kinds = {Kind::Iteration};
      const auto iterations = run.spans(q);
      QCOMPARE(iterations.size(), steps.size());
      for (const auto& it : iterations) {
        QVERIFY2(steps.count(it.iteration), qPrintable(QString("iteration %1").arg(it.iteration)));
        QCOMPARE(it.t_end_ns - it.t_begin_ns, steps.at(it.iteration));
      }
      // Every span of a step is tagged with it: forward, backward and optimizer too.
      for (Kind k : {Kind::Forward, Kind::Backward, Kind::Optimizer, Kind::Allreduce}) {
        SpanQuery kq;
        kq.rank = rank;
        kq.kinds = {k};
        const auto spans = run.spans(kq);
        QVERIFY2(!spans.empty(), kind_name(k));
        for (const auto& s : spans)
          QVERIFY2(s.iteration >= 0, kind_name(k));
      }
    }
  }

  // DDP's bucket allreduces are recognised (several per step, numbered from 0), the
  // backend's collectives are numbered per group in the same order on every rank, and
  // stats' communication time is the union of the bucket allreduces.
  void testCollectivesBucketsAndCommunicationTime() {
    const std::string out = (tmp_.path() + "/comm.ddprun").toStdString();
    import_torch_traces({list_dir_.toStdString()}, out, {.force = true});
    RunStoreReader run(out);
    std::vector<std::vector<std::string>> ops(2);
    for (int rank = 0; rank < 2; ++rank) {
      SpanQuery q;
      q.rank = rank;
      q.kinds = {Kind::PgOp};
      int64_t seq = 0;
      for (const auto& s : run.spans(q)) {
        QCOMPARE(s.seq, ++seq);
        ops[rank].push_back(s.name);
      }
      QVERIFY(seq >= 9);  // 3 buckets a step, 3 steps, and DDP's broadcasts
    }
    QCOMPARE(ops[0], ops[1]);
    const auto stats = run_stats_json(run);
    for (const auto& row : stats["iterations"]) {
      SpanQuery q;
      q.rank = row["rank"];
      q.iteration = row["iteration"];
      q.kinds = {Kind::Allreduce};
      auto spans = run.spans(q);
      QVERIFY2(spans.size() >= 3, "several buckets a step");
      std::set<int64_t> buckets;
      for (const auto& s : spans)
        buckets.insert(s.bucket);
      QCOMPARE(int64_t(buckets.size()), int64_t(spans.size()));
      QCOMPARE(*buckets.begin(), int64_t{0});
      std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.t_begin_ns < b.t_begin_ns; });
      int64_t merged = 0, end = INT64_MIN;
      for (const auto& s : spans) {
        const int64_t b = std::max(s.t_begin_ns, end);
        if (s.t_end_ns > b) merged += s.t_end_ns - b;
        end = std::max(end, s.t_end_ns);
      }
      QCOMPARE(std::llround(row["comm_ms"].get<double>() * 1e6), merged);
      // The Breakdown adds up: no part is longer than the iteration.
      const double it_ms = row["iteration_ms"];
      for (const char* part : {"forward_ms", "backward_ms", "optimizer_ms", "exposed_comm_ms"})
        QVERIFY2(row[part].get<double>() <= it_ms + 1e-6, part);
      QVERIFY(row["exposed_comm_ms"].get<double>() <= row["comm_ms"].get<double>() + 1e-6);
    }
  }

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

  void testATraceWithoutProfilerStepIsOneIteration() {
    const QString dir = tmp_.path() + "/nosteps";
    QDir().mkpath(dir);
    auto kernels = step1_kernels();
    for (auto& k : kernels)
      k.launch = k.launch >= 0 ? k.launch : 1;
    write_kineto_trace(dir, 0, kernels, false);
    write_kineto_trace(dir, 1, kernels, false);
    const std::string out = (tmp_.path() + "/nosteps.ddprun").toStdString();
    const auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "rank 0's trace has no ProfilerStep: the whole trace is one iteration (as TensorBoard and "
                      "HTA take it)") != r.notes.end());
    RunStoreReader run(out);
    QVERIFY(QString::fromStdString(run.run().message).contains("no ProfilerStep"));
    const RunAnalysis a = analyze_run(run);
    QCOMPARE(a.iterations.size(), size_t{2});
    for (const auto& it : a.iterations) {
      QCOMPARE(it.iteration, int64_t{1});
      QVERIFY(it.from_gpu);
      QCOMPARE(it.compute_ms, 0.017);
      QCOMPARE(it.iteration_ms, 0.090);  // the first launch (1 us) to the last kernel's end (91 us)
    }
    SpanQuery q;
    q.kinds = {Kind::Iteration};
    const auto spans = run.spans(q);
    QCOMPARE(spans.size(), size_t{2});
    QCOMPARE(QString::fromStdString(spans[0].name), QString("whole trace (no ProfilerStep): one iteration"));
    // HTA's window: no step to leave out, every kernel counts.
    const GpuTimeBreakdown b = gpu_time_breakdown(run);
    QCOMPARE(b.ranks[0].kernels, int64_t{6});
    const auto json = run_stats_json(run);
    QCOMPARE(json["summary"][0]["iterations"].get<int>(), 1);
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

  // A subset of the ranks opens as those ranks and says which are absent.
  void testSubsetOfRanks() {
    const std::string out = (tmp_.path() + "/subset.ddprun").toStdString();
    const auto r = import_torch_traces({(kFixtures + "/kineto_cpu_gloo_2/rank1.json.gz").toStdString()}, out);
    QCOMPARE(r.ranks, std::vector<int>{1});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 0}}));
    QCOMPARE(r.world_size, 2);
    RunStoreReader run(out);
    QVERIFY(QString::fromStdString(run.run().message).contains("no trace for rank 0"));
  }

  // TensorBoard's sample names (worker0, worker1) give the ranks of traces without
  // distributedInfo; a host_pid name has none, and --rank FILE=N says it by hand.
  void testRanksFromNamesAndByHand() {
    const QString dir = tmp_.path() + "/named";
    QDir().mkpath(dir);
    for (int rank = 0; rank < 2; ++rank) {
      auto trace = load_trace_object(kFixtures + QString("/kineto_cpu_gloo_2/rank%1.json.gz").arg(rank));
      trace.erase("distributedInfo");
      write_file(dir, QString("worker%1.pt.trace.json").arg(rank), QByteArray::fromStdString(trace.dump()));
    }
    const std::string out = (tmp_.path() + "/named.ddprun").toStdString();
    auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    // host_pid names: refused, saying how to give the rank; then given.
    const QString a = dir + "/node1_4242.1.pt.trace.json", b = dir + "/node2_4343.1.pt.trace.json";
    QVERIFY(QFile::rename(dir + "/worker0.pt.trace.json", a));
    QVERIFY(QFile::rename(dir + "/worker1.pt.trace.json", b));
    const QString error = import_error({a.toStdString(), b.toStdString()}, out + ".refused");
    QVERIFY2(error.contains("does not say which rank it is") && error.contains("--rank '" + a + "=N'"),
             qPrintable(error));
    TorchImportOptions options{.force = true};
    options.ranks = {{b.toStdString(), 0}, {a.toStdString(), 1}};
    r = import_torch_traces({a.toStdString(), b.toStdString()}, out, options);
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    RunStoreReader run(out);
    const auto config = nlohmann::json::parse(run.run().config_json);
    QCOMPARE(QString::fromStdString(config["traces"]["0"]), QFileInfo(b).absoluteFilePath());
    // --rank for a file that is not imported is a mistake, said as such.
    options.ranks = {{(dir + "/other.json").toStdString(), 3}};
    bool refused = false;
    try {
      import_torch_traces({a.toStdString(), b.toStdString()}, out, options);
    } catch (const TraceFileError& e) {
      refused = QString::fromStdString(e.message()).contains("not one of the traces to import");
    }
    QVERIFY(refused);
  }

  // Missing ranks are named as runs ("2-127"), and memory follows the files read, not the
  // world size a trace claims: a header saying 10^9 ranks imports in a few MB.
  void testMissingRanksAsRuns() {
    const QString dir = tmp_.path() + "/of128";
    QDir().mkpath(dir);
    for (int rank = 0; rank < 2; ++rank) {
      auto trace = load_trace_object(kFixtures + QString("/kineto_cpu_gloo_2/rank%1.json.gz").arg(rank));
      trace["distributedInfo"]["world_size"] = 128;
      write_file(dir, QString("rank%1.json").arg(rank), QByteArray::fromStdString(trace.dump()));
    }
    const std::string out = (tmp_.path() + "/of128.ddprun").toStdString();
    auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QCOMPARE(r.world_size, 128);
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{2, 127}}));
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "2 of the job's 128 ranks have a trace; no trace for ranks 2-127") != r.notes.end());
    // Rank 1 alone: a gap before it and after it.
    r = import_torch_traces({(dir + "/rank1.json").toStdString()}, out, {.force = true});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 0}, {2, 127}}));
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["distributedInfo"]["world_size"] = 1000000000;
    const QString huge = write_file(tmp_.path(), "huge_world.json", QByteArray::fromStdString(trace.dump()));
    const long rss_before = peak_rss_kb();
    r = import_torch_traces({huge.toStdString()}, out, {.force = true});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{1, 999999999}}));
    QVERIFY2(peak_rss_kb() - rss_before < 64 * 1024, qPrintable(QString::number(peak_rss_kb() - rss_before)));
    RunStoreReader run(out);
    QVERIFY(run.run().config_json.size() < 100000);
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

  // A rank or world size a file claims past 2^31-1 is refused, not wrapped (2^40 was
  // read as 0, 2^32+1 as 1).
  void testRanksPastIntAreRefused_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<qint64>("value");
    QTest::newRow("rank 2^40") << QString("rank") << (qint64(1) << 40);
    QTest::newRow("rank 2^32+1") << QString("rank") << (qint64(1) << 32) + 1;
    QTest::newRow("rank -2") << QString("rank") << qint64(-2);
    QTest::newRow("world_size 2^31") << QString("world_size") << (qint64(1) << 31);
  }
  void testRanksPastIntAreRefused() {
    QFETCH(QString, key);
    QFETCH(qint64, value);
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["distributedInfo"][key.toStdString()] = value;
    const QString file = write_file(tmp_.path(), "bigrank.json", QByteArray::fromStdString(trace.dump()));
    const QString error = import_error({file.toStdString()}, (tmp_.path() + "/bigrank.ddprun").toStdString());
    QVERIFY2(error.contains(QString("distributedInfo's %1 %2, outside 0..2147483647").arg(key).arg(value)) &&
                 error.contains("near byte"),
             qPrintable(error));
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

  // Events that repeat their times and ids pack into almost nothing: a run of them would
  // be refused when opened, so the import refuses them (issue 49), leaving no file.
  void testEventsThatPackTooDenselyAreRefused() {
    std::string text = R"({"schemaVersion": 1, "traceEvents": [)";
    for (int i = 0; i < 300000; ++i)
      text += R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":1},)";
    text += R"({"ph": "X", "cat": "cpu_op", "name": "end", "pid": 1, "tid": 1, "ts": 2, "dur": 1}]})";
    const QString file = write_file(tmp_.path(), "dense_events_rank0.json", QByteArray::fromStdString(text));
    const QString out = tmp_.path() + "/dense_events_rank0.ddprun";
    const QString error = import_error({file.toStdString()}, out.toStdString());
    QVERIFY2(error.contains("300002 events that pack into") && error.contains("more than one per 2 bytes"),
             qPrintable(error));
    QVERIFY(!QFileInfo::exists(out) && !QFileInfo::exists(out + ".importing"));
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

  // Bad input: each refused with a message naming the file and what to do, and no run
  // file (or partial one) left behind.
  void testBadInput_data() {
    QTest::addColumn<QString>("make");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not JSON") << "notjson"
                              << "is not JSON";
    QTest::newRow("empty") << "empty"
                           << "is empty";
    QTest::newRow("truncated") << "truncated"
                               << "is truncated";
    QTest::newRow("damaged gzip") << "badgz"
                                  << "damaged";
    QTest::newRow("JSON, not a trace") << "object"
                                       << "not a PyTorch profiler trace";
    QTest::newRow("no rank anywhere") << "norank"
                                      << "rename it with its rank";
    QTest::newRow("duplicate ranks") << "duplicate"
                                     << "are both rank 0";
    QTest::newRow("different jobs") << "jobs"
                                    << "different jobs";
    QTest::newRow("forms mixed") << "forms"
                                 << "different trace forms";
    QTest::newRow("empty folder") << "emptydir"
                                  << "holds no trace files";
    QTest::newRow("missing") << "missing"
                             << "no such file or folder";
  }
  void testBadInput() {
    QFETCH(QString, make);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString d = dir.path();
    const QString kineto = kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz";
    std::vector<std::string> in;
    auto gunzip = [&](const QString& path) {
      return QByteArray::fromStdString(nlohmann::json{{"traceEvents", load_trace(path)}}.dump());
    };
    QByteArray list = QByteArray(
        "[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, "
        "\"tid\": 1, \"pid\": \"CPU functions\", \"args\": {}}]");
    if (make == "notjson") in = {write_file(d, "rank0.json", "hello, world").toStdString()};
    if (make == "empty") in = {write_file(d, "rank0.json", "").toStdString()};
    if (make == "truncated") {
      QFile f(list_dir_ + "/rank0.json");
      f.open(QIODevice::ReadOnly);
      in = {write_file(d, "rank0.json", f.readAll().left(50000)).toStdString()};
    }
    if (make == "badgz") {
      QFile f(kineto);
      f.open(QIODevice::ReadOnly);
      QByteArray bytes = f.readAll();
      for (int i = 2000; i < 2100; ++i)
        bytes[i] = char(bytes[i] ^ 0x5a);
      in = {write_file(d, "rank0.json.gz", bytes).toStdString()};
    }
    if (make == "object") in = {write_file(d, "rank0.json", "{\"loss\": [1, 2, 3]}").toStdString()};
    if (make == "norank") in = {write_file(d, "trace.json", list).toStdString()};
    if (make == "duplicate")
      in = {write_file(d, "a.rank0.json", list).toStdString(), write_file(d, "b.rank0.json", list).toStdString()};
    if (make == "jobs") {
      QByteArray other = gunzip(kineto);
      other.replace("\"world_size\":2", "\"world_size\":4");
      QVERIFY(!other.contains("\"world_size\":2"));
      auto j = nlohmann::json::parse(other.toStdString());
      j["distributedInfo"] = {{"backend", "gloo"}, {"rank", 1}, {"world_size", 4}};
      in = {kineto.toStdString(), write_file(d, "other.json", QByteArray::fromStdString(j.dump())).toStdString()};
    }
    if (make == "forms") in = {kineto.toStdString(), write_file(d, "rank1.json", list).toStdString()};
    if (make == "emptydir") in = {d.toStdString()};
    if (make == "missing") in = {(d + "/nothing.json").toStdString()};
    const std::string out = (d + "/out.ddprun").toStdString();
    const QString error = import_error(in, out);
    QVERIFY2(error.contains(expected), qPrintable(error));
    if (make != "emptydir" && make != "jobs" && make != "forms" && make != "duplicate")
      QVERIFY2(error.contains(QString::fromStdString(in.back())), qPrintable(error));
    QVERIFY(!QFile::exists(QString::fromStdString(out)));
    QVERIFY(!QFile::exists(QString::fromStdString(out) + ".importing"));
  }

  // An existing run is kept unless --force; the output is never one of the inputs.
  void testOutputIsProtected() {
    QTemporaryDir dir;
    const QString out = dir.path() + "/run.ddprun";
    write_file(dir.path(), "run.ddprun", "keep me");
    const std::string in = (kFixtures + "/kineto_cuda_nccl_1").toStdString();
    QVERIFY(import_error({in}, out.toStdString()).contains("pass --force"));
    QFile f(out);
    f.open(QIODevice::ReadOnly);
    QCOMPARE(f.readAll(), QByteArray("keep me"));
    f.close();
    import_torch_traces({in}, out.toStdString(), {.force = true});
    QCOMPARE(RunStoreReader(out.toStdString()).run().world_size, 1);
    const std::string trace = (kFixtures + "/kineto_cuda_nccl_1/rank0.json.gz").toStdString();
    QVERIFY(import_error({trace}, trace).contains("is one of the traces"));
  }

  void testRankFromFileName_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("rank");
    QTest::newRow("rank0.json") << "rank0.json" << 0;
    QTest::newRow("rank-3") << "dir/rank-3.json.gz" << 3;
    QTest::newRow("rank_12") << "job_rank_12.json" << 12;
    QTest::newRow("tensorboard") << "rank1.1795558370312105505.pt.trace.json.gz" << 1;
    QTest::newRow("tensorboard's samples") << "worker0.pt.trace.json" << 0;
    QTest::newRow("worker_3") << "logs/worker_3.1795558370312105505.pt.trace.json.gz" << 3;
    QTest::newRow("host_pid (no rank in it)") << "node17_4242.1795558370312105505.pt.trace.json" << -1;
    QTest::newRow("more digits than a rank has") << "rank12345678901.json" << -1;
    QTest::newRow("none") << "trace.json" << -1;
  }
  void testRankFromFileName() {
    QFETCH(QString, name);
    QFETCH(int, rank);
    QCOMPARE(rank_from_file_name(name.toStdString()), rank);
  }
};

QTEST_GUILESS_MAIN(TestTorchImport)
#include "tst_torch_import.moc"
