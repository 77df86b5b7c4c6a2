"""Facts: structured key/value memory in memory.db (``user_facts``).

Every save and delete is also recorded as a FACT entry in LOG.md (a secret's value
never: only its key), so the facts can be rebuilt from LOG.md and its archives if
memory.db is lost (:func:`apply_entry` replays one record).
"""

from __future__ import annotations

import logging
import unicodedata
from datetime import datetime, timedelta
from dataclasses import dataclass
from typing import Any

from core.errors import ValidationError, shown
from core.memory.storage import extracted
from core.memory.storage.extracted import Provenance
from core.memory.storage.protocol import Connection, Database
from core.memory.files.log_format import check_text, utc_timestamp
from core.memory.secrets.redaction import (MIN_SECRET_CHARS, REDACTED, Redactor, forgotten_values,
                                           redactor_for, redactor_of)

log = logging.getLogger(__name__)

CATEGORIES = ("general", "preference", "personal", "config", "secret")
MAX_KEY_CHARS = 200
MAX_VALUE_BYTES = 16 * 1024
MIN_REDACTED_CHARS = MIN_SECRET_CHARS
"""Shorter secret values are not searched for in text: they would match everywhere."""


@dataclass(frozen=True)
class Fact:
    """One stored fact."""

    key: str
    value: str
    category: str
    created_at: str
    updated_at: str

    def as_dict(self, redact: bool = True) -> dict[str, Any]:
        """The fact as plain data; a secret's value is replaced unless ``redact`` is False."""
        value = REDACTED if redact and self.category == "secret" else self.value
        return {
            "key": self.key,
            "value": value,
            "category": self.category,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


def check_key(key: object) -> str:
    """Return a valid key for a fact to be saved, or raise ValidationError: one line of text without control
    characters (a newline in a key wrote lines of its own into LOG.md's readers and the prompt's facts)."""
    key = lookup_key(key)
    bad = next((c for c in key if unicodedata.category(c) in _NOT_IN_A_KEY), None)
    if bad is not None:
        raise ValidationError(f"fact key {shown(key)} holds the control character {bad!r} at position "
                              f"{key.index(bad)}: a key is one line of text without control characters, such "
                              "as 'user.editor' or 'deploy target'")
    return key


def lookup_key(key: object) -> str:
    """Return ``key`` as a fact may be stored under it, or raise ValidationError: keys saved before
    :func:`check_key` refused control characters included, so that they can still be read and deleted."""
    if not isinstance(key, str):
        raise ValidationError(f"fact key must be a string, got {type(key).__name__}")
    key = check_text(key, "fact key").strip()
    if not key or len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"fact key must be 1-{MAX_KEY_CHARS} characters")
    return key


_NOT_IN_A_KEY = frozenset({"Cc", "Zl", "Zp"})
"""Unicode categories a fact key may not hold: control characters (newline, tab, escape) and the line and
paragraph separators."""


def check_value(value: object) -> str:
    """Return a fact value as text (a string, or UTF-8 bytes as every text of the memory); anything else is
    refused, a number too: ``str(5)`` is the caller's choice of how to write it."""
    if isinstance(value, (bool, int, float)):
        raise ValidationError(f"fact value must be a string, got {type(value).__name__}: pass str({value!r}) "
                              "to save it as text")
    text = check_text(value, "fact value")
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise ValidationError(f"fact value exceeds {MAX_VALUE_BYTES} bytes")
    return text


def check_category(category: object) -> str:
    """Return ``category`` if known, else raise ValidationError listing the valid ones."""
    if category not in CATEGORIES:
        raise ValidationError(f"unknown fact category {category!r}; valid: {', '.join(CATEGORIES)}")
    return category  # type: ignore[return-value]


def fact_record(key: str, value: str | None, category: str | None,
                learned: Provenance | None = None) -> dict[str, Any]:
    """The metadata of the FACT entry recording a save (``value`` None: a delete), with the provenance of a
    learned value (``extracted``: its sources, model, prompt version and time). A secret's value is left
    out."""
    if value is None:
        return {"fact": {"key": key, "deleted": True}}
    record: dict[str, Any] = {"key": key, "category": category}
    if category != "secret":
        record["value"] = value
    if learned is not None:
        record["extracted"] = learned.as_dict()
    return {"fact": record}


def record_text(key: str, value: str | None, category: str | None) -> str:
    """The text of that FACT entry, for a reader of LOG.md."""
    if value is None:
        return f"fact {key} deleted"
    if category == "secret":
        return f"fact {key} saved (secret: its value is never logged)"
    return f"fact {key} = {value} ({category})"


