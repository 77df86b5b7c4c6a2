"""Checking the notes of ``store_memories`` and reporting what a batch stored and what it refused.

A batch is checked item by item before anything is written: the good items are stored
together (one transaction) and each bad one is named in the result with the reason
(:class:`StoredMemories`), so one empty or unreadable turn among 500 costs that turn only.
A batch in which no item is good stores nothing and raises :class:`ValidationError`.
Storing an item again refreshes the stored memory (its content key), so a batch sent again
after a fix stores the items it refused and nothing twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from core.errors import ValidationError
from core.memory.files.log_format import check_text, utc_timestamp
from core.memory.recall.sources import content_key, occurred_from
from core.memory.recall.when import parse_time
from core.memory.storage.facts import redact

NOTE_KINDS = ("note", "summary")
"""Kinds ``store_memory`` accepts; the other kinds come from their sources."""
FIELDS = ("content", "metadata", "kind", "occurred_at", "expires_at")
LISTED = 5
"""Refused items named in an error message, at most."""


@dataclass(frozen=True)
class Refused:
    """An item of a batch that was not stored: its position in the batch and why."""

    index: int
    reason: str

    def __str__(self) -> str:
        return f"item {self.index}: {self.reason}"


class StoredMemories(list):
    """What ``store_memories`` returns: the ids of the stored items, in the batch's order (a list of
    str, as before), with ``refused`` (a :class:`Refused` for each item not stored) and ``by_index``
    (the id of each stored item by its position in the batch)."""

    def __init__(self, by_index: dict[int, str], refused: Sequence[Refused]) -> None:
        super().__init__(by_index[i] for i in sorted(by_index))
        self.by_index = dict(by_index)
        self.refused = list(refused)

    def report(self) -> str:
        """One readable line: how many were stored, and each refused item with its reason."""
        total = len(self.by_index) + len(self.refused)
        line = f"stored {len(self.by_index)} of {total} memories"
        if self.refused:
            line += "; refused " + "; ".join(str(r) for r in self.refused)
        return line

    def __repr__(self) -> str:
        return f"StoredMemories({list(self)!r}, refused={self.refused!r})"


def check_batch(items: Sequence[Any], check: Callable[[Any], dict[str, Any]]) -> tuple[dict[int, dict], list[Refused]]:
    """Each item's note by its position, and the items refused with their reasons.

    Raises:
        ValidationError: every item was refused (a batch of one: that item's own error).
    """
    good: dict[int, dict[str, Any]] = {}
    refused: list[Refused] = []
    errors: list[ValidationError] = []
    for index, item in enumerate(items):
        try:
            good[index] = check(item)
        except ValidationError as exc:
            refused.append(Refused(index, str(exc)))
            errors.append(exc)
    if items and not good:
        if len(errors) == 1:
            raise errors[0]
        listed = "; ".join(str(r) for r in refused[:LISTED]) + ("; ..." if len(refused) > LISTED else "")
        raise ValidationError(f"none of the {len(items)} memories was stored, each was refused: {listed}; "
                              "fix them and store the batch again") from errors[0]
    return good, refused


def check_note(item: Any, secrets: list[str], max_bytes: int) -> dict[str, Any]:
    """One item of ``store_memories`` as the row it becomes (secrets redacted); raise ValidationError.

    ``max_bytes`` (``cold.max_memory_bytes``) bounds the content: it is kept whole, and its vectors
    cover it in chunks whose computing grows with its length."""
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, dict):
        raise ValidationError(f"each memory must be text or a dict with 'content', got {type(item).__name__}")
    unknown = set(item) - set(FIELDS)
    if unknown:
        raise ValidationError(f"unknown memory field(s) {sorted(unknown)}; use {', '.join(FIELDS)}")
    text = check_text(item.get("content"), "memory content").strip()
    if not text:
        raise ValidationError("memory content must not be empty")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(f"memory content of {size} bytes exceeds the limit of {max_bytes} bytes "
                              "(cold.max_memory_bytes): store it as several memories")
    kind = item.get("kind") or "note"
    if kind not in NOTE_KINDS:
        raise ValidationError(f"store_memory kind must be one of {', '.join(NOTE_KINDS)}, got {kind!r}")
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
    metadata = redact(metadata or {}, secrets)
    try:
        meta_json = json.dumps(metadata, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from exc
    occurred = occurred_from(metadata, item.get("occurred_at"))
    expires = item.get("expires_at")
    expires = utc_timestamp(parse_time(expires, "expires_at")) if expires is not None else None
    text = redact(text, secrets)
    key = content_key(kind, text, meta_json, occurred)
    return {"text": text, "kind": kind, "metadata": meta_json, "occurred_at": occurred,
            "expires_at": expires, "key": key}
