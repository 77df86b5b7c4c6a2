"""A space's index in its PostgreSQL schema (:mod:`core.memory.storage.postgres.space_schema`), for homes
whose agents keep their memory on a server.

The same index as ``index.db`` (:class:`core.memory.spaces.index.SpaceIndex`: the same statements, the same
catching up with the journal, the same scores), with what differs: writers on every host serialise on an
advisory lock of the schema inside their transaction (SQLite's ``BEGIN IMMEDIATE`` did it for one host),
words are searched in the stored ``tsvector`` with FTS5's BM25 computed in SQL (as an agent's recall does on
PostgreSQL, :mod:`core.memory.storage.words`), and a purge vacuums the table and rebuilds its full-text index.
The schema records the one space folder whose journal it indexes: a space of the same name in another agents
home is refused, as a second folder of an agent is.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from core.errors import StorageError
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import LogEntry, utc_timestamp
from core.memory.recall.docs import STOP_WORDS
from core.memory.spaces.index import SpaceIndex, _apply, _window
from core.memory.storage.words import idf, pg_ranked_sql

_COUNTS = """SELECT q.term, (SELECT count(*) FROM entries WHERE search @@ q.query)
FROM unnest(?::text[], ?::tsquery[]) AS q(term, query)"""

_RANKED = pg_ranked_sql("entries", "e", "seq", "e.seq", "(SELECT coalesce(avg(tokens), 1) FROM entries)")


class PostgresSpaceIndex(SpaceIndex):
    """The index of one space in the schema of ``db`` (a :class:`SpaceDatabase`)."""

    TABLES = ("entries", "state")

    def __init__(self, db: Any, journal: LogFile, space: str, folder: Path) -> None:
        """``folder`` is the space's folder, whose ``storage.id`` the schema records as its owner."""
        self.db, self.journal, self.space, self.path = db, journal, space, Path(db.schema)
        self.repairs: list[str] = []
        claim(db, folder, space)

    def _writing(self):
        return self.db.transaction()

    def _serialize(self, conn: Any) -> None:
        self.db.serialize(conn, "index")

    def _apply(self, conn: Any, entry: LogEntry) -> None:
        _apply(conn, entry, fts=False)

    @property
    def conn(self) -> Any:  # type: ignore[override]
        return self.db.conn  # this thread's transaction's connection, else one statement at a time

    def words(self, query: str, depth: int, since: str | None, until: str | None) -> list[tuple[int, float]]:
        """The best word matches as ``(seq, strength)``, strength in [0, 1] as with SQLite."""
        conn = self.db.conn
        terms = [row[0]
                 for row in conn.execute("SELECT lexeme FROM unnest(to_tsvector('english', left(?, 200000)))",
                                                (query,)) if row[0] not in STOP_WORDS]
        if not terms:
            return []
        counts = dict(conn.execute(_COUNTS, (terms, [_lexeme(t) for t in terms])).fetchall())
        total = max(1, self.count(), *counts.values())  # a publisher may have committed between the two reads
        weights = {t: idf(n, total) for t, n in counts.items() if n}
        if not weights:
            return []
        ceiling = sum(weights.values()) or 1.0
        where, params = _window(since, until)
        rows = conn.execute(_RANKED.format(where=where),
                            [list(weights), list(weights.values()), " | ".join(_lexeme(t) for t in weights),
                             *params, depth])
        return [(int(seq), min(1.0, float(score) / ceiling)) for seq, score in rows.fetchall()]

    def scrub(self) -> bool:
        """Deleted rows vacuumed out of the table, the full-text index rebuilt (a vacuumed GIN index keeps the
        words of deleted rows as keys). What stays beyond a client's reach (freed space in the table's files,
        the server's WAL) is as for an agent's scrub (docs/scaling.md, "Secrets")."""
        from core.memory.storage.postgres.scrub import clean

        clean(self.db, ["entries"])
        return True

    def close(self) -> None:
        self.db.close()


def claim(db: Any, folder: Path, space: str) -> None:
    """Record ``folder`` as the owner of the schema on first use; refuse another folder after that.

    Raises:
        StorageError: the schema indexes the journal of a space folder elsewhere (another agents home).
    """
    from core.memory.storage.backend import folder_id

    mine = folder_id(folder / "storage.id")
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO _space_folder (singleton, folder_id, host, path, claimed_at)"
                     " VALUES (1, ?, ?, ?, ?)", (mine, socket.gethostname(), str(folder), utc_timestamp()))
        owner = conn.execute("SELECT * FROM _space_folder").fetchone()
    if owner["folder_id"] != mine:
        raise StorageError(
            f"schema {db.schema} indexes the space {space} of the folder {owner['path']} on host "
            f"{owner['host']} (since {owner['claimed_at']}), not {folder}: publish from an agents home that "
            "mounts that folder, or give this deployment its own storage.schema_prefix")


def _lexeme(term: str) -> str:
    """``term`` as a tsquery of that one lexeme, taken as it is."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"
