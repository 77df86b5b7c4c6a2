"""The provider's ``memory`` tool as an engine tool, its session bound on every call.

The engine offers the memory skills beside it, so the tool leaves out what they already do (``recall``
and ``forget`` over the agent's memory) and its description lists each action with its arguments only:
every token of a tool definition is sent with every call.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.memory.provider import Session, bind, build_tool
from core.engine.toolbox.toolbox import Tool

_ACTION = re.compile(r"(\w+) \(([^)]*)\):")


def memory_tools(provider: Any, session: Session) -> list[Tool]:
    """``[memory]``: the tool generated from the provider's capabilities; session, user and agent come from
    ``session``."""
    tool = build_tool(provider)

    def run(arguments: Any) -> Any:
        # The tool reads who is talking from context variables, never from the model's arguments.
        with bind(session=session):
            return json.loads(tool.call(arguments))

    definition = tool.schema()
    function = dict(definition["function"])
    function["description"] = short_description(function["description"])
    return [Tool(tool.name, {**definition, "function": function}, run)]


def short_description(description: str) -> str:
    """The tool's description with each action as ``name(arguments)``, its explanation left to the name."""
    head = description.split(" Actions:", 1)[0]
    actions = [f"{name}({'' if args == 'no arguments' else args})" for name, args in _ACTION.findall(description)]
    return f"{head} Actions: {', '.join(actions)}." if actions else description
