// Span packs (schema 8): the codec's round trip at the edges of every field, damaged
// packs refused with clear errors, older files read as they are and migrated with the
// same spans, SQL over spans through the `spans` table (and the SQLite extension from
// Python), and the bytes a span takes on disk.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <filesystem>
#include <limits>
#include <random>

#include "args_pack.h"
#include "overlap_analysis.h"
#include "run_store_reader.h"
#include "run_store_schema.h"
#include "run_store_writer.h"
#include "scratch_test.h"
#include "span_pack.h"
#include "span_table.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace {

std::vector<PackedSpan> random_spans(size_t n, uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<PackedSpan> out(n);
  int64_t t = 1'000'000'000;
  for (PackedSpan& s : out) {
    s.kind = static_cast<int32_t>(gen() % kNumKinds);
    s.name_id = static_cast<int32_t>(1 + gen() % 40);
    t += static_cast<int64_t>(gen() % 100'000) - 20'000;  // not sorted: begins go back too
    s.t_begin_ns = t;
    s.t_end_ns = t + static_cast<int64_t>(gen() % 5'000'000);
    s.iteration = static_cast<int64_t>(gen() % 3) - 1;
    s.bucket = gen() % 2 ? -1 : static_cast<int64_t>(gen() % 30);
    s.bytes = gen() % 2 ? -1 : static_cast<int64_t>(gen() % (int64_t{1} << 40));
    s.seq = static_cast<int64_t>(gen() % 1000);
    s.msg_id = gen() % 4 ? -1 : static_cast<int64_t>(gen());  // up to 2^64-1 read as int64
  }
  return out;
}

std::vector<CompactSpan> every_span(RunStoreReader& r, std::vector<Kind> kinds = {}, int rank = -1, int64_t after = 0) {
  std::vector<CompactSpan> out;
  r.for_each_span([&](const CompactSpan& c) { out.push_back(c); }, kinds, rank, after);
  return out;
}

bool same(const CompactSpan& a, const CompactSpan& b) {
  return a.rowid == b.rowid && a.rank == b.rank && a.thread == b.thread && a.kind == b.kind && a.name_id == b.name_id &&
         a.t_begin_ns == b.t_begin_ns && a.t_end_ns == b.t_end_ns && a.iteration == b.iteration &&
         a.bucket == b.bucket && a.param == b.param && a.bytes == b.bytes && a.seq == b.seq && a.msg_id == b.msg_id;
}

}  // namespace

