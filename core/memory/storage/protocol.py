"""What every database of memory.db's tables answers: one agent's SQLite file or its PostgreSQL schema.

Code above storage takes a :class:`Database` and runs memory.db's SQL (SQLite's spelling, translated for
PostgreSQL) through it; where the two differ in meaning it asks the database (``db.kind``, ``db.file``,
``db.dialect``), never its class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ContextManager, Iterable, Literal, Protocol, Sequence

from core.memory.storage.dialect import Dialect


class Cursor(Protocol):
    """The rows of one statement; a row answers ``row[0]`` and ``row["name"]``."""

    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Any: ...


class Connection(Protocol):
    """Runs memory.db's SQL (``?`` placeholders), like ``sqlite3.Connection``."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Cursor: ...


class Database(Protocol):
    """memory.db's tables of one agent, as :class:`~core.memory.storage.sqlite.SqliteDatabase` and
    :class:`~core.memory.storage.postgres.database.PostgresDatabase` keep them."""

    dialect: Dialect
    """The SQL that differs between the two (full-text search, the catalog)."""
    path: Path
    """The agent's memory.db path: messages name it, and files beside it (locks) live in its folder."""

    @property
    def kind(self) -> Literal["sqlite", "postgres"]:
        """Which database holds the tables."""

    @property
    def file(self) -> Path | None:
        """The file holding the tables (memory.db), or None when a server holds them."""

    @property
    def location(self) -> str:
        """Where the tables are, for people: memory.db's path, or the server and schema (never a password)."""

    @property
    def conn(self) -> Connection:
        """This thread's connection: its transaction's, else one that commits each statement."""

    def transaction(self, wait: bool = True) -> ContextManager[Connection]:
        """A write transaction: all of the block is written, or none. ``wait=False``: raise LockTimeoutError
        at once, writing nothing, rather than wait for another thread of this process that writes the same
        tables (where writers of different rows wait for each other: SQLite)."""

    def iterate(self, sql: str, params: Sequence[Any] = ()) -> Iterable[Any]:
        """The rows of a long read, fetched as they are consumed."""

    def serialize(self, conn: Connection, *key: object) -> None:
        """Inside a transaction: wait for every other writer of ``key`` to end."""

    def conversation_lock(self, conv: int, timeout: float) -> ContextManager[Any]:
        """The lock that lets one compaction at a time work on conversation ``conv``."""

    def size_bytes(self) -> int:
        """Bytes the tables take (memory.db's file, or the schema's relations on the server)."""

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database, without waiting for readers (where it is ours to
        do)."""

    def close(self) -> None:
        """Close this object's connections. Safe to call twice."""
