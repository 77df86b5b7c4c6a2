"""memory.db's tables, in the agent's own SQLite file or in its schema on a PostgreSQL server.

    db = open_database(paths, config.storage)   # a Database, whichever holds the tables
    with db.transaction() as conn:
        conn.execute("INSERT INTO ...", (...))

Both databases run memory.db's SQL (PostgreSQL's spelling is translated), upgraded by the same numbered
migrations, recorded in each database's ``_migrations`` table.
"""

from core.memory.faces import lazy_face
from core.memory.storage.backend import Checkpoints, open_checkpointer, open_database, require_sqlite, schema_name
from core.memory.storage.dialect import POSTGRES, SQLITE, Dialect
from core.memory.storage import extracted
from core.memory.storage.engine_lease import AgentLease, hold_lease
from core.memory.storage.extracted import Provenance
from core.memory.storage.facts import CATEGORIES, MIN_REDACTED_CHARS, REDACTED, Fact, FactStore, redact
from core.memory.storage.protocol import Connection, Cursor, Database
from core.memory.storage.read_only import Reader, reading
from core.memory.storage.titles import shown_title, title_of
from core.memory.storage.sqlite import SqliteDatabase, damage_marker

__all__ = [
    "CATEGORIES", "MIN_REDACTED_CHARS", "POSTGRES", "REDACTED", "SQLITE", "AgentLease", "Checkpoints",
    "Connection", "Cursor", "Database", "Dialect", "Fact", "FactStore", "Provenance", "Reader", "SqliteDatabase",
    "damage_marker", "extracted", "hold_lease", "open_checkpointer", "open_database", "reading", "redact",
    "require_sqlite", "schema_name", "shown_title", "title_of",
]

# The copies between the databases and the inspector's snapshot need psycopg: loaded on first use.
_LATER, _later = lazy_face(__name__, {"to_postgres": "postgres.move", "to_sqlite": "postgres.move",
                                      "snapshot": "postgres.database"})
__all__ += _LATER
__getattr__ = _later
