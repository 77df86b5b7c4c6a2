"""The tools an agent's model is offered in one run, behind one ``call(name, arguments)``.

Three kinds: the memory skills (the agent is bound here, never by the model),
the workspace file tools, and the conversation provider's ``memory`` tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from core.errors import ToolArgumentError, UnknownSkillError
from core.paths import AgentPaths
from core.skills.base import function_arguments, skill_metadata
from core.skills.registry import discover
from core.engine.toolbox.workspace import Workspace

READ_ONLY = frozenset({"get_fact", "recall_memory", "read_file", "list_files"})
"""Tools without side effects: a resumed turn may simply run them again."""
CORE_TOOLS = ("save_fact", "get_fact", "recall_memory", "update_status", "store_memory")
"""The tools offered when the model's window cannot hold them all: the memory skills the system prompt
asks for first (facts, recall, NOW.md) and notes for recall (see docs/context-window.md)."""


@dataclass(frozen=True)
class Tool:
    """One tool: its definition for the model and the function that runs it."""

    name: str
    definition: dict[str, Any]
    """Ollama/OpenAI tool definition."""
    run: Callable[[dict[str, Any]], Any]
    """Runs the tool with the model's (unchecked) arguments."""


class Toolbox:
    """Every tool offered to one agent's model."""

    def __init__(self, tools: list[Tool], held_back: tuple[str, ...] = ()) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.held_back = held_back
        """Tools the agent has but this model's window leaves out (see :meth:`core`)."""

    def core(self) -> Toolbox:
        """The :data:`CORE_TOOLS` of this toolbox; the others held back."""
        kept = [tool for name, tool in self.tools.items() if name in CORE_TOOLS]
        return Toolbox(kept, tuple(name for name in self.tools if name not in CORE_TOOLS))

    def definitions(self) -> list[dict[str, Any]]:
        """The tool definitions, as sent with each chat call."""
        return [tool.definition for tool in self.tools.values()]

    def call(self, name: str, arguments: Any) -> Any:
        """Run a tool.

        Raises:
            UnknownSkillError: no tool of that name is offered (the message lists them).
            ToolArgumentError: the arguments do not fit the tool's schema.
        """
        tool = self.tools.get(name)
        if name in self.held_back:
            raise UnknownSkillError(f"{name} is not offered: this model's window holds only the core tools "
                                    f"({', '.join(sorted(self.tools))})")
        if tool is None:
            raise UnknownSkillError(f"no tool named {name!r}; available: {', '.join(sorted(self.tools))}")
        return tool.run(arguments)

    @staticmethod
    def is_read_only(name: str) -> bool:
        """True if running the tool twice is harmless."""
        return name in READ_ONLY


def skill_tools(agent_name: str) -> list[Tool]:
    """The agent's skills as tools, with ``agent_name`` bound."""
    return [
        Tool(skill.name, skill.tool_definition(), lambda args, s=skill: s.call(agent_name, args))
        for skill in discover(agent_name).values()
    ]


def workspace_tools(paths: AgentPaths) -> list[Tool]:
    """read_file, write_file and list_files, confined to the agent's workspace."""
    workspace = Workspace(paths.workspace_dir)
    workspace.sweep()
    tools = []
    for function in (workspace.read_file, workspace.write_file, workspace.list_files):
        name = function.__name__
        arguments = function_arguments(function, name)
        description = skill_metadata(function, name)["description"]
        definition = {"type": "function", "function": arguments.tool_function(name, description)}
        tools.append(Tool(name, definition, lambda args, f=function, a=arguments: f(**a.validate(args))))
    return tools


def build_toolbox(paths: AgentPaths, extra: list[Tool] | None = None) -> Toolbox:
    """The agent's skills, its workspace tools and any ``extra`` tools (e.g. the memory tool)."""
    tools = skill_tools(paths.name) + workspace_tools(paths) + list(extra or [])
    names = [tool.name for tool in tools]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ToolArgumentError(f"two tools share the name(s) {', '.join(sorted(duplicates))}")
    return Toolbox(tools)
