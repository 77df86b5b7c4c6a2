"""memory.db files as an earlier version of AgentOS left them, for the tests of upgrades."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.memory.storage import sqlite as memory_db


def memory_db_before(path: Path, migration: str) -> sqlite3.Connection:
    """A memory.db at ``path`` with every migration before ``migration`` (e.g. ``"m010"``) applied and
    recorded, as the version before it left one; returns its open connection."""
    conn = memory_db.open_connection(path)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, apply in memory_db.migrations():
        if name < migration:
            with memory_db.transaction(conn):
                apply(conn)
                conn.execute("INSERT INTO _migrations VALUES (?, '2026-01-01T00:00:00.000Z')", (name,))
    return conn
