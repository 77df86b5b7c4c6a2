"""A damaged or missing archive is recorded instead of being retried forever."""

import sqlite3

from core.memory.storage.sqlite import execute_script


def apply(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        -- Set when the archive failed its sha256 (moved to memory/quarantine/) or is missing:
        -- its summary is indexed, its entries are not, and indexing does not retry it.
        ALTER TABLE compaction_history ADD COLUMN index_error TEXT;
        """,
    )
