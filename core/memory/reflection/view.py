"""Reflection as a reader sees it from outside the agent's process: how far it is and what it learned.

    with reading(paths, config.storage) as reader:        # a read-only transaction (core.memory.storage)
        found = read_view(reader, last_seq=files.last_seq())
        found.status["lag"]["total"], found.facts[0].sources, found.places["log:12"]

Everything here reads: nothing starts a pass, marks an entry or writes memory.db, so the inspector can show
it while an engine reflects. The status has the shape of ``agentos reflect --status --json`` without what
only the agent's own process knows (whether its thread runs, its last error); a table an older database
does not have yet reads as empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.memory.reflection import state
from core.memory.storage import REDACTED, Reader, extracted

MAX_FACTS = 500
"""The learned facts a view lists (the newest learned first)."""
_TABLES = ("reflect_marks", "reflect_pending", "reflect_quarantine", "reflect_stats", "extracted",
           "extracted_sources", "log_metadata", "fact_contradictions")
_LEARNED_FACTS = """SELECT f.key, f.value, f.category, f.updated_at FROM extracted e
                    JOIN user_facts f ON e.memory_id = 'fact:' || f.key
                    ORDER BY e.extracted_at DESC, f.key LIMIT ?"""
_MARKS = "SELECT source, mark, updated_at FROM reflect_marks"
_MESSAGES = """SELECT m.id, m.seq, c.session_id FROM ctx_messages m JOIN ctx_conversations c
               ON c.id = m.conversation_id WHERE m.id IN ({marks})"""


@dataclass(frozen=True)
class LearnedFact:
    """A fact reflection learned, with where it came from (a secret's value as ``[REDACTED]``)."""

    key: str
    value: str
    category: str
    updated_at: str
    sources: tuple[str, ...]
    """The entries it was read in: ``log:<seq>``, ``msg:<id>``, ``note:<hex>``."""
    model: str
    prompt: str
    extracted_at: str
    contradicted_by: tuple[dict[str, Any], ...] = ()
    """Statements kept beside it that contradict it: ``{id, statement, sources}`` each."""

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "category": self.category,
                "updated_at": self.updated_at,
                "sources": list(self.sources), "model": self.model, "prompt": self.prompt,
                "extracted_at": self.extracted_at, "contradicted_by": list(self.contradicted_by)}


@dataclass(frozen=True)
class ReflectionView:
    """How far reflection is and what it learned, read in one transaction."""

    status: dict[str, Any]
    """``agentos reflect --status --json``'s lag, marks, quarantine, counts per model and learned counts, with
    ``last_pass`` (when a pass last kept what it read: None before the first)."""
    facts: tuple[LearnedFact, ...]
    """The learned facts, newest learned first (at most ``MAX_FACTS``)."""
    places: dict[str, dict[str, Any]]
    """Where each source of those facts (and each quarantined entry) is: ``{seq}`` for a LOG.md entry,
    ``{conversation, message_id, seq}`` for a message (the conversation's session id), ``{note}`` for a note;
    a source that is gone is missing."""

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "facts": [f.as_dict() for f in self.facts], "places": self.places}


def read_view(reader: Reader, last_seq: int, limit: int = MAX_FACTS) -> ReflectionView:
    """Reflection's state in ``reader``'s transaction (see the module docstring); ``last_seq``: LOG.md's
    newest."""
    if not set(_TABLES) <= reader.tables:  # no memory.db yet, or one older than reflection
        return ReflectionView(_empty_status(last_seq), (), {})
    conn = reader.conn
    status = state.status(conn, last_seq)
    marks = [dict(r) for r in conn.execute(_MARKS)]
    stamps = [m["updated_at"] for m in marks] + [m["last_at"] for m in status["models"].values()
                                                 if m["last_at"]]
    status["last_pass"] = max(stamps) if stamps else None
    rows = [dict(r) for r in conn.execute(_LEARNED_FACTS, (limit,))]
    provenance = extracted.of(conn, [f"fact:{r['key']}" for r in rows])
    beside = extracted.contradictions_of(conn, [r["key"] for r in rows])
    facts = []
    for row in rows:
        how = provenance.get(f"fact:{row['key']}")
        if how is None:
            continue
        value = REDACTED if row["category"] == "secret" else row["value"]
        facts.append(LearnedFact(row["key"], value, row["category"], row["updated_at"], how.sources,
                                 how.model,
                                 how.prompt, how.extracted_at, tuple(beside.get(row["key"], ()))))
    sources = {s for f in facts for s in f.sources}
    sources |= {s for f in facts for c in f.contradicted_by for s in c["sources"]}
    sources |= {q["item"] for q in status["quarantined"]}
    return ReflectionView(status, tuple(facts), _places(reader, sources))


def _places(reader: Reader, sources: set[str]) -> dict[str, dict[str, Any]]:
    """Where each source is (see :attr:`ReflectionView.places`)."""
    found: dict[str, dict[str, Any]] = {}
    messages = []
    for source in sources:
        kind, _, key = source.partition(":")
        if kind == "log" and key.isdigit():
            found[source] = {"seq": int(key)}
        elif kind == "note":
            found[source] = {"note": key}
        elif kind == "msg" and key.isdigit():
            messages.append(int(key))
    if messages and {"ctx_messages", "ctx_conversations"} <= reader.tables:
        for start in range(0, len(messages), 500):
            part = messages[start:start + 500]
            for row in reader.conn.execute(_MESSAGES.format(marks=", ".join("?" * len(part))), part):
                found[f"msg:{row[0]}"] = {"conversation": row[2], "message_id": row[0], "seq": row[1]}
    return found


def _empty_status(last_seq: int) -> dict[str, Any]:
    return {"log_mark": 0, "last_seq": last_seq, "lag": {"log": 0, "messages": 0, "notes": 0, "total": 0},
            "quarantined": [], "models": {}, "learned": {"facts": 0, "events": 0, "contradictions": 0},
            "last_pass": None}
