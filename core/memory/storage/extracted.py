"""What a model learned from an agent's memory, each memory traced to the entries it came from.

Reflection (:mod:`core.memory.reflection`) learns facts, events and contradictions; this module keeps
where each came from, in the tables of ``m012_reflection``: a learned memory (``fact:<key>``,
``event:<id>``, ``contradiction:<id>``) has one ``extracted`` row (model, prompt version, when) and a
link to each entry it was read in (``log:<seq>``, ``msg:<id>``, ``note:<hex>``). A fact without one was
saved explicitly, and an explicit save of a learned fact makes it explicit
(:func:`core.memory.storage.facts.upsert`).

Learned memories are derived data: forgetting an entry forgets what was learned only from it
(:func:`forget_sources`), and :func:`learned_ids` lists what a rebuild replaces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

SOURCE_PREFIXES = ("log:", "msg:", "note:")
"""What a learned memory can cite: a LOG.md entry, a conversation message, a stored note."""


@dataclass(frozen=True)
class Provenance:
    """Where a learned memory came from."""

    sources: tuple[str, ...]
    """The entries it was read in: ``log:<seq>``, ``msg:<id>``, ``note:<hex>``."""
    model: str
    """The model that extracted it (``offline-rules`` for the offline backend's reader)."""
    prompt: str
    """The version of the prompt that asked for it."""
    extracted_at: str

    def as_dict(self) -> dict[str, Any]:
        return {"sources": list(self.sources), "model": self.model, "prompt": self.prompt,
                "extracted_at": self.extracted_at}

    @classmethod
    def from_dict(cls, data: Any) -> "Provenance | None":
        """The provenance a FACT entry or a version recorded; None when it is not one."""
        if not isinstance(data, dict):
            return None
        sources = data.get("sources")
        if not isinstance(sources, list) or not all(isinstance(s, str) and s.startswith(SOURCE_PREFIXES)
                                                    for s in sources):
            return None
        fields = [data.get(k) for k in ("model", "prompt", "extracted_at")]
        if not all(isinstance(f, str) for f in fields):
            return None
        return cls(tuple(sources), *fields)  # type: ignore[arg-type]


def record(conn: Any, memory_id: str, provenance: Provenance, *, merge: bool = False) -> None:
    """Record ``memory_id`` as learned, with its sources (``merge``: added to those it has)."""
    conn.execute("INSERT INTO extracted (memory_id, model, prompt, extracted_at) VALUES (?, ?, ?, ?) "
                 "ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, prompt = excluded.prompt, "
                 "extracted_at = excluded.extracted_at",
                 (memory_id, provenance.model, provenance.prompt, provenance.extracted_at))
    if not merge:
        conn.execute("DELETE FROM extracted_sources WHERE memory_id = ?", (memory_id,))
    conn.executemany("INSERT OR IGNORE INTO extracted_sources (memory_id, source_id) VALUES (?, ?)",
                     [(memory_id, source) for source in dict.fromkeys(provenance.sources)])


def clear(conn: Any, memory_id: str) -> None:
    """``memory_id`` is no longer a learned memory (saved explicitly, or deleted)."""
    conn.execute("DELETE FROM extracted_sources WHERE memory_id = ?", (memory_id,))
    conn.execute("DELETE FROM extracted WHERE memory_id = ?", (memory_id,))


def of(conn: Any, memory_ids: Iterable[str]) -> dict[str, Provenance]:
    """The provenance of each of ``memory_ids`` that was learned."""
    found: dict[str, Provenance] = {}
    wanted = list(dict.fromkeys(memory_ids))
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        marks = ", ".join("?" * len(part))
        rows = conn.execute("SELECT memory_id, model, prompt, extracted_at FROM extracted "
                            f"WHERE memory_id IN ({marks})", part).fetchall()
        links: dict[str, list[str]] = {}
        for memory_id, source in conn.execute(
                f"SELECT memory_id, source_id FROM extracted_sources WHERE memory_id IN ({marks}) "
                "ORDER BY memory_id, source_id", part):
            links.setdefault(memory_id, []).append(source)
        for row in rows:
            sources = tuple(sorted(links.get(row[0], ()), key=_source_order))
            found[row[0]] = Provenance(sources, row[1], row[2], row[3])
    return found


def _source_order(source: str) -> tuple[str, int, str]:
    kind, _, key = source.partition(":")
    return (kind, int(key) if key.isdigit() else 0, key)


def provenance_json(provenance: Provenance | None) -> str | None:
    """How ``fact_versions.sources`` keeps a learned value's provenance (None: it was saved explicitly)."""
    return None if provenance is None else json.dumps(provenance.as_dict(), sort_keys=True)


def learned_ids(conn: Any, prefix: str = "", limit: int = -1) -> list[str]:
    """The ids of the learned memories (those starting with ``prefix``, at most ``limit``)."""
    return [row[0] for row in conn.execute("SELECT memory_id FROM extracted WHERE memory_id LIKE ? "
                                           "ORDER BY memory_id LIMIT ?", (f"{prefix}%", limit))]


# -- events and contradictions ------------------------------------------------------------------------

def add_event(conn: Any, what: str, occurred_at: str, basis: str, provenance: Provenance) -> str:
    """Keep an event (the same event on the same day again gains the new sources); return its id
    ``event:<n>``."""
    row = conn.execute("SELECT id FROM extracted_events WHERE what = ? AND occurred_at = ?",
                       (what, occurred_at)).fetchone()
    if row is None:
        row = conn.execute("INSERT INTO extracted_events (what, occurred_at, basis) VALUES (?, ?, ?) "
                           "RETURNING id",
                           (what, occurred_at, basis)).fetchone()
    memory_id = f"event:{row[0]}"
    record(conn, memory_id, provenance, merge=True)
    return memory_id


def add_contradiction(conn: Any, key: str, statement: str, provenance: Provenance) -> str:
    """Keep a statement that contradicts fact ``key`` beside it; return its id ``contradiction:<n>``."""
    row = conn.execute("SELECT id FROM fact_contradictions WHERE key = ? AND statement = ?",
                       (key, statement)).fetchone()
    if row is None:
        row = conn.execute("INSERT INTO fact_contradictions (key, statement) VALUES (?, ?) RETURNING id",
                           (key, statement)).fetchone()
    memory_id = f"contradiction:{row[0]}"
    record(conn, memory_id, provenance, merge=True)
    return memory_id


def event_row(conn: Any, event_id: str) -> Any:
    """The ``extracted_events`` row of ``event:<n>`` (None once it is gone)."""
    number = event_id.partition(":")[2]
    if not number.isdigit():
        return None
    return conn.execute("SELECT * FROM extracted_events WHERE id = ?", (int(number),)).fetchone()


def contradictions_of(conn: Any, keys: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The statements kept beside each of ``keys``: ``{id, statement, sources}`` each, oldest first."""
    found: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(keys), 500):
        part = list(keys[start:start + 500])
        rows = conn.execute("SELECT id, key, statement FROM fact_contradictions WHERE key IN "
                            f"({', '.join('?' * len(part))}) ORDER BY id", part).fetchall()
        sources = of(conn, [f"contradiction:{r[0]}" for r in rows])
        for row in rows:
            memory_id = f"contradiction:{row[0]}"
            found.setdefault(row[1], []).append({"id": memory_id, "statement": row[2],
                                                 "sources": list(sources[memory_id].sources)
                                                 if memory_id in sources else []})
    return found


def delete_memory(conn: Any, memory_id: str) -> None:
    """Delete a learned event or contradiction (a fact goes with :func:`core.memory.storage.facts.delete`)."""
    kind, _, number = memory_id.partition(":")
    table = {"event": "extracted_events", "contradiction": "fact_contradictions"}.get(kind)
    if table is not None and number.isdigit():
        conn.execute(f"DELETE FROM {table} WHERE id = ?", (int(number),))
    clear(conn, memory_id)


def delete_contradictions(conn: Any, key: str) -> None:
    """Delete the statements kept beside fact ``key`` (it is deleted)."""
    for (number,) in conn.execute("SELECT id FROM fact_contradictions WHERE key = ?", (key,)).fetchall():
        clear(conn, f"contradiction:{number}")
    conn.execute("DELETE FROM fact_contradictions WHERE key = ?", (key,))


# -- recall keys and forgetting -------------------------------------------------------------------------

_KEYS = """
SELECT 'fact', f.key, f.value FROM extracted_sources s JOIN user_facts f ON s.memory_id = 'fact:' || f.key
    WHERE s.source_id = ? AND f.category <> 'secret'
UNION ALL SELECT 'event', e.what, e.occurred_at FROM extracted_sources s
    JOIN extracted_events e ON s.memory_id = 'event:' || e.id WHERE s.source_id = ?
UNION ALL SELECT 'contradiction', c.key, c.statement FROM extracted_sources s
    JOIN fact_contradictions c ON s.memory_id = 'contradiction:' || c.id WHERE s.source_id = ?
"""


def keys_of(conn: Any, source_id: str) -> list[str]:
    """What was learned from entry ``source_id``, as words recall indexes beside it:
    ``deploy target: fly.io``, ``moved to Porto (2026-11-17)`` (a secret fact never)."""
    if not source_id.startswith(SOURCE_PREFIXES):
        return []
    keys = []
    for kind, first, second in conn.execute(_KEYS, (source_id, source_id, source_id)).fetchall():
        if kind == "fact":
            keys.append(f"{key_words(first)}: {second}")
        elif kind == "event":
            keys.append(f"{first} ({second[:10]})")
        else:
            keys.append(f"{key_words(first)}: {second}")
    return sorted(keys)


def key_words(key: str) -> str:
    """A fact's key as words: ``user.deploy_target`` → ``user deploy target``."""
    return " ".join(key.replace(".", " ").replace("_", " ").split())


def forget_sources(conn: Any, source_ids: Sequence[str]) -> list[str]:
    """Unlink forgotten entries from what was learned; return the learned memories left with no source
    (the caller deletes them: what was learned only from forgotten entries goes with them).

    A fact's earlier learned value that came only from forgotten entries is deleted here.
    """
    gone = {s for s in source_ids if s.startswith(SOURCE_PREFIXES)}
    if not gone:
        return []
    touched: set[str] = set()
    for source in gone:
        touched.update(r[0]
                       for r in conn.execute("SELECT memory_id FROM extracted_sources WHERE source_id = ?",
                                                  (source,)))
        conn.execute("DELETE FROM extracted_sources WHERE source_id = ?", (source,))
    orphans = [m for m in sorted(touched)
               if not conn.execute("SELECT 1 FROM extracted_sources WHERE memory_id = ?", (m,)).fetchone()]
    for row in conn.execute("SELECT id, sources FROM fact_versions WHERE sources IS NOT NULL").fetchall():
        provenance = Provenance.from_dict(_loads(row[1]))
        if provenance is not None and provenance.sources and set(provenance.sources) <= gone:
            conn.execute("DELETE FROM fact_versions WHERE id = ?", (row[0],))
            orphans.append(f"fact_version:{row[0]}")
    return orphans


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
