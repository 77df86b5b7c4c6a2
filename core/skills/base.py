"""Build a skill's ``SKILL_METADATA`` from its ``execute`` function, and open agents' memories.

The name comes from the module, the description from the docstring's first
paragraph, the JSON schema from the type hints and the docstring's ``Args:``.
``agent_name`` is never part of the schema: the engine binds the agent.
"""

from __future__ import annotations

import inspect
import threading
import types
import typing
from typing import Any, Callable, Literal

from core.memory_manager import MemoryManager
from core.paths import agents_home

BOUND_PARAMETERS = ("agent_name",)
"""Parameters the engine supplies; a model never sees or sets them."""

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}

_managers: dict[tuple[str, str], MemoryManager] = {}
_managers_guard = threading.Lock()


def memory_for(agent_name: str) -> MemoryManager:
    """The process's MemoryManager for ``agent_name`` in the current agents home (opened once)."""
    key = (str(agents_home()), agent_name)
    with _managers_guard:
        manager = _managers.get(key)
        if manager is None:
            manager = _managers[key] = MemoryManager(agent_name)
        return manager


def skill_metadata(execute: Callable[..., Any], name: str) -> dict[str, Any]:
    """Return ``{name, description, parameters}`` for ``execute``, ready as an LLM tool definition."""
    doc = inspect.getdoc(execute) or ""
    description, arg_docs = _split_doc(doc)
    hints = typing.get_type_hints(execute)
    properties: dict[str, Any] = {}
    required = []
    for param in inspect.signature(execute).parameters.values():
        if param.name in BOUND_PARAMETERS or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        schema = json_schema(hints.get(param.name, str))
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif param.default is not None:
            schema["default"] = param.default
        properties[param.name] = schema
    parameters = {"type": "object", "properties": properties, "required": required,
                  "additionalProperties": False}
    return {"name": name, "description": description, "parameters": parameters}


def json_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema of a Python type hint (str, int, float, bool, dict, list[...], Optional, Literal)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return json_schema(options[0]) if len(options) == 1 else {}
    if origin is Literal:
        return {"type": _JSON_TYPES[type(args[0])], "enum": list(args)}
    if origin in (list, tuple) or annotation in (list, tuple):
        return {"type": "array", "items": json_schema(args[0]) if args else {}}
    if origin is dict:
        return {"type": "object"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    return {}


def _split_doc(doc: str) -> tuple[str, dict[str, str]]:
    """Return the docstring's text before ``Args:`` and the per-argument descriptions."""
    head, _, rest = doc.partition("\nArgs:\n")
    args: dict[str, str] = {}
    current = None
    for line in rest.splitlines():
        stripped = line.strip()
        if not stripped or (not line.startswith(" ") and stripped.endswith(":")):
            if not line.startswith(" ") and stripped:
                break
            continue
        name, sep, text = stripped.partition(":")
        if sep and " " not in name and line.startswith("    ") and not line.startswith("        "):
            current = name
            args[current] = text.strip()
        elif current:
            args[current] += " " + stripped
    return " ".join(head.split()), args
