#include "span_table.h"

#include <limits>
#include <string>
#include <vector>

#include "event.h"
#include "span_pack.h"
#include "sqlite_db.h"

namespace ddpscope::probes {
namespace {

enum SpanColumn {
  kRank,
  kThread,
  kKind,
  kNameId,
  kBegin,
  kEnd,
  kIteration,
  kBucket,
  kParam,
  kBytes,
  kPeer,
  kSeq,
  kCtx,
  kMsg,
  kRref,
  kFork,
  kEndedByErrorColumn
};
constexpr int kRowid = -1;

// What xBestIndex found usable, one bit each, in the order their values reach xFilter.
enum Use : int {
  kUseRank = 1,      // rank = ?
  kUseKind = 2,      // kind = ?
  kUseBeginMax = 4,  // t_begin_ns <= ? (or <): packs with t_min <= ?
  kUseEndMin = 8,    // t_end_ns >= ? (or >): packs with t_max >= ?
  kUseIdMin = 16,    // rowid >= ? (or >, =)
};
constexpr int kUses[] = {kUseRank, kUseKind, kUseBeginMax, kUseEndMin, kUseIdMin};

struct SpanVtab : sqlite3_vtab {
  sqlite3* db = nullptr;
};

struct SpanCursor : sqlite3_vtab_cursor {
  sqlite3_stmt* packs = nullptr;
  std::vector<PackedSpan> pack;
  size_t at = 0;  // the current span is pack[at - 1]
  int64_t first_id = 0, rank = 0, thread = 0;
  bool eof = true;
  int64_t kind = -1, begin_max = std::numeric_limits<int64_t>::max(), end_min = std::numeric_limits<int64_t>::min(),
          id_min = std::numeric_limits<int64_t>::min();
  const PackedSpan& span() const { return pack[at - 1]; }
  int64_t id() const { return first_id + static_cast<int64_t>(at) - 1; }
};

int fail(sqlite3_vtab* vtab, const std::string& message, int rc) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
  return rc;
}

int connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
  const int rc = sqlite3_declare_vtab(
      db,
      "CREATE TABLE x(rank INTEGER, thread INTEGER, kind INTEGER, name_id INTEGER, t_begin_ns INTEGER, "
      "t_end_ns INTEGER, iteration INTEGER, bucket INTEGER, param INTEGER, bytes INTEGER, peer INTEGER, "
      "seq INTEGER, ctx_id INTEGER, msg_id INTEGER, rref_id INTEGER, fork_id INTEGER, ended_by_error INTEGER)");
  if (rc != SQLITE_OK) return rc;
  auto* vtab = new SpanVtab;
  vtab->db = db;
  *out = vtab;
  return SQLITE_OK;
}

int disconnect(sqlite3_vtab* vtab) {
  delete static_cast<SpanVtab*>(vtab);
  return SQLITE_OK;
}

int best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  // Each constraint narrows the packs read; SQLite still checks every row (no omit), so
  // the pack filter only has to keep every span that can match.
  int uses = 0;
  int argv[5] = {-1, -1, -1, -1, -1};
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable) continue;
    int use = 0;
    if (c.iColumn == kRank && c.op == SQLITE_INDEX_CONSTRAINT_EQ) use = kUseRank;
    if (c.iColumn == kKind && c.op == SQLITE_INDEX_CONSTRAINT_EQ) use = kUseKind;
    if (c.iColumn == kBegin && (c.op == SQLITE_INDEX_CONSTRAINT_LE || c.op == SQLITE_INDEX_CONSTRAINT_LT))
      use = kUseBeginMax;
    if (c.iColumn == kEnd && (c.op == SQLITE_INDEX_CONSTRAINT_GE || c.op == SQLITE_INDEX_CONSTRAINT_GT))
      use = kUseEndMin;
    if (c.iColumn == kRowid && (c.op == SQLITE_INDEX_CONSTRAINT_GE || c.op == SQLITE_INDEX_CONSTRAINT_GT ||
                                c.op == SQLITE_INDEX_CONSTRAINT_EQ))
      use = kUseIdMin;
    if (use == 0 || (uses & use)) continue;
    uses |= use;
    for (int k = 0; k < 5; ++k)
      if (kUses[k] == use) argv[k] = i;
  }
  int next = 1;
  double cost = 1e6;
  for (int k = 0; k < 5; ++k) {
    if (argv[k] < 0) continue;
    info->aConstraintUsage[argv[k]].argvIndex = next++;
    cost /= 10;
  }
  info->idxNum = uses;
  info->estimatedCost = cost;
  info->estimatedRows = static_cast<sqlite3_int64>(cost);
  // Spans come out in id order: an ORDER BY rowid needs no sort.
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == kRowid && !info->aOrderBy[0].desc) info->orderByConsumed = 1;
  return SQLITE_OK;
}

int open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new SpanCursor;
  return SQLITE_OK;
}

int close(sqlite3_vtab_cursor* cursor) {
  auto* c = static_cast<SpanCursor*>(cursor);
  sqlite3_finalize(c->packs);
  delete c;
  return SQLITE_OK;
}

