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
from typing import TYPE_CHECKING, Any, Iterable

from core.errors import ValidationError, shown
from core.memory.files.log_format import utc_timestamp
from core.memory.recall import forget_records
from core.memory.recall.docs import KINDS
from core.memory.recall.when import parse_time
from core.memory.secrets.redaction import forgotten_values, redactor_for
from core.memory.upkeep import now
from core.memory.upkeep.tiers import Tiers

if TYPE_CHECKING:
    from core.memory.storage.sqlite import Database

log = logging.getLogger(__name__)

MAX_IDS_PER_ENTRY = 500
"""A FORGET entry names at most this many ids; a larger forget writes several entries."""


def forget(tiers: Tiers, *, query: str | None, before: Any, ids: list[str] | None,
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
        raise ValidationError(f"limit must be an integer from 1 to 10000, got {shown(limit)}")
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is not None and (not kinds or any(k not in KINDS for k in kinds)):
        raise ValidationError(f"kind must be one of {', '.join(KINDS)} (or a list of them), got {shown(kind)}")
    bound = utc_timestamp(parse_time(before, "before")) if before is not None else None
    if ids is not None:
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) and i for i in ids):
            raise ValidationError("ids must be a list of memory ids as recall returns them")
        known = tiers.cold.docs.get(ids)
        notes = _existing_notes(tiers.db, ids) | _existing_facts(tiers.db, ids)  # docs may lag behind
        targets = [i for i in dict.fromkeys(ids) if i in known or i in notes]
    elif query is not None:
        found = tiers.cold.recall(query, min(limit, 100), kinds, None, bound, tiers.facts.hidden_values(),
                                  min_score=min_score, strict=True)
        targets = [r["id"] for r in found if bound is None or r["occurred_at"] < bound]
    else:
        where = ["occurred_at < ?"]
        params: list[Any] = [bound]
        if kinds:
            where.append(f"kind IN ({', '.join('?' * len(kinds))})")
            params.extend(kinds)
        rows = tiers.db.conn.execute(
            f"SELECT id FROM recall_docs WHERE {' AND '.join(where)} ORDER BY rowid LIMIT ?", [*params, limit]
        ).fetchall()
        targets = [r[0] for r in rows]
    if dry_run or not targets:
        return targets
    how = reason or ("ids" if ids is not None else "query" if query is not None else "before")
    for start in range(0, len(targets), MAX_IDS_PER_ENTRY):
        part = targets[start : start + MAX_IDS_PER_ENTRY]
        meta = {"ids": part, "by": how, **({"before": bound} if bound else {})}
        entry = tiers.append("FORGET", f"forgot {len(part)} memor{'y' if len(part) == 1 else 'ies'} ({how})", meta)
        forget_records.apply(tiers.db, entry)
    tiers.cold.sync()  # a forgotten store item's other passages go too; vectors are purged
    _hide_in_now(tiers)
    log.info("forgot %d memories (%s)", len(targets), how)
    return targets


def _hide_in_now(tiers: Tiers) -> None:
    """Rewrite NOW.md (every field redacted) if it holds a value just forgotten: every prompt shows NOW.md."""
    hidden = redactor_for(forgotten_values(tiers.db))
    try:
        text = tiers.paths.now_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    if hidden.holds(text):
        now.update(tiers)


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


def expired_note_ids(db: "Database") -> list[str]:
    """Notes whose ``expires_at`` has passed."""
    rows = db.conn.execute("SELECT id FROM cold_notes WHERE expires_at IS NOT NULL AND expires_at <= ?",
                           (utc_timestamp(),)).fetchall()
    return [f"note:{r[0]}" for r in rows]
