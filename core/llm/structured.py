"""Reading the shapes a model must answer in from what small local models really write.

A summarizer call asks Ollama for a JSON object of a known shape (``format`` set to the shape's
JSON schema, :mod:`core.llm.shapes`), so a model constrained by the server answers exactly that. Without the
constraint (an older server, a model that ignores it) small models wrap the object in a Markdown fence, put
prose around it, open with a ``<think>`` block or echo the schema back; :func:`parse_reply` reads
the first of those that fits the shape and refuses the rest.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, TypeVar

from core.durable import decode_json_at
from core.errors import BackendError

if TYPE_CHECKING:
    import pydantic

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_STRAY_CLOSE = re.compile(r"^.*?</think>", re.DOTALL | re.IGNORECASE)
_SCHEMA_KEYS = {"properties", "required", "title", "$defs"}

Shape = TypeVar("Shape", bound="pydantic.BaseModel")


class StructuredReplyError(BackendError):
    """The model's reply does not hold a JSON object of the asked shape."""


def strip_think(text: str) -> str:
    """``text`` without its ``<think>…</think>`` blocks (an unclosed one runs to the end; a closing tag
    without its opening one, as some templates send the opening in the prompt, ends the thinking)."""
    text = _THINK.sub("", text)
    if "</think>" in text.lower():
        text = _STRAY_CLOSE.sub("", text, count=1)
    return text.strip()


def parse_reply(text: str, shape: type[Shape]) -> Shape:
    """The first JSON object in ``text`` that fits ``shape``.

    Reads a bare object, one in a Markdown fence, or one with prose around it, after the
    ``<think>`` blocks are removed. An echo of the schema is not an answer.

    Raises:
        StructuredReplyError: no object in the reply fits the shape.
    """
    import pydantic  # here: a process that never reads a model's reply does not pay for pydantic's import

    body = strip_think(text)
    problems: list[str] = []
    for found in _objects(body):
        if _is_schema(found):
            problems.append("the model echoed the JSON schema back")
            continue
        try:
            return shape.model_validate(found)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            problems.append(f"{'.'.join(map(str, first.get('loc', ()))) or 'object'}: {first.get('msg', '')}")
    reason = problems[0] if problems else "no JSON object in it"
    raise StructuredReplyError(f"the model's reply is not a {shape.__name__} ({reason}): {_excerpt(body)}")


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that starts at a ``{`` in ``text``, outermost first (a fence's object included)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = decode_json_at(decoder, text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        position = text.find("{", end)
    return found


def _is_schema(value: dict[str, Any]) -> bool:
    """True for a JSON schema rather than an instance of it (what small models echo back)."""
    return value.get("type") == "object" and bool(_SCHEMA_KEYS & value.keys())


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


class ThinkFilter:
    """Drops ``<think>…</think>`` from text that arrives in pieces, so a streamed reply never shows it.

    A piece that may be the start of a tag is held back until the next piece tells.
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.thinking = False
        self.pending = ""

    def feed(self, piece: str) -> str:
        """The part of ``piece`` (with what was held back) that is not thinking."""
        text, self.pending, out = self.pending + piece, "", []
        while text:
            tag = self.CLOSE if self.thinking else self.OPEN
            index = text.lower().find(tag)
            if index == -1:
                keep = _partial_tag(text, tag)
                if not self.thinking:
                    out.append(text[: len(text) - keep])
                self.pending = text[len(text) - keep:] if keep else ""
                break
            if not self.thinking:
                out.append(text[:index])
            self.thinking = not self.thinking
            text = text[index + len(tag):]
        return "".join(out)

    def flush(self) -> str:
        """What was held back, at the end of the reply."""
        rest, self.pending = self.pending, ""
        return "" if self.thinking else rest


def _partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could begin ``tag``."""
    lowered = text.lower()
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(lowered[-size:]):
            return size
    return 0
