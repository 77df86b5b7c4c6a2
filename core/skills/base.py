"""Build a skill's ``SKILL_METADATA`` from its ``execute`` function.

The name comes from the module, the description from the docstring's first
paragraph, the JSON schema from the type hints (through pydantic) and the docstring's ``Args:``.
``agent_name`` is never part of the schema: the engine binds the agent.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from core.skills.arguments import BOUND_PARAMETERS, Arguments

__all__ = ["BOUND_PARAMETERS", "function_arguments", "skill_metadata"]


def skill_metadata(execute: Callable[..., Any], name: str) -> dict[str, Any]:
    """Return ``{name, description, parameters}`` for ``execute``, ready as an LLM tool definition."""
    return function_arguments(execute, name).tool_function(name, _split_doc(inspect.getdoc(execute) or "")[0])


def function_arguments(execute: Callable[..., Any], name: str) -> Arguments:
    """The arguments of ``execute`` as a model sees them: types from its hints, descriptions from
    ``Args:``."""
    _, arg_docs = _split_doc(inspect.getdoc(execute) or "")
    return Arguments.of_function(execute, name, arg_docs)


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
