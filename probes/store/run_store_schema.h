// The run file's schema and its versions. PRAGMA user_version holds the version; a file
// from an older ddpscope is migrated step by step when opened for writing, a file from
// a newer one is refused with a message saying so.
//
// Times in `spans`, `messages` are nanoseconds on the collector's clock (each rank's
// CLOCK_MONOTONIC plus its measured offset, see ranks.clock_offset_ns). -1/NULL means
// "not set" in the optional integer columns.
#pragma once

#include "sqlite_db.h"

namespace ddpscope::probes {

inline constexpr int kRunStoreSchemaVersion = 16;

// A file with nothing in it yet (page size can still be chosen).
bool is_empty_database(SqliteDb& db);
// The version stored in an opened file (0: empty file).
int schema_version(SqliteDb& db);
// Creates the tables in an empty file or migrates an older one to the current version.
void create_or_migrate(SqliteDb& db);
// Refuses files a reader cannot read, with a message that says why and what to do.
void check_readable(SqliteDb& db);

}  // namespace ddpscope::probes
