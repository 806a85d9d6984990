// import-torch on real PyTorch profiler traces: the older list form made here by Debian's
// torch 1.13 (/usr/bin/python3, a 2-rank gloo DDP job with several buckets), and Kineto
// traces that PyTorch 2.11 wrote on an H100 (tests/torch/fixtures: CPU and CUDA DDP over
// gloo, a 1-rank NCCL job, tensorboard_trace_handler's .pt.trace.json.gz, a job where
// rank 1 stopped early). Every figure is checked against the trace files themselves.
#include <QtTest/QtTest>

#include "torch_import_support.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestTorchTraceImport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString list_dir_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    list_dir_ = tmp_.path() + "/list";
    QVERIFY(make_list_traces(list_dir_));
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTorchTraceImport)
#include "tst_torch_trace_import.moc"
