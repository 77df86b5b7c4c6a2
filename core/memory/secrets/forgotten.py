"""What forgetting hides from everything derived after it, in LOG.md entries.

A FORGET entry names ids; for a fact, memory.db also keeps the value it held
(``forgotten_values``). LOG.md and its archives keep every line (they are the
record), so whatever reads them to derive something (a compaction's summary, a
prompt's LOG.md tail) first leaves out what a FORGET named:

- the entries forgotten by id (``log:<seq>``);
- the FACT entries of a forgotten fact written before its forget (its saves and
  their values: a save after the forget is a new, live fact);

and hides the forgotten values in the rest, with the redactor of
:func:`core.memory.secrets.redaction.redactor_of`, which also checks what the summarizer
wrote (a model may know the value from elsewhere).
"""

from __future__ import annotations

from typing import Any, Sequence

from core.memory.files.log_format import LogEntry
from core.memory.secrets.redaction import redactor_of

_BATCH = 500
FORGOTTEN = "[forgotten]"
"""What a prompt or a summarizer is shown in place of a conversation message or summary that was forgotten."""


def forgotten_ids(conn: Any, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` (recall ids: ``log:<seq>``, ``msg:<id>``, ``sum:<id>``...) that a FORGET named."""
    conn = getattr(conn, "conn", conn)
    forgotten: set[str] = set()
    for start in range(0, len(ids), _BATCH):
        part = list(ids[start:start + _BATCH])
        marks = ", ".join("?" * len(part))
        rows = conn.execute(f"SELECT id FROM recall_forgotten WHERE id IN ({marks})", part)
        forgotten.update(r[0] for r in rows)
    return forgotten


def forgotten_of(conn: Any, *prefixes: str) -> set[str]:
    """Every forgotten id that starts with one of ``prefixes`` (e.g. ``"msg:"``): forgets are few."""
    conn = getattr(conn, "conn", conn)
    found: set[str] = set()
    for prefix in prefixes:
        rows = conn.execute("SELECT id FROM recall_forgotten WHERE id LIKE ?", (f"{prefix}%",))
        found.update(r[0] for r in rows)
    return found


def visible_entries(conn: Any, entries: Sequence[LogEntry]) -> list[LogEntry]:
    """``entries`` without those a FORGET named (see the module docstring); the others unchanged."""
    conn = getattr(conn, "conn", conn)
    if not entries:
        return []
    forgotten = forgotten_ids(conn, [f"log:{e.seq}" for e in entries])
    # An earlier value forgotten alone (fact:<key>#version=<id>) is hidden by the redactor; the fact's own
    # FACT entries stay.
    facts = {r[0].partition(":")[2]: r[1] for r in conn.execute(
        "SELECT memory_id, MAX(forget_seq) FROM forgotten_values WHERE memory_id NOT LIKE '%#version=%'"
        " GROUP BY memory_id").fetchall()}
    return [e for e in entries if f"log:{e.seq}" not in forgotten and not _forgotten_fact(e, facts)]


def _forgotten_fact(entry: LogEntry, facts: dict[str, int]) -> bool:
    record = entry.metadata.get("fact") if entry.type == "FACT" else None
    key = record.get("key") if isinstance(record, dict) else None
    return isinstance(key, str) and key in facts and entry.seq < facts[key]


def derivable(conn: Any, entries: Sequence[LogEntry]) -> list[LogEntry]:
    """``entries`` as a derivation may read them: the forgotten left out, secrets and forgotten values
    hidden."""
    return redactor_of(conn).entries(visible_entries(conn, entries))