class TestSpanPacks : public ScratchTest {
  Q_OBJECT
 private slots:
  void testRoundTripAtTheEdges() {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, kMaxPackSpans}) {
      const auto spans = random_spans(n, static_cast<uint32_t>(n));
      std::vector<PackedSpan> back = {PackedSpan{}};  // decode appends
      QCOMPARE(decode_pack(encode_pack(spans).data(), encode_pack(spans).size(), back), n);
      QCOMPARE(back.size(), n + 1);
      QVERIFY(std::equal(spans.begin(), spans.end(), back.begin() + 1));
    }
    // The extremes of every field survive the differences taken between them.
    constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    std::vector<PackedSpan> extreme(3);
    extreme[0] = {0, 0, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi};
    extreme[1] = {kNumKinds - 1, std::numeric_limits<int32_t>::max(), hi, hi, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo};
    extreme[2] = {3, 1, 0, hi, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    std::vector<PackedSpan> back;
    const std::string blob = encode_pack(extreme);
    decode_pack(blob.data(), blob.size(), back);
    QVERIFY(back == extreme);
  }

  void testFlagsRoundTripAndFormatOneStillReads() {
    auto spans = random_spans(300, 9);
    for (size_t i = 0; i < spans.size(); i += 7)
      spans[i].flags = kEndedByError;
    std::vector<PackedSpan> back;
    const std::string blob = encode_pack(spans);
    QCOMPARE(int(blob[0]), 2);
    decode_pack(blob.data(), blob.size(), back);
    QVERIFY(back == spans);
    // Packs written before the flags column (format 1, from a real run): every span
    // reads, none flagged.
    QDir corpus(DDPSCOPE_SPAN_PACK_CORPUS);
    const QStringList seeds = corpus.entryList({QStringLiteral("rank*")}, QDir::Files);  // the format-1 seeds
    QVERIFY(!seeds.isEmpty());
    for (const QString& seed : seeds) {
      QFile f(corpus.filePath(seed));
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QByteArray bytes = f.readAll();
      QCOMPARE(int(bytes[0]), 1);
      std::vector<PackedSpan> old;
      QVERIFY(decode_pack(bytes.constData(), static_cast<size_t>(bytes.size()), old) > 0);
      QVERIFY(std::none_of(old.begin(), old.end(), [](const PackedSpan& s) { return s.flags != 0; }));
    }
  }

  void testSpansCutShortByAnErrorAreMarkedAndLeftOut() {
    // Rank 0's iteration 3 ended by an exception (its collective timed out): flagged in
    // the file, readable through the reader and SQL, and not an iteration to average.
    const std::string file = path("cut.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.names = {"iteration"};
      for (int it = 1; it <= 3; ++it) {
        const int64_t t = it * 1'000'000;
        b.events.push_back(BatchEvent{t, t + (it == 3 ? 5'000'000'000 : 900'000), -1, -1, -1, it, -1, 0, -1, -1, 0,
                                      static_cast<uint8_t>(Kind::Iteration),
                                      static_cast<uint8_t>(it == 3 ? kEndedByError : 0)});
      }
      w.write(b);
    }
    RunStoreReader r(file);
    const auto spans = r.spans({.kinds = {Kind::Iteration}});
    QCOMPARE(spans.size(), size_t{3});
    QVERIFY(!spans[0].ended_by_error && !spans[1].ended_by_error && spans[2].ended_by_error);
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    register_span_table(db.handle());
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE ended_by_error = 1 AND iteration = 3"), int64_t{1});
    const RunAnalysis a = analyze_run(r);
    QCOMPARE(a.iterations.size(), size_t{2});
    QCOMPARE(a.cut_short.size(), size_t{1});
    QCOMPARE(a.cut_short[0].iteration, int64_t{3});
    QCOMPARE(a.cut_short[0].t_end_ns - a.cut_short[0].t_begin_ns, int64_t{5'000'000'000});
  }

  void testDamagedPacksAreRefused() {
    const auto spans = random_spans(500, 3);
    const std::string blob = encode_pack(spans);
    auto refuses = [](const std::string& bytes, const char* words) {
      std::vector<PackedSpan> out;
      try {
        decode_pack(bytes.data(), bytes.size(), out);
      } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains(words), e.what());
        QVERIFY(out.empty());  // nothing half-decoded is left behind
        return;
      }
      QFAIL("a damaged pack was accepted");
    };
    refuses("", "empty");
    refuses(blob.substr(0, blob.size() / 2), "does not decompress");
    std::string newer = blob;
    newer[0] = 9;
    refuses(newer, "format 9, which this ddpscope does not read");
    std::string count = blob;
    count[1] = static_cast<char>(0xff);  // a count of spans the payload cannot hold
    refuses(count, "damaged");
    QVERIFY_THROWS_EXCEPTION(Error, encode_pack(random_spans(kMaxPackSpans + 1, 1)));
  }

  // Imported spans' arguments: each span's back as written, none where it had none; a
  // damaged blob is refused with a message, never read past its end.
  void testArgumentPacksRoundTripAndRefuseDamage() {
    const std::string grid = R"({"grid":[1,1,1],"block":[128,1,1],"stream":7})", dims = R"({"Input Dims":[[4,8]]})";
    const std::string packed = encode_args_pack({&grid, nullptr, &dims});
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 0), grid);
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 1), std::string());
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 2), dims);
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 3), std::string());
    std::string cut = packed.substr(0, packed.size() / 2);
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, args_in_pack(cut.data(), cut.size(), 0));
    const std::string junk = "not zstd at all";
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, args_in_pack(junk.data(), junk.size(), 0));
  }

  void testOlderFilesReadAsTheyAreAndMigrate() {
    // The lessons ship files of schema 4 and 7: read through their rows, then migrated by
    // opening them for writing; every span, its id and its name are the same after.
    for (const char* lesson : {"seed-fast.ddprun", "zero-overlap.ddprun"}) {
      const std::string file = path(lesson);
      std::filesystem::copy_file(std::string(DDPSCOPE_LESSONS_DIR) + "/" + lesson, file,
                                 std::filesystem::copy_options::overwrite_existing);
      std::vector<CompactSpan> before, before_kind;
      std::vector<SpanRow> window_before;
      int64_t count_before = 0;
      std::pair<int64_t, int64_t> range_before;
      {
        RunStoreReader r(file);
        QVERIFY(!r.packed());
        before = every_span(r);
        before_kind = every_span(r, {Kind::AutogradNode}, 0, 20);
        count_before = r.span_count();
        range_before = r.time_range();
        const int64_t mid = (range_before.first + range_before.second) / 2;
        window_before = r.spans({.t_begin_ns = mid, .t_end_ns = range_before.second, .rank = 0});
      }
      QVERIFY(before.size() > 50);
      { RunStoreWriter migrate(file); }
      RunStoreReader r(file);
      QVERIFY(r.packed());
      SqliteDb db(file, SQLITE_OPEN_READONLY);
      QCOMPARE(schema_version(db), kRunStoreSchemaVersion);
      QCOMPARE(db.query_int64("SELECT count(*) FROM sqlite_master WHERE name IN ('spans', 'span_blocks')"), 0);
      const auto after = every_span(r);
      QCOMPARE(after.size(), before.size());
      for (size_t i = 0; i < after.size(); ++i)
        QVERIFY2(same(after[i], before[i]), qPrintable(QString("span %1 of %2").arg(i).arg(lesson)));
      const auto after_kind = every_span(r, {Kind::AutogradNode}, 0, 20);
      QCOMPARE(after_kind.size(), before_kind.size());
      QCOMPARE(r.span_count(), count_before);
      QCOMPARE(r.time_range(), range_before);
      const int64_t mid = (range_before.first + range_before.second) / 2;
      const auto window = r.spans({.t_begin_ns = mid, .t_end_ns = range_before.second, .rank = 0});
      QCOMPARE(window.size(), window_before.size());
      for (size_t i = 0; i < window.size(); ++i) {
        QCOMPARE(window[i].name, window_before[i].name);
        QCOMPARE(window[i].t_begin_ns, window_before[i].t_begin_ns);
        QCOMPARE(window[i].file, window_before[i].file);
      }
    }
  }

  void testSqlOverSpansMatchesTheReader() {
    const std::string file = path("sql.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({.world_size = 2});
      for (int rank = 0; rank < 2; ++rank) {
        EventBatch b;
        b.rank = rank;
        b.threads = {{0, 1, "compute"}, {1, 2, "comm"}};
        b.names = {"iteration", "allreduce"};
        for (int i = 0; i < 9000; ++i) {  // packs of 4096 at most: three per thread
          const int64_t t = int64_t{i} * 1000;
          b.events.push_back(BatchEvent{t, t + 900, i % 3 ? -1 : 4096, i, -1, i / 100, -1, static_cast<uint32_t>(i % 2),
                                        -1, -1, static_cast<uint16_t>(i < 4500 ? 0 : 1),
                                        static_cast<uint8_t>(i % 2 ? Kind::Allreduce : Kind::Iteration), 0});
        }
        w.write(b);
      }
    }
    RunStoreReader r(file);
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    register_span_table(db.handle());
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans"), r.span_count());
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans"), int64_t{18000});
    const auto allreduces =
        r.spans({.t_begin_ns = 2'000'000, .t_end_ns = 3'000'000, .kinds = {Kind::Allreduce}, .rank = 1});
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE rank = 1 AND kind = " +
                            std::to_string(static_cast<int>(Kind::Allreduce)) +
                            " AND t_begin_ns <= 3000000 AND t_end_ns >= 2000000"),
             static_cast<int64_t>(allreduces.size()));
    QVERIFY(!allreduces.empty());
    // NULL where a field is not set, as the table of rows had it; rowid is the span's id.
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE bytes IS NULL"), int64_t{12000});
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE rowid > 17990"), int64_t{10});
    QCOMPARE(db.query_int64("SELECT max(rowid) FROM spans"), int64_t{18000});
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans s JOIN names n ON n.name_id = s.name_id "
                            "WHERE n.name = 'allreduce' AND s.iteration = 7"),
             int64_t{100});
    // What reads incrementally resumes after an id, across pack boundaries.
    QCOMPARE(every_span(r, {}, -1, 4000).size(), size_t{14000});
    QCOMPARE(every_span(r, {Kind::Iteration}, 0, 8000).size(), size_t{500});
  }

  void testDetailKindsArePackedApart() {
    // A batch mixing an iteration's structure with its autograd nodes and gradient ticks:
    // no pack holds both, so the structure reads without decoding the detail.
    const std::string file = path("tiers.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.names = {"iteration", "LinearBackward", "grad_ready", "allreduce"};
      for (int it = 1; it <= 50; ++it) {
        const int64_t o = it * 1'000'000;
        b.events.push_back(
            BatchEvent{o, o + 900'000, -1, -1, -1, it, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Iteration), 0});
        for (int n = 0; n < 100; ++n) {
          const int64_t t = o + n * 5'000;
          b.events.push_back(
              BatchEvent{t, t + 4'000, -1, n, -1, it, -1, 1, -1, -1, 0, static_cast<uint8_t>(Kind::AutogradNode), 0});
          b.events.push_back(BatchEvent{t + 4'000, t + 4'000, -1, -1, -1, it, n, 2, -1, -1, 0,
                                        static_cast<uint8_t>(Kind::GradReady), 0});
        }
        b.events.push_back(BatchEvent{o + 500'000, o + 800'000, 4096, it, -1, it, -1, 3, 0, -1, 0,
                                      static_cast<uint8_t>(Kind::Allreduce), 0});
      }
      w.write(b);
    }
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    const std::string detail = std::to_string(kDetailKindMask);
    QCOMPARE(db.query_int64("SELECT count(*) FROM span_packs WHERE (kinds & " + detail + ") != 0 AND (kinds & ~" +
                            detail + ") != 0"),
             int64_t{0});
    QCOMPARE(db.query_int64("SELECT sum(count) FROM span_packs WHERE (kinds & " + detail + ") = 0"), int64_t{100});
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t{50 * 202});
    QCOMPARE(every_span(r, {Kind::Iteration, Kind::Allreduce}).size(), size_t{100});
    QCOMPARE(every_span(r, {Kind::AutogradNode}).size(), size_t{5000});
    QCOMPARE(r.spans({.iteration = 7}).size(), size_t{202});
  }

  void testABatchOfInterleavedThreadsMakesOnePackPerThreadAndTier() {
    // Iterations whose compute and comm spans alternate in the batch: the writer groups
    // the batch by thread, so each thread's spans of a tier share one pack.
    const std::string file = path("interleaved.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.names = {"iteration", "allreduce", "LinearBackward"};
      for (int it = 1; it <= 100; ++it) {
        const int64_t o = it * 1'000'000;
        b.events.push_back(
            BatchEvent{o, o + 900'000, -1, -1, -1, it, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Iteration), 0});
        b.events.push_back(BatchEvent{o + 100, o + 5'000, -1, -1, -1, it, -1, 2, -1, -1, 0,
                                      static_cast<uint8_t>(Kind::AutogradNode), 0});
        b.events.push_back(BatchEvent{o + 500'000, o + 800'000, 4096, it, -1, it, -1, 1, 0, -1, 1,
                                      static_cast<uint8_t>(Kind::Allreduce), 0});
      }
      w.write(b);
    }
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    QCOMPARE(db.query_int64("SELECT count(*) FROM span_packs"), int64_t{3});  // thread 0: 2 tiers; thread 1
    RunStoreReader r(file);
    const auto comm = every_span(r, {Kind::Allreduce});
    QCOMPARE(comm.size(), size_t{100});
    for (size_t i = 1; i < comm.size(); ++i)
      QVERIFY(comm[i].t_begin_ns > comm[i - 1].t_begin_ns && comm[i].rowid > comm[i - 1].rowid);
    QCOMPARE(r.span_count(), int64_t{300});
  }

  void testScansReadOnlyThePacksTheirKindsAndWindowNeed() {
    const std::string file = path("filters.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      for (int it = 1; it <= 40; ++it) {  // a batch per iteration: packs of one iteration each
        EventBatch b;
        b.names = {"iteration", "LinearBackward"};
        const int64_t o = it * 1'000'000;
        b.events.push_back(
            BatchEvent{o, o + 900'000, -1, -1, -1, it, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Iteration), 0});
        for (int n = 0; n < 10; ++n)
          b.events.push_back(BatchEvent{o + n * 50'000, o + n * 50'000 + 40'000, -1, -1, -1, it, -1, 1, -1, -1, 0,
                                        static_cast<uint8_t>(Kind::AutogradNode), 0});
        w.write(b);
      }
    }
    RunStoreReader r(file);
    // Every kind but the detail ones, up to bit 63: the mask must stay an SQL integer (as
    // an unsigned number past int64 it became a real, and every detail pack was read).
    std::vector<Kind> structure;
    for (int k = 0; k < 64; ++k) {
      if (!is_detail_kind(static_cast<uint8_t>(k))) structure.push_back(static_cast<Kind>(k));
    }
    SpanScan scan = r.scan_spans(structure);
    CompactSpan c;
    int64_t n = 0;
    while (scan.next(c))
      ++n;
    QCOMPARE(n, int64_t{40});
    QCOMPARE(scan.packs_read(), int64_t{40});
    // A window: the spans that overlap it, from the packs that do.
    SpanScan window = r.scan_spans({Kind::AutogradNode}, -1, 0, TimeWindow{10'420'000, 12'010'000});
    std::vector<CompactSpan> got;
    while (window.next(c))
      got.push_back(c);
    QCOMPARE(window.packs_read(), int64_t{3});  // iterations 10, 11 and 12
    QCOMPARE(got.size(), size_t{2 + 10 + 1});   // 10's last two (from 10.40 ms), all of 11, 12's first
    for (const auto& s : got)
      QVERIFY(s.t_end_ns >= 10'420'000 && s.t_begin_ns <= 12'010'000);
    // The extents say as much before any pack is read.
    int64_t detail = 0, structure_spans = 0;
    for (const PackExtent& p : r.pack_extents())
      (p.detail ? detail : structure_spans) += p.count;
    QCOMPARE(detail, int64_t{400});
    QCOMPARE(structure_spans, int64_t{40});
  }

  void testSqliteExtensionFromPython() {
    // As a user queries a run: Python's sqlite3 with the extension loaded.
    const std::string file = path("python.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.names = {"forward"};
      for (int i = 0; i < 10; ++i)
        b.events.push_back(
            BatchEvent{i * 10, i * 10 + 5, -1, -1, -1, i, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Forward), 0});
      w.write(b);
    }
    QProcess python;
    python.start("/usr/bin/python3",
                 {"-c",
                  "import sqlite3, sys\n"
                  "db = sqlite3.connect(sys.argv[1])\n"
                  "db.enable_load_extension(True)\n"
                  "db.load_extension(sys.argv[2])\n"
                  "print(db.execute('SELECT count(*), sum(t_end_ns - t_begin_ns) FROM spans WHERE iteration >= 5')"
                  ".fetchone())\n",
                  QString::fromStdString(file), DDPSCOPE_SQLITE_EXTENSION});
    QVERIFY(python.waitForFinished(30000));
    QCOMPARE(python.exitCode(), 0);
    QCOMPARE(QString(python.readAllStandardOutput()).trimmed(), QString("(5, 25)"));
  }
};

QTEST_GUILESS_MAIN(TestSpanPacks)
#include "tst_span_packs.moc"
