"""An index of LOG.md entries by type, so pages of one type, run markers and type counts need no scan.

``id`` follows ``entry_type`` so entries of a type come in seq order (keyset pages), and
``run_id`` is covered so the runs without an end are found from the index alone.
"""

import sqlite3


def apply(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE INDEX IF NOT EXISTS log_metadata_type ON log_metadata (entry_type, id, run_id)")
