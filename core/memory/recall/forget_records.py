"""Applying a FORGET entry to memory.db: what the log index does as it indexes one (see
:mod:`core.memory.upkeep.forgetting` for what forgetting is and who writes the entry).

Applying is idempotent, so a crash after the entry is written is finished when the
log index catches up, and a memory.db rebuilt from LOG.md replays it in seq order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import LogEntry
from core.memory.recall.docs import DocIndex
from core.memory.storage import extracted, facts
from core.memory.storage.protocol import Connection

if TYPE_CHECKING:
    from core.memory.storage.protocol import Database


def _rewritable(source: str, key: str) -> tuple[str, str, str] | None:
    """``(table, column, value)`` of the row behind a fact's or store item's id, else None.

    These ids can be written again after a forget (a fact's key, a store item's row id): the row
    is deleted only if not written since, and the id is never listed in ``recall_forgotten``.
    """
    if source == "fact":
        return "user_facts", "key", key
    if source == "item":
        return "store_items", "id", key.partition(":")[0]
    return None


VERSION_MARK = "#version="
"""In ``forgotten_values``, ``fact:<key>#version=<id>`` is an earlier value of the fact, forgotten with it or
alone."""


def apply(db: "Database", entry: LogEntry) -> int:
    """Carry out one FORGET entry in its own transaction (idempotent); return how many memories it removed
    now."""
    with db.transaction() as conn:
        return apply_entry(conn, entry)


def apply_entry(conn: Connection, entry: LogEntry) -> int:
    """Carry out one FORGET entry in the caller's transaction (idempotent; how the log index replays it,
    in seq order with the FACT entries); return how many memories it removed now."""
    ids = [i for i in entry.metadata.get("ids", ()) if isinstance(i, str)]
    removed = 0
    for memory_id in ids:
        source, _, key = memory_id.partition(":")
        if source == "note":
            removed += conn.execute("DELETE FROM cold_notes WHERE id = ?", (key,)).rowcount
            conn.execute("DELETE FROM cold_pending WHERE item = ?", (memory_id,))
        elif source == "fact_version" and key.isdigit():
            removed += _forget_versions(conn, "id = ?", int(key), entry)
        elif row := _rewritable(source, key):
            # A fact or store item saved again after it was forgotten is a new memory: it stays.
            table, column, value = row
            if source == "fact":
                _keep_value(conn, memory_id, key, entry)
                _forget_versions(conn, "key = ?", key, entry)
            removed += conn.execute(f"DELETE FROM {table} WHERE {column} = ? AND updated_at <= ?",
                                    (value, entry.ts)).rowcount
            if conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (value,)).fetchone():
                continue
        elif source in ("event", "contradiction"):  # learned from entries: forgotten alone, its entries stay
            extracted.delete_memory(conn, memory_id)
        if source == "fact" and not conn.execute("SELECT 1 FROM user_facts WHERE key = ?", (key,)).fetchone():
            extracted.clear(conn, memory_id)
        if _rewritable(source, key) is None:
            conn.execute("INSERT OR IGNORE INTO recall_forgotten (id, forgotten_at) VALUES (?, ?)",
                         (memory_id, entry.ts))
        removed += DocIndex.delete(conn, [memory_id])
    return removed + _forget_learned(conn, ids)


def _forget_learned(conn: Connection, ids: list[str]) -> int:
    """Forget what reflection learned only from the entries ``ids`` names (see
    :func:`core.memory.storage.extracted.forget_sources`); return how many learned memories went."""
    removed = 0
    for memory_id in extracted.forget_sources(conn, ids):
        kind, _, key = memory_id.partition(":")
        if kind == "fact":
            removed += facts.delete(conn, key)  # its versions' docs follow through the queue
        elif kind == "fact_version":
            removed += DocIndex.delete(conn, [memory_id])
        else:
            extracted.delete_memory(conn, memory_id)
            removed += 1
    return removed


def _keep_value(conn: Connection, memory_id: str, key: str, entry: LogEntry) -> None:
    """Record what a fact forgotten by ``entry`` held, so that nothing derived later shows it (a secret's
    value goes with its row: it was never shown)."""
    row = conn.execute("SELECT value FROM user_facts WHERE key = ? AND updated_at <= ?"
                       " AND category <> 'secret'", (key, entry.ts)).fetchone()
    known = conn.execute("SELECT 1 FROM forgotten_values WHERE memory_id = ? AND forget_seq = ?",
                         (memory_id, entry.seq)).fetchone()
    if row is not None and known is None:
        conn.execute("INSERT INTO forgotten_values (memory_id, forget_seq, value, forgotten_at)"
                     " VALUES (?, ?, ?, ?)", (memory_id, entry.seq, row[0], entry.ts))


def _forget_versions(conn: Connection, where: str, value: str | int, entry: LogEntry) -> int:
    """Delete the earlier values of a fact (``where``: ``key = ?`` all of them, ``id = ?`` one) saved before
    ``entry`` with their docs, recording what they held as :func:`_keep_value` does; return how many."""
    rows = conn.execute(f"SELECT id, key, value FROM fact_versions WHERE {where} AND saved_at <= ?",
                        (value, entry.ts)).fetchall()
    for row in rows:
        if row["value"] is not None:  # kept as fact:<key>#version=<id>: the key, for the purge's report
            conn.execute("INSERT OR IGNORE INTO forgotten_values (memory_id, forget_seq, value, forgotten_at)"
                         " VALUES (?, ?, ?, ?)", (f"fact:{row['key']}{VERSION_MARK}{row['id']}", entry.seq,
                                                  row["value"], entry.ts))
        conn.execute("DELETE FROM fact_versions WHERE id = ?", (row["id"],))
    DocIndex.delete(conn, [f"fact_version:{row['id']}" for row in rows])
    return len(rows)


def replay(db: "Database", sources: Iterable[tuple[object, bytes]]) -> int:
    """Apply every FORGET entry found in ``(where, LOG.md-format bytes)`` sources; return how many."""
    count = 0
    for where, data in sources:
        for entry in scan_bytes(data, where).entries:
            if entry.type == "FORGET":
                apply(db, entry)
                count += 1
    return count
