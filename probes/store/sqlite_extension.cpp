// The SQLite extension libddpscope_sqlite.so: `.load` it in the sqlite3 shell (or
// load_extension in Python) to query a run file's spans with SQL (span_table.h).
#include <sqlite3.h>

#include <exception>

#include "span_table.h"

namespace {

int init(sqlite3* db, char** error) {
  try {
    ddpscope::probes::register_span_table(db);
    return SQLITE_OK;
  } catch (const std::exception& e) {
    *error = sqlite3_mprintf("%s", e.what());
    return SQLITE_ERROR;
  }
}

}  // namespace

// SQLite looks for sqlite3_<name>_init, <name> from the file name (libddpscope_sqlite ->
// ddpscopesqlite), then for sqlite3_extension_init.
extern "C" __attribute__((visibility("default"))) int sqlite3_ddpscopesqlite_init(sqlite3* db, char** error,
                                                                                  const void*) {
  return init(db, error);
}
extern "C" __attribute__((visibility("default"))) int sqlite3_extension_init(sqlite3* db, char** error, const void*) {
  return init(db, error);
}
