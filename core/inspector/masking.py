"""Secrets never leave the inspector: every string of every answer is masked on the way out.

The values of an agent's ``secret`` facts are replaced by ``[REDACTED]`` wherever
they occur, in text, metadata and keys alike, with the memory layer's own
:func:`core.memory.storage.facts.redact`. Masking the whole answer in one place (rather
than field by field) means a new panel cannot forget it.
"""

from __future__ import annotations

import json
from typing import Any

from core.memory.storage import redact


def mask(value: Any, secrets: list[str]) -> Any:
    """``value`` (JSON-like data) with every secret value replaced, keys included."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {mask(k, secrets): mask(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask(v, secrets) for v in value]
    return value


def searchable(text: str, metadata: dict[str, Any], secrets: list[str]) -> str:
    """The text a search looks in (an entry's text and metadata), masked like the page shows it."""
    meta = json.dumps(metadata, ensure_ascii=False) if metadata else ""
    return redact(f"{text}\n{meta}", secrets)
