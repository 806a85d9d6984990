#include "sqlite_db.h"

#include "ddpscope/regular_file.h"

#include <sys/stat.h>

#include <cstdio>

namespace ddpscope::probes {

void throw_sqlite_error(int rc, const char* sqlite_message, const std::string& path, const std::string& what) {
  const int primary = rc & 0xff;
  std::string advice;
  if (primary == SQLITE_NOTADB) {
    advice = "; the file is not a ddpscope run file (not an SQLite database)";
  } else if (primary == SQLITE_CORRUPT) {
    advice =
        "; the run file is damaged (truncated or overwritten); events before the damage "
        "may still be read with the sqlite3 tool's .recover command";
  } else if (primary == SQLITE_CANTOPEN) {
    advice = "; check that the file exists and its folder is readable";
  } else if (primary == SQLITE_READONLY) {
    advice = "; the run file or its folder is not writable";
  } else if (primary == SQLITE_BUSY) {
    advice = "; another process holds a lock on the run file";
  } else if (primary == SQLITE_FULL) {
    advice = "; the disk is full";
  }
  std::string text = detail::concat("run file '", path, "': ", what, " failed: ", sqlite_message, advice);
  if (primary == SQLITE_FULL) throw RunStoreFullError(std::move(text), __FILE__, __LINE__);
  throw RunStoreError(std::move(text), __FILE__, __LINE__);
}

namespace {
// Before SQLite initialises: without memory statistics its allocator takes no global
// mutex (10% of the collector's time in a profile). Harmless if it is too late.
const int g_memstatus_off = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}  // namespace

namespace {
// `path` as an SQLite file: URI (RFC 3986: '%', '?' and '#' must be escaped).
std::string file_uri(const std::string& path) {
  std::string uri = "file:";
  for (const unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      uri += hex;
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}
}  // namespace

SqliteDb::SqliteDb(const std::string& path, int flags) : path_(path) {
  (void)g_memstatus_off;
  // A run file named by a user or a link: a pipe or a device would block or never end.
  if (exists(path)) check_regular_file(path, "run file");
  sqlite3* db = nullptr;
  // A reader of a run no writer holds (a writer in WAL mode always keeps the -wal file)
  // opens it as immutable: no locks and no -wal or -shm created beside it, so a finished
  // run reads from a read-only folder (an installed lesson, another user's run) and
  // reading leaves the folder as it was.
  const bool reader = (flags & SQLITE_OPEN_READONLY) != 0;
  const int rc = reader && exists(path) && !exists(path + "-wal")
                     ? sqlite3_open_v2((file_uri(path) + "?immutable=1").c_str(), &db, flags | SQLITE_OPEN_URI, nullptr)
                     : sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  db_.reset(db);
  if (rc != SQLITE_OK) {
    throw_sqlite_error(rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), path, "opening");
  }
  sqlite3_extended_result_codes(db, 1);
  // Readers and the writer meet in WAL mode; a short wait covers checkpoints.
  sqlite3_busy_timeout(db, 5000);
}

void SqliteDb::check(int rc, const std::string& what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  throw_sqlite_error(rc, sqlite3_errmsg(db_.get()), path_, what);
}

void SqliteDb::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string message = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw_sqlite_error(rc, message.c_str(), path_, "running '" + sql.substr(0, 60) + "'");
  }
}

Statement SqliteDb::prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  check(sqlite3_prepare_v3(db_.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr),
        "preparing '" + sql.substr(0, 60) + "'");
  return Statement(stmt, path_);
}

int64_t SqliteDb::query_int64(const std::string& sql) {
  Statement s = prepare(sql);
  return s.step() ? s.column_int64(0) : 0;
}

Statement& Statement::bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_.get(), i, v);
  return *this;
}
Statement& Statement::bind(int i, double v) {
  sqlite3_bind_double(stmt_.get(), i, v);
  return *this;
}
Statement& Statement::bind(int i, const std::string& v) {
  sqlite3_bind_text(stmt_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_blob(int i, const void* data, size_t size) {
  sqlite3_bind_blob64(stmt_.get(), i, data, size, SQLITE_STATIC);
  return *this;
}
Statement& Statement::bind_null(int i) {
  sqlite3_bind_null(stmt_.get(), i);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_.get());
  const std::string sql = sqlite3_sql(stmt_.get()) ? sqlite3_sql(stmt_.get()) : "";
  const std::string message = sqlite3_errmsg(db);
  sqlite3_reset(stmt_.get());
  throw_sqlite_error(rc, message.c_str(), path_, "running '" + sql.substr(0, 60) + "'");
}

void Statement::reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

std::string Statement::column_text(int i) const {
  const auto* p = sqlite3_column_text(stmt_.get(), i);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i)))
           : std::string();
}

}  // namespace ddpscope::probes
