// Span packs: the codec's round trip at the edges of every field, flags, spans cut short
// by an error, damaged packs refused with clear errors, older files read as they are and
// migrated with the same spans, detail kinds packed apart, one pack per thread and tier,
// and scans that read only the packs they need.
#include <QtTest/QtTest>

#include "span_fixtures.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::span_fixtures;

class TestSpanPack : public ScratchTest {
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSpanPack)
#include "tst_span_pack.moc"
