"""The provider's ``memory`` tool as an engine tool, its session bound on every call."""

from __future__ import annotations

import json
from typing import Any

from core.memory.provider import Session, bind, build_tool
from core.engine.toolbox.toolbox import Tool


def memory_tools(provider: Any, session: Session, memory: Any = None) -> list[Tool]:
    """``[memory]``: the tool generated from the provider's capabilities (plus recall and forget over
    ``memory``, the agent's MemoryManager); session, user and agent come from ``session``."""
    tool = build_tool(provider, memory=memory)

    def run(arguments: Any) -> Any:
        # The tool reads who is talking from context variables, never from the model's arguments.
        with bind(session=session):
            return json.loads(tool.call(arguments))

    return [Tool(tool.name, tool.schema(), run)]