def prepare(db: Database, key: object, value: object, category: object) -> tuple[str, str, str]:
    """``(key, value, category)`` checked as ``save_fact`` takes them, a non-secret value with the secrets it
    holds redacted (a secret's value is kept under its own key only; a forgotten value saved again is live).

    Raises:
        ValidationError: non-string key, unknown category, invalid text.
    """
    key, text, category = check_key(key), check_value(value), check_category(category)
    if category != "secret":
        text = redactor_of(db, excluding=key, forgotten=False)(text)
    return key, text, category


def upsert(conn: Connection, key: str, value: str, category: str, now: str,
           learned: Provenance | None = None) -> Fact:
    """Insert or update a fact in the caller's transaction; an update keeps ``created_at``.

    A new value keeps the one it replaces as a version (``fact_versions``, with its provenance if it was
    learned), in the same transaction; a secret's earlier value is never kept, only when it was saved and
    replaced. ``learned``: the value was learned by reflection (see :mod:`core.memory.storage.extracted`);
    None: saved explicitly, which makes a learned fact an explicit one.
    """
    old = conn.execute("SELECT value, category, updated_at FROM user_facts WHERE key = ?", (key,)).fetchone()
    if old is not None and old["value"] != value:
        now = _after(old["updated_at"], now)
        was = extracted.of(conn, [f"fact:{key}"]).get(f"fact:{key}")
        conn.execute("INSERT INTO fact_versions (key, value, category, saved_at, replaced_at, sources)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     (key, None if old["category"] == "secret" else old["value"], old["category"],
                      old["updated_at"], now, extracted.provenance_json(was)))
    if learned is None:
        extracted.clear(conn, f"fact:{key}")
    else:
        extracted.record(conn, f"fact:{key}", learned)
    conn.execute(
        """INSERT INTO user_facts (key, value, category, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET
               value = excluded.value, category = excluded.category,
               updated_at = excluded.updated_at""",
        (key, value, category, now, now),
    )
    return _fact(conn.execute("SELECT * FROM user_facts WHERE key = ?", (key,)).fetchone())


def _after(earlier: str, now: str) -> str:
    """``now``, or just after ``earlier`` if it is not later (two saves in one millisecond, a clock set back):
    recall orders a fact's versions by time. A stored time that cannot be read leaves ``now`` as it is."""
    try:
        moment = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
    except ValueError:
        return now
    return max(now, utc_timestamp(moment + timedelta(milliseconds=1)))


def apply_entry(conn: Connection, entry) -> None:
    """Replay a FACT entry that memory.db never applied (a failed write, or a rebuilt database)."""
    record = entry.metadata.get("fact")
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        log.warning("FACT entry %d has no fact record; skipped", entry.seq)
        return
    key = record["key"]
    if record.get("deleted"):
        delete(conn, key)
    elif isinstance(record.get("value"), str) and record.get("category") in CATEGORIES:
        upsert(conn, key, record["value"], record["category"], entry.ts,
               Provenance.from_dict(record.get("extracted")))
    else:  # a secret: its value is only ever in memory.db
        row = conn.execute("SELECT category FROM user_facts WHERE key = ?", (key,)).fetchone()
        if row is not None and row["category"] == "secret":
            learned = Provenance.from_dict(record.get("extracted"))
            if learned is not None:
                extracted.record(conn, f"fact:{key}", learned)
        else:
            delete(conn, key)
            log.warning("the secret fact %r (LOG.md entry %d) is not in memory.db and its value is never "
                        "logged: save it again", key, entry.seq)


def delete(conn: Connection, key: str) -> bool:
    """Delete a fact, its earlier versions, its provenance and the statements kept beside it in the caller's
    transaction; return True if it existed."""
    conn.execute("DELETE FROM fact_versions WHERE key = ?", (key,))
    extracted.clear(conn, f"fact:{key}")
    extracted.delete_contradictions(conn, key)
    return conn.execute("DELETE FROM user_facts WHERE key = ?", (key,)).rowcount > 0


@dataclass(frozen=True)
class Version:
    """A value a fact held before the one after it replaced it (``replaced_at`` None: the current value)."""

    id: int
    """``fact_version:<id>`` in recall (0 for the current value)."""
    key: str
    value: str | None
    """None for a secret's earlier value: it is never kept."""
    category: str
    saved_at: str
    replaced_at: str | None

    def as_dict(self, redact: bool = True) -> dict[str, Any]:
        """The version as plain data; a secret's value is replaced unless ``redact`` is False (and it is
        kept)."""
        hidden = self.value is None or (redact and self.category == "secret")
        return {"id": f"fact_version:{self.id}" if self.id else f"fact:{self.key}", "key": self.key,
                "value": REDACTED if hidden else self.value, "category": self.category,
                "saved_at": self.saved_at, "replaced_at": self.replaced_at}


