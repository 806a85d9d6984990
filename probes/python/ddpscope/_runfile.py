"""SQL over a run file from Python: spans live in compressed packs (schema 8), which the
SQLite extension libddpscope_sqlite.so shows as the `spans` table (probes/store/span_table.h)."""
import os
import sqlite3

from ._paths import library_path

_EXT_NAME = "libddpscope_sqlite.so"


def _find_extension():
    """$DDPSCOPE_SQLITE_EXT, else beside an installed or built tree."""
    path = library_path(_EXT_NAME, "DDPSCOPE_SQLITE_EXT")
    if path:
        return path
    raise FileNotFoundError(f"{_EXT_NAME} not found beside this package; build ddpscope, or set "
                            "DDPSCOPE_SQLITE_EXT to its path")


def open_run(path, extension=None):
    """A read-only connection to the run file at `path` with its `spans` table."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"run file '{path}' does not exist")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.enable_load_extension(True)
    db.load_extension(extension or _find_extension())
    db.enable_load_extension(False)
    return db
