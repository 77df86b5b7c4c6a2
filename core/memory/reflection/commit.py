"""Keeping what a batch taught, in one transaction with the marks that say it was read.

Facts go through ``save_fact``'s path (:meth:`core.memory.upkeep.tiers.Tiers.record_facts`): checked and
redacted as ``save_fact`` does (:func:`core.memory.storage.facts.prepare`), each with its FACT entry in
LOG.md (with its provenance), a new value keeping the one it replaces as a version. In the same
transaction: the events and contradictions, the recall keys of the entries they came from, the
quarantine, LOG.md's mark, the queue rows of the messages and notes read, and the counts. A crash before
the commit keeps nothing of the batch but the FACT entries already on disk, which the log index applies
(with their provenance) when it catches up; the batch is read again and its facts, the same, change
nothing more.

A fact saved explicitly wins (see :func:`decide`): a learned value never replaces it, and one that
disagrees with it is kept beside it as a contradiction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from core.errors import ValidationError
from core.durable import fault_points
from core.memory.files.log_format import utc_timestamp
from core.memory.recall.docs import DocIndex
from core.memory.reflection import state
from core.memory.reflection.check import explicit_twin
from core.memory.reflection.extract import Done, Tally
from core.memory.storage import extracted, facts
from core.memory.storage.extracted import Provenance
from core.memory.upkeep.tiers import FactChange, Tiers


@dataclass
class Kept:
    """What one commit kept."""

    facts: int = 0
    events: int = 0
    contradictions: int = 0
    agreed: int = 0
    """Learned values an explicit fact already holds."""
    secrets: bool = False
    """A secret was saved: the scrub must run."""
    keys: list[str] = field(default_factory=list)
    """The keys of the facts saved or changed."""

    @property
    def learned(self) -> int:
        return self.facts + self.events + self.contradictions


def commit(tiers: Tiers, dones: Sequence[Done], *, model: str, prompt: str, tally: Tally,
           retry_after_s: float,
           log_upto: int | None = None, dequeued: Sequence[str] = (), released: Sequence[str] = ()) -> Kept:
    """Keep what ``dones`` learned, quarantine what they could not, and move the marks, in one transaction.

    ``log_upto``: LOG.md's new mark; ``dequeued``: the queued messages and notes now read or skipped;
    ``released``: quarantined entries tried again (those that succeeded leave the quarantine).
    """
    kept = Kept()
    now = utc_timestamp()
    learned = [(d, f) for d in dones if d.checked is not None for f in d.checked.facts]
    learned.sort(key=lambda pair: _position(pair[0], pair[1].sources))  # the newest value is saved last
    beside: list[tuple[str, str, Provenance]] = []
    changes = []
    for _done, fact in learned:
        provenance = Provenance(fact.sources, model, prompt, now)
        try:
            key, value, category = facts.prepare(tiers.db, fact.key, fact.value, fact.category)
        except ValidationError:
            tally.rejected += 1
            continue
        changes.append(FactChange(key, value, category,
                                  _decide(key, value, category, provenance, beside, kept),
                                  learned=provenance))
    fault_points.reach("reflect.commit")

    def then(conn: Any) -> None:
        sources: list[str] = []
        for done in dones:
            checked = done.checked
            if checked is None:
                for item_id in dict.fromkeys(i.id for i in done.items):
                    state.quarantine(conn, item_id, done.error, model, retry_after_s)
                continue
            state.release(conn, [i.id for i in done.items if i.id in released])
            for event in checked.events:
                extracted.add_event(conn, event.what, event.occurred_at, event.basis,
                                    Provenance(event.sources, model, prompt, now))
                kept.events += 1
                sources += event.sources
            for item in checked.contradictions:
                extracted.add_contradiction(conn, item.key, item.statement,
                                            Provenance(item.sources, model, prompt, now))
                kept.contradictions += 1
                sources += item.sources
        for key, value, provenance in beside:
            extracted.add_contradiction(conn, key, value, provenance)
            kept.contradictions += 1
        sources += [s for _, fact in learned for s in fact.sources]
        DocIndex.refresh_keys(conn, list(dict.fromkeys(sources)))
        if log_upto is not None:
            state.set_log_mark(conn, log_upto)
        state.dequeue(conn, dequeued)
        entries = len({i.id for d in dones for i in d.items})
        state.count(conn, model, tally, entries, kept.learned)

    tiers.record_facts(changes, then)
    return kept


def _position(done: Done, sources: Sequence[str]) -> int:
    """Where a learned fact's newest source stands among its batch's items."""
    ids = [item.id for item in done.items]
    return max((ids.index(s) for s in sources if s in ids), default=0)


def _decide(key: str, value: str, category: str, provenance: Provenance,
            beside: list[tuple[str, str, Provenance]], kept: Kept):
    """The change of one learned fact, decided in the transaction (see :func:`decide`)."""
    def change(conn: Any) -> Any:
        return decide(conn, key, value, category, provenance, beside, kept)
    return change


def decide(conn: Any, key: str, value: str, category: str, provenance: Provenance,
           beside: list[tuple[str, str, Provenance]], kept: Kept) -> Any:
    """Save a learned fact, unless an explicit one holds its slot (under its key, or the key an explicit save
    of the same slot uses: ``deploy_target`` for ``user.deploy_target``): then a different value is kept
    beside it as a contradiction. The same value again only gains the new sources. False: nothing saved."""
    for slot in (key, explicit_twin(key)):
        if slot is None:
            continue
        row = conn.execute("SELECT value FROM user_facts WHERE key = ?", (slot,)).fetchone()
        if row is not None and not extracted.of(conn, [f"fact:{slot}"]):
            if row[0] == value:
                kept.agreed += 1
            else:
                beside.append((slot, value, provenance))
            return False
    row = conn.execute("SELECT value, category FROM user_facts WHERE key = ?", (key,)).fetchone()
    if row is not None and row[0] == value and row[1] == category:
        extracted.record(conn, f"fact:{key}", provenance, merge=True)
        return False
    kept.facts += 1
    kept.keys.append(key)
    kept.secrets = kept.secrets or category == "secret"
    return facts.upsert(conn, key, value, category, provenance.extracted_at, learned=provenance)
