"""Facts: structured key/value memory in memory.db (``user_facts``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import ValidationError
from core.memory.db import Database
from core.memory.log_format import check_text, utc_timestamp
from core.memory.secrets import MIN_SECRET_CHARS, REDACTED, Redactor, redactor_for, redactor_of

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


class FactStore:
    """Facts of one agent."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def save(self, key: object, value: object, category: object = "general") -> Fact:
        """Insert or update a fact; an update keeps ``created_at`` and bumps ``updated_at``."""
        key, text, category = check_key(key), check_value(value), check_category(category)
        if category != "secret":
            text = redactor_of(self.db, excluding=key)(text)  # a secret's value is kept under its own key only
        now = utc_timestamp()
        with self.db.transaction() as conn:
            conn.execute(
                """INSERT INTO user_facts (key, value, category, created_at, updated_at)
                   VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (key) DO UPDATE SET
                       value = excluded.value, category = excluded.category,
                       updated_at = excluded.updated_at""",
                (key, text, category, now, now),
            )
            row = conn.execute("SELECT * FROM user_facts WHERE key = ?", (key,)).fetchone()
        return _fact(row)

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

    def delete(self, key: object) -> bool:
        """Delete a fact; return True if it existed."""
        with self.db.transaction() as conn:
            cursor = conn.execute("DELETE FROM user_facts WHERE key = ?", (check_key(key),))
        return cursor.rowcount > 0

    def secret_values(self) -> list[str]:
        """Values of the secret facts, longest first, for redaction."""
        rows = self.db.conn.execute(
            "SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= ?",
            (MIN_REDACTED_CHARS,),
        ).fetchall()
        return sorted((row[0] for row in rows), key=len, reverse=True)

    def redactor(self) -> Redactor:
        """What hides the current secret values (see :mod:`core.memory.secrets`)."""
        return redactor_of(self.db)


def _fact(row) -> Fact:
    return Fact(row["key"], row["value"], row["category"], row["created_at"], row["updated_at"])


def redact(value: Any, secrets: list[str]) -> Any:
    """Replace every occurrence of a secret value in text, or in the strings (and keys) of a JSON-like value."""
    return redactor_for(secrets)(value)
