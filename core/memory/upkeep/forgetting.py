"""Forgetting: memories removed from recall and memory.db, with a FORGET entry in LOG.md.

The FORGET entry is a system record (only the system writes one): it names
the ids (never the text), the time bound and why, and it is applied in the
transaction that indexes it in ``log_metadata``, like a FACT entry. Applying is
idempotent, so a crash after the entry is written is finished when the log
index catches up; a memory.db rebuilt from LOG.md replays FORGET and FACT
entries in seq order, and ``rebuild_index`` replays every FORGET entry of
LOG.md and its archives, so nothing forgotten comes back.

What applying does, by source:

- a note is deleted from ``cold_notes`` (it lived only there);
- a fact is deleted unless it was saved again after the FORGET, and so is a
  LangGraph store item (forgetting one of its passages deletes the item);
- a LOG.md entry, an archived entry or summary, a conversation message or
  summary stays in its immutable record (LOG.md and the archives are
  append-only and checksummed; a conversation must stay lossless) and leaves
  recall: its doc and vector are deleted and its id is kept in
  ``recall_forgotten`` so that no re-index brings it back.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING, Any, Iterable

from core.errors import ValidationError
from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import LogEntry, utc_timestamp
from core.memory.recall.docs import KINDS, DocIndex
from core.memory.secrets.redaction import forgotten_values, redactor_for
from core.memory.recall.when import parse_time

if TYPE_CHECKING:
    from core.memory.storage.sqlite import Database
    from core.memory_manager import MemoryManager

log = logging.getLogger(__name__)

MAX_IDS_PER_ENTRY = 500
"""A FORGET entry names at most this many ids; a larger forget writes several entries."""


def forget(manager: "MemoryManager", *, query: str | None, before: Any, ids: list[str] | None,
           kind: Any, min_score: float | None, limit: int, reason: str | None = None,
           dry_run: bool = False) -> list[str]:
    """Forget what ``ids`` name, or what matches ``query`` and/or happened before ``before``.

    With ``dry_run`` nothing is forgotten: the ids that would be are returned.

    Raises:
        ValidationError: nothing to select by, a bad time, kind or id list; nothing is forgotten.
    """
    if ids is None and query is None and before is None:
        raise ValidationError("forget_memories needs a query, a before time or ids")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise ValidationError(f"limit must be an integer from 1 to 10000, got {limit!r}")
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is not None and (not kinds or any(k not in KINDS for k in kinds)):
        raise ValidationError(f"kind must be one of {', '.join(KINDS)} (or a list of them), got {kind!r}")
    bound = utc_timestamp(parse_time(before, "before")) if before is not None else None
    if ids is not None:
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) and i for i in ids):
            raise ValidationError("ids must be a list of memory ids as recall returns them")
        known = manager.cold.docs.get(ids)
        notes = _existing_notes(manager.db, ids) | _existing_facts(manager.db, ids)  # docs may lag behind
        targets = [i for i in dict.fromkeys(ids) if i in known or i in notes]
    elif query is not None:
        found = manager.recall_memory(query, n_results=min(limit, 100), kind=kinds, until=bound,
                                      min_score=min_score, spaces=[])  # a space's memories are forgotten there
        targets = [r["id"] for r in found if bound is None or r["occurred_at"] < bound]
    else:
        where = ["occurred_at < ?"]
        params: list[Any] = [bound]
        if kinds:
            where.append(f"kind IN ({', '.join('?' * len(kinds))})")
            params.extend(kinds)
        rows = manager.db.conn.execute(
            f"SELECT id FROM recall_docs WHERE {' AND '.join(where)} ORDER BY rowid LIMIT ?", [*params, limit]
        ).fetchall()
        targets = [r[0] for r in rows]
    if dry_run or not targets:
        return targets
    how = reason or ("ids" if ids is not None else "query" if query is not None else "before")
    for start in range(0, len(targets), MAX_IDS_PER_ENTRY):
        part = targets[start : start + MAX_IDS_PER_ENTRY]
        meta = {"ids": part, "by": how, **({"before": bound} if bound else {})}
        entry = manager.log_forget(f"forgot {len(part)} memor{'y' if len(part) == 1 else 'ies'} ({how})", meta)
        apply(manager.db, entry)
    manager.cold.sync()  # a forgotten store item's other passages go too; vectors are purged
    _hide_in_now(manager)
    log.info("forgot %d memories (%s)", len(targets), how)
    return targets


def _hide_in_now(manager: "MemoryManager") -> None:
    """Rewrite NOW.md (every field redacted) if it holds a value just forgotten: every prompt shows NOW.md."""
    hidden = redactor_for(forgotten_values(manager.db))
    try:
        text = manager.paths.now_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    if hidden.holds(text):
        manager.update_now()


def _existing_notes(db: "Database", ids: Iterable[str]) -> set[str]:
    wanted = [i.partition(":")[2] for i in ids if i.startswith("note:")]
    if not wanted:
        return set()
    rows = db.conn.execute(f"SELECT id FROM cold_notes WHERE id IN ({', '.join('?' * len(wanted))})", wanted)
    return {f"note:{r[0]}" for r in rows}


def _existing_facts(db: "Database", ids: Iterable[str]) -> set[str]:
    wanted = [i.partition(":")[2] for i in ids if i.startswith("fact:")]
    if not wanted:
        return set()
    rows = db.conn.execute(f"SELECT key FROM user_facts WHERE key IN ({', '.join('?' * len(wanted))})"
                           " AND category <> 'secret'", wanted)
    return {f"fact:{r[0]}" for r in rows}


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


def apply(db: "Database", entry: LogEntry) -> int:
    """Carry out one FORGET entry in its own transaction (idempotent); return how many memories it removed now."""
    with db.transaction() as conn:
        return apply_entry(conn, entry)


def apply_entry(conn: sqlite3.Connection, entry: LogEntry) -> int:
    """Carry out one FORGET entry in the caller's transaction (idempotent; how the log index replays it,
    in seq order with the FACT entries); return how many memories it removed now."""
    ids = [i for i in entry.metadata.get("ids", ()) if isinstance(i, str)]
    removed = 0
    for memory_id in ids:
        source, _, key = memory_id.partition(":")
        if source == "note":
            removed += conn.execute("DELETE FROM cold_notes WHERE id = ?", (key,)).rowcount
            conn.execute("DELETE FROM cold_pending WHERE item = ?", (memory_id,))
        elif row := _rewritable(source, key):
            # A fact or store item saved again after it was forgotten is a new memory: it stays.
            table, column, value = row
            if source == "fact":
                _keep_value(conn, memory_id, key, entry)
            removed += conn.execute(f"DELETE FROM {table} WHERE {column} = ? AND updated_at <= ?",
                                    (value, entry.ts)).rowcount
            if conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (value,)).fetchone():
                continue
        if _rewritable(source, key) is None:
            conn.execute("INSERT OR IGNORE INTO recall_forgotten (id, forgotten_at) VALUES (?, ?)",
                         (memory_id, entry.ts))
        removed += DocIndex.delete(conn, [memory_id])
    return removed


def _keep_value(conn: sqlite3.Connection, memory_id: str, key: str, entry: LogEntry) -> None:
    """Record what a fact forgotten by ``entry`` held, so that nothing derived later shows it (a secret's
    value goes with its row: it was never shown)."""
    row = conn.execute("SELECT value FROM user_facts WHERE key = ? AND updated_at <= ?"
                       " AND category <> 'secret'", (key, entry.ts)).fetchone()
    known = conn.execute("SELECT 1 FROM forgotten_values WHERE memory_id = ? AND forget_seq = ?",
                         (memory_id, entry.seq)).fetchone()
    if row is not None and known is None:
        conn.execute("INSERT INTO forgotten_values (memory_id, forget_seq, value, forgotten_at)"
                     " VALUES (?, ?, ?, ?)", (memory_id, entry.seq, row[0], entry.ts))


def replay(db: "Database", sources: Iterable[tuple[object, bytes]]) -> int:
    """Apply every FORGET entry found in ``(where, LOG.md-format bytes)`` sources; return how many."""
    count = 0
    for where, data in sources:
        for entry in scan_bytes(data, where).entries:
            if entry.type == "FORGET":
                apply(db, entry)
                count += 1
    return count


def expired_note_ids(db: "Database") -> list[str]:
    """Notes whose ``expires_at`` has passed."""
    rows = db.conn.execute("SELECT id FROM cold_notes WHERE expires_at IS NOT NULL AND expires_at <= ?",
                           (utc_timestamp(),)).fetchall()
    return [f"note:{r[0]}" for r in rows]