def versions_of(fact: Fact, rows: Any) -> list[Version]:
    """``fact``'s current value, then its earlier values from ``rows`` (``fact_versions`` rows, newest first).

    While the fact is secret its earlier values are hidden too: a value saved before it became secret was
    not one then, but it may well be the same credential.
    """
    secret = fact.category == "secret"
    return [Version(0, fact.key, fact.value, fact.category, fact.updated_at, None),
            *(Version(r["id"], fact.key, None if secret else r["value"], r["category"], r["saved_at"],
                      r["replaced_at"]) for r in rows)]


class FactStore:
    """Facts of one agent."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, key: object) -> Fact | None:
        """Return the fact stored under ``key``, or None."""
        row = self.db.conn.execute("SELECT * FROM user_facts WHERE key = ?", (lookup_key(key),)).fetchone()
        return _fact(row) if row else None

    def history(self, key: object, as_dicts: bool = False) -> list[Any]:
        """The values ``key`` has held, newest (the current one) first; [] if no fact is stored under it.

        With ``as_dicts``: ``{id, key, value, category, saved_at, replaced_at}`` each, the current value as
        ``get_fact`` returns it (a secret's too), a secret's earlier values as ``[REDACTED]`` (never kept).
        While the fact is secret its earlier values are not shown either.
        """
        key = lookup_key(key)
        fact = self.get(key)
        if fact is None:
            return []
        rows = self.db.conn.execute("SELECT * FROM fact_versions WHERE key = ? ORDER BY id DESC",
                                    (key,)).fetchall()
        versions = versions_of(fact, rows)
        return [v.as_dict(redact=False) for v in versions] if as_dicts else versions

    def list(self, category: object = None) -> list[Fact]:
        """All facts, or those of one category, ordered by key."""
        if category is None:
            rows = self.db.conn.execute("SELECT * FROM user_facts ORDER BY key").fetchall()
        else:
            rows = self.db.conn.execute(
                "SELECT * FROM user_facts WHERE category = ? ORDER BY key", (check_category(category),)
            ).fetchall()
        return [_fact(row) for row in rows]

    def secret_values(self) -> list[str]:
        """Values of the secret facts, longest first, for redaction."""
        rows = self.db.conn.execute(
            "SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= ?",
            (MIN_REDACTED_CHARS,),
        ).fetchall()
        return sorted((row[0] for row in rows), key=len, reverse=True)

    def redactor(self, forgotten: bool = True) -> Redactor:
        """What hides the current secret values and, with ``forgotten``, the values of forgotten facts
        (see :mod:`core.memory.secrets.redaction`)."""
        return redactor_of(self.db, forgotten=forgotten)

    def learned(self, keys: list[str]) -> dict[str, Provenance]:
        """Where each of ``keys`` that reflection learned came from (an explicit fact has none)."""
        found = extracted.of(self.db.conn, [f"fact:{key}" for key in keys])
        return {memory_id[5:]: provenance for memory_id, provenance in found.items()}

    def listed(self, category: object = None) -> list[dict[str, Any]]:
        """:meth:`list` as plain data (secret values not redacted yet), each fact with ``sources`` (the
        entries reflection learned it from; [] for a fact saved explicitly), ``extracted`` (model, prompt
        version and time; None for an explicit fact) and, when statements contradict it,
        ``contradicted_by``."""
        found = self.list(category)
        learned = self.learned([f.key for f in found])
        beside = extracted.contradictions_of(self.db.conn, [f.key for f in found])
        out = []
        for fact in found:
            how = learned.get(fact.key)
            item = {**fact.as_dict(), "sources": list(how.sources) if how else [],
                    "extracted": {k: v for k, v in how.as_dict().items() if k != "sources"} if how else None}
            if fact.key in beside:
                item["contradicted_by"] = beside[fact.key]
            out.append(item)
        return out

    def hidden_values(self) -> list[str]:
        """Secret values and forgotten facts' values: what recall must not show."""
        return self.secret_values() + forgotten_values(self.db)


def _fact(row) -> Fact:
    return Fact(row["key"], row["value"], row["category"], row["created_at"], row["updated_at"])


def redact(value: Any, secrets: list[str]) -> Any:
    """Replace every occurrence of a secret value in text, or in the strings (and keys) of a JSON-like
    value."""
    return redactor_for(secrets)(value)
