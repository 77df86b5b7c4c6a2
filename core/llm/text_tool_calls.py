"""Tool calls that small local models write into their reply text instead of ``message.tool_calls``.

Models served by Ollama do this when their template does not parse the call, or when they
ignore it: llama3.2 writes a bare ``{"name": ..., "parameters": {...}}`` object, qwen2.5 wraps
``{"name": ..., "arguments": {...}}`` in ``<tool_call>...</tool_call>`` tags, mistral writes
``[TOOL_CALLS] [{...}]``, and many models put the object in a ```json fence. A call is
recognised only when it names a tool that was offered and is the reply's whole content (a fence
or tags may be surrounded by a short remark, which is kept as the reply's text); a reply that
merely shows some JSON stays text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from core.durable import load_json
from core.llm.backend import ToolCall

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*\n?(.*?)```", re.DOTALL)
_MISTRAL = re.compile(r"^\s*\[TOOL_CALLS\]\s*", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def parse(text: str, offered: Iterable[str]) -> tuple[str, tuple[ToolCall, ...]]:
    """Split a reply's text into what stays text and the tool calls written in it.

    Returns ``(text, calls)``; when no call is recognised, ``(text, ())`` unchanged.
    """
    names = set(offered)
    if not names or not text or "{" not in text:
        return text, ()
    tagged = _TAGGED.findall(text)
    if tagged:
        calls = _calls(tagged, names)
        return (_TAGGED.sub("", text).strip(), calls) if calls else (text, ())
    mistral = _MISTRAL.match(text)
    if mistral:
        calls = _calls([text[mistral.end():]], names)
        return ("", calls) if calls else (text, ())
    fenced = _FENCED.findall(text)
    if fenced:
        calls = _calls(fenced, names)
        return (_FENCED.sub("", text).strip(), calls) if calls else (text, ())
    calls = _calls([text], names)
    return ("", calls) if calls else (text, ())


def _calls(blocks: list[str], names: set[str]) -> tuple[ToolCall, ...]:
    """The calls in ``blocks``, or () if any block is not wholly a call of an offered tool."""
    calls: list[ToolCall] = []
    for block in blocks:
        try:
            value = load_json(block.strip())
        except json.JSONDecodeError:
            return ()
        items = value if isinstance(value, list) else [value]
        for item in items:
            call = _call(item, names)
            if call is None:
                return ()
            calls.append(call)
    return tuple(calls)


def _call(item: Any, names: set[str]) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # the OpenAI shape: {"function": {"name", "arguments"}}
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    if set(item) - {"name", "type", "id", *_ARGUMENT_KEYS}:
        return None
    arguments: Any = next((item[key] for key in _ARGUMENT_KEYS if key in item), {})
    if isinstance(arguments, str):  # some models encode the arguments object as a JSON string
        try:
            arguments = load_json(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(name=name, arguments=arguments)
