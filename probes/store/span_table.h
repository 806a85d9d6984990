// SQL over spans: `spans`, an eponymous virtual table over a run file's span packs
// (span_pack.h), with the columns the table of rows had before schema 8 (rank, thread,
// kind, name_id, t_begin_ns, t_end_ns, iteration, bucket, param, bytes, peer, seq,
// ctx_id, msg_id, rref_id, fork_id; NULL where not set), ended_by_error (1: an exception
// cut the span short; schema 8) and the span's id as rowid.
// Constraints on rank, kind, rowid and the times select packs through their index, so
//   SELECT count(*) FROM spans WHERE rank = 1 AND kind = 0
// decodes rank 1's packs that hold iterations only.
//
// RunStoreReader registers it on its connection; the SQLite extension
// (libddpscope_sqlite.so) registers it for the sqlite3 shell and Python:
//   sqlite3 run.ddprun -cmd '.load /usr/lib/libddpscope_sqlite' 'SELECT ...'
// In a file older than schema 8 the real `spans` table is found first.
#pragma once

#include <sqlite3.h>

namespace ddpscope::probes {

// Throws RunStoreError when SQLite refuses the module.
void register_span_table(sqlite3* db);

}  // namespace ddpscope::probes
