"""JSON from outside (an archive, a hand-edited LOG.md, a model's reply): malformed is one error, however.

``json.loads`` meets a document nested deeper than Python's recursion limit (a thousand ``[``, a few
hundred bytes) with a ``RecursionError``, which no caller expects: an import, a read of LOG.md or a model's
reply ended in a traceback. Here it is a ``json.JSONDecodeError`` like any other malformed JSON, so the
caller's own check refuses it with its own message.
"""

from __future__ import annotations

import json
from typing import Any

_TOO_DEEP = "the JSON nests too deeply to be read"


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)``.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON, or nests deeper than the parser can follow.
    """
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise json.JSONDecodeError(_TOO_DEEP, _as_text(text), 0) from exc


def decode_json_at(decoder: json.JSONDecoder, text: str, position: int) -> tuple[Any, int]:
    """``decoder.raw_decode(text, position)``, the value and where it ends.

    Raises:
        json.JSONDecodeError: no JSON value starts at ``position``, or it nests too deeply.
    """
    try:
        return decoder.raw_decode(text, position)
    except RecursionError as exc:
        raise json.JSONDecodeError(_TOO_DEEP, text, position) from exc


def _as_text(text: str | bytes) -> str:
    return text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
