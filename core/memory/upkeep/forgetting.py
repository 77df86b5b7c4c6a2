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
from core.memory.files.log_format import check_text, utc_timestamp
from core.memory.recall import forget_records
from core.memory.recall.docs import KINDS, Doc, Filters
from core.memory.recall.views import matching
from core.memory.recall.views.folding import fold
from core.memory.recall.views.matching import Match, Matches
from core.memory.recall.views.results import Forgotten
from core.memory.storage.facts import redact
from core.memory.recall.when import time_window
from core.memory.secrets.redaction import forgotten_values, redactor_for
from core.memory.upkeep import now
from core.memory.upkeep.tiers import Tiers

if TYPE_CHECKING:
    from core.memory.storage.protocol import Database

log = logging.getLogger(__name__)

MAX_LIMIT = 10_000
"""The most memories one call of forget_memories takes (its ``limit``)."""
MAX_IDS_PER_ENTRY = 500
"""A FORGET entry names at most this many ids; a larger forget writes several entries."""


def forget(tiers: Tiers, *, query: str | None, before: Any, ids: list[str] | None,
           kind: Any, meaning_above: float | None = None, limit: int, reason: str | None = None,
           dry_run: bool = False) -> Forgotten:
    """Forget what ``ids`` name, or what matches ``query`` and/or happened before ``before``.

    A query takes the memories whose text says every one of its words, or with ``meaning_above`` those
    whose meaning is closer to it than that (see :mod:`core.memory.recall.views.matching`). With ``dry_run``
    nothing is forgotten: what would be is returned, with why.

    Raises:
        ValidationError: nothing to select by, a bad time, kind, threshold or id list; nothing is forgotten.
        ColdStoreError: by meaning, while some memories have no vector yet.
    """
    if ids is None and query is None and before is None:
        raise ValidationError("forget_memories needs a query, a before time or ids")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {shown(limit)}")
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is not None and (not kinds or any(k not in KINDS for k in kinds)):
        raise ValidationError(f"kind must be one of {', '.join(KINDS)} (or a list of them), got "
                              f"{shown(kind)}")
    threshold = matching.check_threshold(meaning_above)
    if threshold is not None and query is None:
        raise ValidationError("meaning_above goes with a query: the memories closer in meaning to it are "
                              "forgotten")
    # "before 30 days ago", "before last week": before the period's first moment, as recall's since reads it
    bound = utc_timestamp(time_window(before, "before", "start")) if before is not None else None
    found = (_by_ids(tiers, ids) if ids is not None
             else _by_query(tiers, query, bound, kinds, threshold, limit))
    targets = list(dict.fromkeys(d.id for m in found.found for d in (m.doc, *m.records)))
    chosen = Forgotten(targets, _matched(tiers, found.found, bound), more=found.total - len(found.found),
                       dry_run=dry_run)
    if dry_run or not targets:
        return chosen
    how = reason or ("ids" if ids is not None else "before" if query is None
                     else "query" if threshold is None else "meaning")
    for start in range(0, len(targets), MAX_IDS_PER_ENTRY):
        part = targets[start : start + MAX_IDS_PER_ENTRY]
        meta = {"ids": part, "by": how, **({"before": bound} if bound else {})}
        entry = tiers.append("FORGET", f"forgot {len(part)} memor{'y' if len(part) == 1 else 'ies'} ({how})",
                             meta)
        forget_records.apply(tiers.db, entry)
    tiers.cold.sync()  # a forgotten store item's other passages go too; vectors are purged
    _hide_in_now(tiers)
    log.info("forgot %d memories (%s)", len(targets), how)
    return chosen


def _by_query(tiers: Tiers, query: Any, bound: str | None, kinds: list[str] | None, threshold: float | None,
              limit: int) -> Matches:
    """What ``query`` names (by words, or closer in meaning than ``threshold``) before ``bound``, with the
    other records of each, or with no query, what happened before ``bound``."""
    tiers.cold.read_own_writes()  # what was just written can be forgotten by its words at once
    if query is None:
        return _before(tiers, bound, kinds, limit)
    text = check_text(query, "query").strip()
    if not text:
        raise ValidationError("query must not be empty: give words the memories to forget say")
    filters = Filters(tuple(kinds) if kinds else None)
    if threshold is None:
        found = matching.by_words(tiers.cold.docs, text, filters, bound, limit)
    else:
        nearest = tiers.cold.similar(text, filters, limit + 1)
        found = matching.by_meaning(tiers.cold.docs, nearest, threshold, filters, bound, limit)
    return matching.with_other_records(tiers.cold.docs, found, filters, bound,
                                       tiers.cold.tuning.fold_within_s)


def _by_ids(tiers: Tiers, ids: Any) -> Matches:
    """The memories ``ids`` name that exist (a note or fact whose doc lags behind counts)."""
    if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) and i for i in ids):
        raise ValidationError("ids must be a list of memory ids as recall returns them")
    tiers.cold.indexer.sync()  # an entry just written may have no doc yet: it is forgotten all the same
    known = tiers.cold.docs.get(ids)
    notes = _existing_notes(tiers.db, ids) | _existing_facts(tiers.db, ids)  # docs may lag behind
    found = [Match(known.get(i) or _unindexed(i),
                   {"id": i}) for i in dict.fromkeys(ids) if i in known or i in notes]
    return Matches(found, len(found))


def _before(tiers: Tiers, bound: str, kinds: list[str] | None, limit: int) -> Matches:
    """The oldest memories (``limit`` at most) that happened before ``bound``."""
    where = ["occurred_at < ?"]
    params: list[Any] = [bound]
    if kinds:
        where.append(f"kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    conn = tiers.db.conn
    total = conn.execute(f"SELECT count(*) FROM recall_docs WHERE {' AND '.join(where)}",
                         params).fetchone()[0]
    rows = conn.execute(f"SELECT id FROM recall_docs WHERE {' AND '.join(where)} ORDER BY rowid LIMIT ?",
                        [*params, limit]).fetchall()
    docs = tiers.cold.docs.get(r[0] for r in rows)
    return Matches([Match(docs[r[0]], {}) for r in rows if r[0] in docs], total)


def _unindexed(memory_id: str) -> Doc:
    """A stand-in doc for a note or fact whose doc is not written yet (its id is all that is shown)."""
    return Doc(id=memory_id, kind=memory_id.partition(":")[0], tier="cold", source=memory_id, text="",
               occurred_at=utc_timestamp(), created_at=utc_timestamp())


def _matched(tiers: Tiers, found: list[Match], bound: str | None) -> list[dict[str, Any]]:
    """What ``found`` holds, as people read it: one entry a thing, the other records of it in ``also``."""
    hidden = tiers.facts.hidden_values()
    entries = []
    for head, *rest in fold([m.doc for m in found], tiers.cold.tuning.fold_within_s, None):
        match = found[head]
        also = [d.id for i in (head,
                               *rest) for d in ((found[i].doc,) if i != head else ()) + found[i].records]
        entries.append({"id": match.doc.id, "kind": match.doc.kind, "content": redact(match.doc.text, hidden),
                        "occurred_at": match.doc.occurred_at,
                        "why": {**match.why, **({"before": bound} if bound else {})}, "also": also})
    return entries


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
