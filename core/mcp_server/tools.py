"""The MCP tools of one agent's memory: every built-in skill (the memory skills, ``store_memory`` and
``forget_memory`` included) and the provider's ``memory`` tool, each with the JSON schema the engine
offers its model.

Arguments are checked by AgentOS itself (the skill's pydantic model, or the memory
tool's checks), so an MCP client gets the same validation and the same messages as
the engine's model. The agent is bound here: no argument can name another agent.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import ConfigDict

from core.errors import AgentOSError
from core.memory import MemoryManager, MemoryReader, close_shared, shared_manager, shared_reader
from core.memory.provider import Session, bind, build_tool
from core.skills.registry import builtin_skills
from core.engine.toolbox.toolbox import READ_ONLY

READ_ONLY_ACTIONS = frozenset({"status", "search", "describe", "expand", "profile_get", "soul_get",
                               "constraint_list", "profile_history", "recall"})


class _AsSent(ArgModelBase):
    """The arguments exactly as the client sent them; AgentOS validates them itself."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


class AgentMemory:
    """The agent's memory as the server uses it: reads through the process's shared reader (a MemoryReader
    until something writes, then the MemoryManager), writes through the shared MemoryManager, which the first
    write opens (reflection then starts, on what clients record)."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self._wrote = False

    def reading(self) -> MemoryManager | MemoryReader:
        return shared_reader(self.agent)

    def writing(self) -> MemoryManager:
        manager = shared_manager(self.agent)
        if not self._wrote:
            self._wrote = True
            manager.reflect_soon()  # a long session: reflection reads what clients record, on its timer
        return manager

    def recall_memory(self, *args: Any, **kwargs: Any) -> Any:
        return self.reading().recall_memory(*args, **kwargs)

    def forget_memories(self, *args: Any, **kwargs: Any) -> Any:
        return self.writing().forget_memories(*args, **kwargs)

    def close(self) -> None:
        """Close the agent's shared reader and manager (the manager waits for a background compaction)."""
        close_shared(self.agent)


def memory_tools(agent: str, provider: Any, session: Session, memory: AgentMemory) -> list[Tool]:
    """Every MCP tool of ``agent``: each built-in skill once, and the provider's ``memory`` tool
    (with its ``recall`` and ``forget`` actions over ``memory``)."""
    tools = [
        _tool(skill.name, skill.description, skill.parameters, _skill_call(agent, skill, memory),
              read_only=skill.name in READ_ONLY)
        for skill in builtin_skills().values()
    ]
    memory_tool = build_tool(provider, memory=memory)

    def run_memory(a: dict[str, Any]) -> Any:
        with bind(session=session):  # who is talking comes from the server, never from the arguments
            return json.loads(memory_tool.call(a))

    writes = any(action not in READ_ONLY_ACTIONS for action in memory_tool.actions)
    tools.append(_tool(memory_tool.name, memory_tool.description, memory_tool.parameters, run_memory,
                       read_only=not writes))
    return tools


def _skill_call(agent: str, skill: Any, memory: AgentMemory) -> Callable[[dict[str, Any]], Any]:
    """A skill's call; one that writes opens the agent's writer first (and with it, reflection)."""
    if skill.name in READ_ONLY:
        return lambda arguments: skill.call(agent, arguments)

    def write(arguments: dict[str, Any]) -> Any:
        memory.writing()
        return skill.call(agent, arguments)
    return write


def _tool(name: str, description: str, schema: dict[str, Any], run: Callable[[dict[str, Any]], Any],
          read_only: bool) -> Tool:
    def call(**arguments: Any) -> str:
        try:
            result = run(arguments)
        except AgentOSError as exc:  # the client sees the message; anything else stays a server-side crash
            raise ToolError(str(exc)) from exc
        # one JSON text, lists included
        return json.dumps(result, ensure_ascii=False, default=str, allow_nan=False)

    return Tool(fn=call, name=name, description=description, parameters=schema,
                fn_metadata=FuncMetadata(arg_model=_AsSent), is_async=False,
                annotations=ToolAnnotations(read_only_hint=read_only))
