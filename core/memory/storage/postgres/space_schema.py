"""A memory space's index on PostgreSQL: the schema ``<storage.schema_prefix>space$<name>``, its migrations,
and the database object that sets it up.

The schema holds what ``spaces/<name>/index.db`` holds with SQLite: one row an indexed journal entry, its
words in a stored ``tsvector`` (the entry's text weighted A, its author B, stemmed by the 'english'
configuration, as an agent's ``recall_docs``) under a GIN index, its vector, and how far the journal is
indexed. ``$`` is in no agent name, so no agent's schema can be a space's. It is set up whole and migrated
once a process, under the schema's setup lock, like an agent's (:func:`migrate.ensure_space`), and records
the one space folder whose journal it indexes (``_space_folder``).
"""

from __future__ import annotations

from core.config import StorageConfig
from core.memory.storage.backend import schema_name
from core.memory.storage.postgres import migrate
from core.memory.storage.postgres.database import PostgresDatabase

SPACE_MARK = "space$"
"""Between the prefix and the space's name: a character no agent name holds."""

MIGRATIONS: list[tuple[str, str]] = [("s001_space_index", """
CREATE TABLE entries (
    seq BIGINT PRIMARY KEY,           -- the entry's seq in the space's journal
    author TEXT NOT NULL,
    ts TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL,
    vector BYTEA,                     -- float32s of the home's cold.embedder, NULL until computed
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', left(content, 200000)), 'A')
        || setweight(to_tsvector('english', left(author, 200000)), 'B')) STORED,
    tokens INTEGER GENERATED ALWAYS AS (cardinality(regexp_split_to_array(
        btrim(regexp_replace(left(content, 200000) || ' ' || author, '[^[:alnum:]]+', ' ', 'g')), ' ')))
            STORED
);
CREATE INDEX entries_search ON entries USING gin (search);
CREATE INDEX entries_pending ON entries (seq) WHERE vector IS NULL;
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
""")]
"""The schema's numbered migrations, in order, recorded in its ``_migrations``."""


def space_schema(name: str, config: StorageConfig) -> str:
    """The schema of the space ``name``'s index (shortened with a hash past PostgreSQL's 63 characters)."""
    return schema_name(SPACE_MARK + name, config)


class SpaceDatabase(PostgresDatabase):
    """The schema of one space's index, used like an agent's :class:`PostgresDatabase`."""

    def set_up(self) -> None:
        migrate.ensure_space(self.dsn, self.schema, self.config, MIGRATIONS)
