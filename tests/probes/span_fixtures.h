// Spans the span-pack tests write and compare: random spans over every field's range, every
// span a reader yields, and field-by-field equality.
#pragma once

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

namespace ddpscope::probes::span_fixtures {

inline std::vector<PackedSpan> random_spans(size_t n, uint32_t seed) {
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

inline std::vector<CompactSpan> every_span(RunStoreReader& r, std::vector<Kind> kinds = {}, int rank = -1,
                                           int64_t after = 0) {
  std::vector<CompactSpan> out;
  r.for_each_span([&](const CompactSpan& c) { out.push_back(c); }, kinds, rank, after);
  return out;
}

inline bool same(const CompactSpan& a, const CompactSpan& b) {
  return a.rowid == b.rowid && a.rank == b.rank && a.thread == b.thread && a.kind == b.kind && a.name_id == b.name_id &&
         a.t_begin_ns == b.t_begin_ns && a.t_end_ns == b.t_end_ns && a.iteration == b.iteration &&
         a.bucket == b.bucket && a.param == b.param && a.bytes == b.bytes && a.seq == b.seq && a.msg_id == b.msg_id;
}

}  // namespace ddpscope::probes::span_fixtures