// Moves to the next span that passes the cursor's filters (reading packs as needed).
int advance(SpanCursor* c) {
  while (true) {
    while (c->at < c->pack.size()) {
      const PackedSpan& p = c->pack[c->at++];
      const int64_t id = c->first_id + static_cast<int64_t>(c->at) - 1;
      if (id < c->id_min || p.t_begin_ns > c->begin_max || p.t_end_ns < c->end_min) continue;
      if (c->kind >= 0 && p.kind != c->kind) continue;
      return SQLITE_OK;
    }
    const int rc = sqlite3_step(c->packs);
    if (rc == SQLITE_DONE) {
      c->eof = true;
      return SQLITE_OK;
    }
    if (rc != SQLITE_ROW) return fail(c->pVtab, sqlite3_errmsg(static_cast<SpanVtab*>(c->pVtab)->db), rc);
    c->first_id = sqlite3_column_int64(c->packs, 0);
    c->rank = sqlite3_column_int64(c->packs, 1);
    c->thread = sqlite3_column_int64(c->packs, 2);
    c->pack.clear();
    c->at = 0;
    try {
      decode_pack(sqlite3_column_blob(c->packs, 3), static_cast<size_t>(sqlite3_column_bytes(c->packs, 3)), c->pack);
    } catch (const std::exception& e) {
      return fail(c->pVtab,
                  "the run file is damaged: the pack of spans from " + std::to_string(c->first_id) +
                      " cannot be read (" + e.what() + ")",
                  SQLITE_CORRUPT);
    }
  }
}

int filter(sqlite3_vtab_cursor* cursor, int uses, const char*, int argc, sqlite3_value** argv) {
  auto* c = static_cast<SpanCursor*>(cursor);
  sqlite3_finalize(c->packs);
  c->packs = nullptr;
  c->pack.clear();
  c->at = 0;
  c->eof = false;
  c->kind = -1;
  c->begin_max = std::numeric_limits<int64_t>::max();
  c->end_min = std::numeric_limits<int64_t>::min();
  c->id_min = std::numeric_limits<int64_t>::min();
  std::string sql = "SELECT first_id, rank, thread, data FROM span_packs WHERE 1";
  std::vector<int64_t> binds;
  int arg = 0;
  for (int use : kUses) {
    if (!(uses & use) || arg >= argc) continue;
    sqlite3_value* v = argv[arg++];
    // A comparison with NULL or text matches nothing useful to narrow by: read it all.
    if (sqlite3_value_numeric_type(v) != SQLITE_INTEGER) continue;
    const int64_t value = sqlite3_value_int64(v);
    switch (use) {
      case kUseRank: sql += " AND rank = ?"; break;
      case kUseKind:
        c->kind = value;
        sql += " AND (kinds >> (? & 63)) & 1";
        break;
      case kUseBeginMax:
        c->begin_max = value;
        sql += " AND t_min <= ?";
        break;
      case kUseEndMin:
        c->end_min = value;
        sql += " AND t_max >= ?";
        break;
      case kUseIdMin:
        c->id_min = value;
        sql += " AND first_id + count > ?";
        break;
    }
    binds.push_back(value);
  }
  sql += " ORDER BY first_id";
  sqlite3* db = static_cast<SpanVtab*>(cursor->pVtab)->db;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &c->packs, nullptr);
  if (rc != SQLITE_OK) {
    return fail(cursor->pVtab, std::string("spans: the run file has no span packs (") + sqlite3_errmsg(db) + ")", rc);
  }
  for (size_t i = 0; i < binds.size(); ++i)
    sqlite3_bind_int64(c->packs, static_cast<int>(i) + 1, binds[i]);
  return advance(c);
}

int next(sqlite3_vtab_cursor* cursor) { return advance(static_cast<SpanCursor*>(cursor)); }

int eof(sqlite3_vtab_cursor* cursor) { return static_cast<SpanCursor*>(cursor)->eof; }

int column(sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int column) {
  const auto* c = static_cast<SpanCursor*>(cursor);
  const PackedSpan& p = c->span();
  int64_t v = -1;
  bool optional = true;
  switch (column) {
    case kRank: v = c->rank, optional = false; break;
    case kThread: v = c->thread, optional = false; break;
    case kKind: v = p.kind, optional = false; break;
    case kNameId: v = p.name_id, optional = false; break;
    case kBegin: v = p.t_begin_ns, optional = false; break;
    case kEnd: v = p.t_end_ns, optional = false; break;
    case kIteration: v = p.iteration; break;
    case kBucket: v = p.bucket; break;
    case kParam: v = p.param; break;
    case kBytes: v = p.bytes; break;
    case kPeer: v = p.peer; break;
    case kSeq: v = p.seq; break;
    case kCtx: v = p.ctx_id; break;
    case kMsg: v = p.msg_id; break;
    case kRref: v = p.rref_id; break;
    case kFork: v = p.fork_id; break;
    case kEndedByErrorColumn: v = (p.flags & kEndedByError) ? 1 : 0, optional = false; break;
  }
  if (optional && v < 0)
    sqlite3_result_null(ctx);
  else
    sqlite3_result_int64(ctx, v);
  return SQLITE_OK;
}

int rowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* out) {
  *out = static_cast<SpanCursor*>(cursor)->id();
  return SQLITE_OK;
}

sqlite3_module make_module() {
  sqlite3_module m{};
  m.iVersion = 0;
  m.xCreate = nullptr;  // eponymous only: `spans` exists without CREATE VIRTUAL TABLE
  m.xConnect = connect;
  m.xBestIndex = best_index;
  m.xDisconnect = disconnect;
  m.xDestroy = disconnect;
  m.xOpen = open;
  m.xClose = close;
  m.xFilter = filter;
  m.xNext = next;
  m.xEof = eof;
  m.xColumn = column;
  m.xRowid = rowid;
  return m;
}

}  // namespace

void register_span_table(sqlite3* db) {
  static const sqlite3_module module = make_module();
  const int rc = sqlite3_create_module(db, "spans", &module, nullptr);
  if (rc != SQLITE_OK) {
    throw RunStoreError(std::string("cannot offer the spans table: ") + sqlite3_errmsg(db), __FILE__, __LINE__);
  }
}

}  // namespace ddpscope::probes
