// A thin RAII layer over the SQLite C API for the run store: the database and
// statement handles are owned by unique_ptrs, and check() turns every failing return
// code into a RunStoreError that names the file, what was being done and SQLite's
// own message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ddpscope/error.h"

namespace ddpscope::probes {

class RunStoreError : public Error {
 public:
  using Error::Error;
};
// The disk holding the run file is full (SQLITE_FULL): the collector goes on, counting
// what it could not store.
class RunStoreFullError : public RunStoreError {
 public:
  using RunStoreError::RunStoreError;
};

struct SqliteCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StatementFinalizer {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};

class Statement {
 public:
  Statement() = default;
  Statement(sqlite3_stmt* stmt, std::string path) : stmt_(stmt), path_(std::move(path)) {}
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, const std::string& v);
  Statement& bind_null(int i);
  // The bytes are used until the statement runs (no copy): keep them alive until step().
  Statement& bind_blob(int i, const void* data, size_t size);
  // Binds -1 as NULL: the probes' "not set".
  Statement& bind_optional(int i, int64_t v) { return v < 0 ? bind_null(i) : bind(i, v); }
  // Advances; true while there is a row.
  bool step();
  void reset();  // and clears the bindings
  // Ready to run again with new values bound over the old (the hot insert path).
  void rewind() { sqlite3_reset(stmt_.get()); }
  bool valid() const { return stmt_ != nullptr; }
  int64_t column_int64(int i) const { return sqlite3_column_int64(stmt_.get(), i); }
  // NULL reads as -1.
  int64_t column_optional(int i) const {
    return sqlite3_column_type(stmt_.get(), i) == SQLITE_NULL ? -1 : column_int64(i);
  }
  double column_double(int i) const { return sqlite3_column_double(stmt_.get(), i); }
  bool column_is_text(int i) const { return sqlite3_column_type(stmt_.get(), i) == SQLITE_TEXT; }
  std::string column_text(int i) const;
  // A blob column's bytes, valid until the next step() or column call on this column.
  std::pair<const void*, size_t> column_blob(int i) const {
    const void* p = sqlite3_column_blob(stmt_.get(), i);
    return {p, static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i))};
  }

 private:
  std::unique_ptr<sqlite3_stmt, StatementFinalizer> stmt_;
  std::string path_;
};

class SqliteDb {
 public:
  // flags: SQLITE_OPEN_READONLY, or SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE.
  SqliteDb(const std::string& path, int flags);
  void exec(const std::string& sql);
  Statement prepare(const std::string& sql);
  int64_t query_int64(const std::string& sql);
  sqlite3* handle() const { return db_.get(); }
  const std::string& path() const { return path_; }
  // Throws RunStoreError when rc is not SQLITE_OK / SQLITE_ROW / SQLITE_DONE.
  void check(int rc, const std::string& what) const;

 private:
  std::unique_ptr<sqlite3, SqliteCloser> db_;
  std::string path_;
};

// The message of a failed SQLite call on `path`, with advice for the usual causes.
[[noreturn]] void throw_sqlite_error(int rc, const char* sqlite_message, const std::string& path,
                                     const std::string& what);

}  // namespace ddpscope::probes
