"""Facts: structured key/value memory in memory.db (``user_facts``).

Every save and delete is also recorded as a FACT entry in LOG.md (a secret's value
never: only its key), so the facts can be rebuilt from LOG.md and its archives if
memory.db is lost (:func:`apply_entry` replays one record).
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

from core.errors import ValidationError
from core.memory.storage.protocol import Database
from core.memory.files.log_format import check_text
from core.memory.secrets.redaction import (MIN_SECRET_CHARS, REDACTED, Redactor, forgotten_values, redactor_for,
                                 redactor_of)

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
    """Return a valid fact key or raise ValidationError."""
    if not isinstance(key, str):
        raise ValidationError(f"fact key must be a string, got {type(key).__name__}")
    key = check_text(key, "fact key").strip()
    if not key or len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"fact key must be 1-{MAX_KEY_CHARS} characters")
    return key


def check_value(value: object) -> str:
    """Return a fact value as text; numbers and booleans are converted, anything else refused."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, (int, float)):
        value = str(value)
    text = check_text(value, "fact value")
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise ValidationError(f"fact value exceeds {MAX_VALUE_BYTES} bytes")
    return text


def check_category(category: object) -> str:
    """Return ``category`` if known, else raise ValidationError listing the valid ones."""
    if category not in CATEGORIES:
        raise ValidationError(f"unknown fact category {category!r}; valid: {', '.join(CATEGORIES)}")
    return category  # type: ignore[return-value]


def fact_record(key: str, value: str | None, category: str | None) -> dict[str, Any]:
    """The metadata of the FACT entry recording a save (``value`` None: a delete). A secret's value is left out."""
    if value is None:
        return {"fact": {"key": key, "deleted": True}}
    if category == "secret":
        return {"fact": {"key": key, "category": category}}
    return {"fact": {"key": key, "category": category, "value": value}}


def record_text(key: str, value: str | None, category: str | None) -> str:
    """The text of that FACT entry, for a reader of LOG.md."""
    if value is None:
        return f"fact {key} deleted"
    if category == "secret":
        return f"fact {key} saved (secret: its value is never logged)"
    return f"fact {key} = {value} ({category})"


def upsert(conn: sqlite3.Connection, key: str, value: str, category: str, now: str) -> Fact:
    """Insert or update a fact in the caller's transaction; an update keeps ``created_at``."""
    conn.execute(
        """INSERT INTO user_facts (key, value, category, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET
               value = excluded.value, category = excluded.category,
               updated_at = excluded.updated_at""",
        (key, value, category, now, now),
    )
    return _fact(conn.execute("SELECT * FROM user_facts WHERE key = ?", (key,)).fetchone())


def apply_entry(conn: sqlite3.Connection, entry) -> None:
    """Replay a FACT entry that memory.db never applied (a failed write, or a rebuilt database)."""
    record = entry.metadata.get("fact")
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        log.warning("FACT entry %d has no fact record; skipped", entry.seq)
        return
    key = record["key"]
    if record.get("deleted"):
        conn.execute("DELETE FROM user_facts WHERE key = ?", (key,))
    elif isinstance(record.get("value"), str) and record.get("category") in CATEGORIES:
        upsert(conn, key, record["value"], record["category"], entry.ts)
    else:  # a secret: its value is only ever in memory.db
        row = conn.execute("SELECT category FROM user_facts WHERE key = ?", (key,)).fetchone()
        if row is None or row["category"] != "secret":
            conn.execute("DELETE FROM user_facts WHERE key = ?", (key,))
            log.warning("the secret fact %r (LOG.md entry %d) is not in memory.db and its value is never "
                        "logged: save it again", key, entry.seq)


class FactStore:
    """Facts of one agent."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, key: object) -> Fact | None:
        """Return the fact stored under ``key``, or None."""
        row = self.db.conn.execute("SELECT * FROM user_facts WHERE key = ?", (check_key(key),)).fetchone()
        return _fact(row) if row else None

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

    def hidden_values(self) -> list[str]:
        """Secret values and forgotten facts' values: what recall must not show."""
        return self.secret_values() + forgotten_values(self.db)


def _fact(row) -> Fact:
    return Fact(row["key"], row["value"], row["category"], row["created_at"], row["updated_at"])


def redact(value: Any, secrets: list[str]) -> Any:
    """Replace every occurrence of a secret value in text, or in the strings (and keys) of a JSON-like value."""
    return redactor_for(secrets)(value)
