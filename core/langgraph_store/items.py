"""The rows of ``store_items`` in memory.db: the LangGraph store's items by namespace and key."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterable, Mapping

from langgraph.store.base import Item, MatchCondition

from core.errors import ValidationError
from core.memory.storage import Database
from core.memory.files import utc_timestamp


def namespace_text(namespace: tuple[str, ...]) -> str:
    """A namespace as stored: its labels joined by ``.`` (labels never contain one)."""
    return ".".join(namespace)


def to_item(row: Any) -> Item:
    """A row as a LangGraph ``Item``."""
    return Item(value=json.loads(row["value"]), key=row["key"], namespace=tuple(row["namespace"].split(".")),
                created_at=_time(row["created_at"]), updated_at=_time(row["updated_at"]))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class ItemTable:
    """Reads and writes of the store's items."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, namespace: tuple[str, ...], key: str) -> Any:
        """The row of one item, or None."""
        return self.db.conn.execute("SELECT * FROM store_items WHERE namespace = ? AND key = ?",
                                    (namespace_text(namespace), key)).fetchone()

    def under(self, prefix: tuple[str, ...], limit: int = -1, offset: int = 0) -> list[Any]:
        """Rows of every item whose namespace starts with ``prefix``, most recently updated first."""
        text = namespace_text(prefix)
        where = "WHERE namespace = ? OR substr(namespace, 1, ?) = ?" if prefix else ""
        params: tuple = (text, len(text) + 1, text + ".") if prefix else ()
        return self.db.conn.execute(
            f"SELECT * FROM store_items {where} ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        ).fetchall()

    def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace that holds an item."""
        rows = self.db.conn.execute("SELECT DISTINCT namespace FROM store_items").fetchall()
        return [tuple(row[0].split(".")) for row in rows]

    def write(self, puts: Iterable[tuple[tuple[str, ...], str, Mapping[str, Any] | None, list]]) -> int:
        """Insert, replace (keeping ``created_at``) or delete (value None) items in one transaction.

        Each put is ``(namespace, key, value, texts)``; return how many rows changed.

        Raises:
            ValidationError: a value is not a JSON object; nothing is written.
        """
        rows = []
        for namespace, key, value, texts in puts:
            rows.append((namespace_text(namespace), key, None if value is None else _json(value),
                         json.dumps(texts, ensure_ascii=False)))
        now = utc_timestamp()
        changed = 0
        with self.db.transaction() as conn:
            for namespace, key, value, texts in rows:
                if value is None:
                    changed += conn.execute("DELETE FROM store_items WHERE namespace = ? AND key = ?",
                                            (namespace, key)).rowcount
                    continue
                conn.execute(
                    """INSERT INTO store_items (namespace, key, value, texts, created_at, updated_at)
                       VALUES (?, ?, ?, ?, ?, ?)
                       ON CONFLICT (namespace, key) DO UPDATE SET
                           value = excluded.value, texts = excluded.texts, updated_at =
                               excluded.updated_at""",
                    (namespace, key, value, texts, now, now),
                )
                changed += 1
        return changed


def _json(value: Mapping[str, Any]) -> str:
    if not isinstance(value, Mapping):
        raise ValidationError(f"a store item's value must be a mapping (dict), got {type(value).__name__}")
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"a store item's value must be JSON-serialisable: {exc}") from exc


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` matches a prefix or suffix condition (``*`` matches any one label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        part = namespace[: len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path):]
    else:
        raise ValidationError(f"unsupported namespace match type {condition.match_type!r}; use prefix or "
                              "suffix")
    return all(p == "*" or p == n for p, n in zip(path, part))
