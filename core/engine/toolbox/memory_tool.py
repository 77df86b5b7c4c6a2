"""The provider's ``memory`` tool as an engine tool, its session bound on every call.

Every token of a tool definition is sent with every call, so the engine offers only the actions
that nothing else gives its model: the memory skills already search and forget (``recall_memory``
covers the conversation too), and the system prompt already shows the user's profile, the soul and
the constraints' texts. What is left: ``expand`` (the messages behind a summary) and the user's
hard rules. The MCP server offers every action.
"""

from __future__ import annotations

import json
from typing import Any

from core.memory.provider import Session, bind, build_tool
from core.engine.toolbox.toolbox import Tool

ENGINE_ACTIONS = {
    "expand": "the messages a [summary sum_...] was built from",
    "constraint_list": "the user's rules with their ids",
    "constraint_add": "a rule the user wants always obeyed",
    "constraint_remove": "",
}
"""The actions offered to the engine's model, each with what its one-line description says."""


def memory_tools(provider: Any, session: Session) -> list[Tool]:
    """``[memory]`` with the :data:`ENGINE_ACTIONS` the provider supports (``[]`` when it supports none);
    session, user and agent come from ``session``."""
    tool = build_tool(provider, actions_only=tuple(ENGINE_ACTIONS))
    if not tool.actions:
        return []

    def run(arguments: Any) -> Any:
        # The tool reads who is talking from context variables, never from the model's arguments.
        with bind(session=session):
            return json.loads(tool.call(arguments))

    return [Tool(tool.name, definition(tool), run)]


def definition(tool: Any) -> dict[str, Any]:
    """The tool's definition for a model: each action as ``name(arguments)`` in the description, and only
    the arguments those need, bare, in the schema (optional ones keep their defaults; the tool's own checks
    refuse whatever does not fit)."""
    actions, needed = [], []
    for name in tool.actions:
        required = tool.required(name)
        needed += [key for key in required if key not in needed]
        call = f"{name}({', '.join(required)})"
        actions.append(f"{call}: {ENGINE_ACTIONS[name]}" if ENGINE_ACTIONS.get(name) else call)
    properties: dict[str, Any] = {"action": {"type": "string", "enum": list(tool.actions)}}
    properties.update({key: {"type": tool.parameters["properties"][key]["type"]} for key in needed})
    description = "Your memory of this user and conversation. " + "; ".join(actions) + "."
    return {"type": "function", "function": {"name": tool.name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": ["action"]}}}
