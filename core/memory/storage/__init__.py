"""memory.db's tables, in the agent's own SQLite file or in its schema on a PostgreSQL server.

    db = open_database(paths, config.storage)   # a Database, whichever holds the tables
    with db.transaction() as conn:
        conn.execute("INSERT INTO ...", (...))

Both databases run memory.db's SQL (PostgreSQL's spelling is translated), upgraded by the same numbered
migrations, recorded in each database's ``_migrations`` table.
"""

from __future__ import annotations

import importlib
import typing

from core.memory.storage import archived_db, extracted, staged_copy
from core.memory.storage.backend import (
    Checkpoints,
    open_checkpointer,
    open_database,
    require_sqlite,
    schema_name,
)
from core.memory.storage.dialect import POSTGRES, SQLITE, Dialect
from core.memory.storage.engine_lease import AgentLease, hold_lease
from core.memory.storage.extracted import Provenance
from core.memory.storage.facts import CATEGORIES, MIN_REDACTED_CHARS, REDACTED, Fact, FactStore, redact
from core.memory.storage.protocol import Connection, Cursor, Database
from core.memory.storage.read_only import Reader, reading
from core.memory.storage.titles import title_of
from core.memory.storage.sqlite import SqliteDatabase, damage_marker

from core.memory.storage.titles import shown_title

__all__ = [
    "CATEGORIES", "MIN_REDACTED_CHARS", "POSTGRES", "REDACTED", "SQLITE", "AgentLease", "Checkpoints",
    "Connection", "Cursor", "Database", "Dialect", "Fact", "FactStore", "Provenance", "Reader",
    "SqliteDatabase", "archived_db", "damage_marker", "extracted", "hold_lease", "open_checkpointer",
    "open_database", "reading", "redact", "require_sqlite", "schema_name", "shown_title", "snapshot",
    "staged_copy", "title_of", "to_postgres", "to_sqlite",
]

if typing.TYPE_CHECKING:
    from core.memory.storage.postgres.database import snapshot
    from core.memory.storage.postgres.move import to_postgres, to_sqlite

_ON_FIRST_USE = {"to_postgres": "core.memory.storage.postgres.move",
                 "to_sqlite": "core.memory.storage.postgres.move",
                 "snapshot": "core.memory.storage.postgres.database"}
"""The copies between the databases and the inspector's snapshot import psycopg (and its pool), which a
process on SQLite never needs: they load on first use (a type checker sees them as usual)."""


def __getattr__(name: str) -> typing.Any:
    if name in _ON_FIRST_USE:
        return getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
