"""A new agent's folders, its AGENT.md and its memory stack; what ``agentos init`` and
``python -m core.memory_initializer`` create."""

from __future__ import annotations

from pathlib import Path

from core.memory.manager import MemoryManager
from core.paths import AgentPaths

AGENT_TEMPLATE = """# {name}

## Identity
You are {name}, an AgentOS agent. Your memory lives in files: NOW.md (what you are doing),
LOG.md (what you did), facts and long-term recall. You survive restarts.

## Rules
- Update your status with update_status whenever the objective or the plan changes.
- Save facts about the user as soon as you learn them (save_fact); secrets go in category secret.
- When the user says "continue", resume from NOW.md instead of starting over.

## Capabilities
Memory skills (update_status, log_activity, save_fact, get_fact, recall_memory, store_memory,
forget_memory), the memory tool, and files in your workspace.
"""


def initialize_agent_memory(agent_name: str) -> list[Path]:
    """Create the folders and memory files of ``agent_name`` that are missing; return them."""
    paths = AgentPaths.for_agent(agent_name)
    created = paths.ensure_dirs(paths.root, paths.config_dir, paths.skills_dir, paths.directives_dir,
                                paths.workspace_dir)
    agent_file = paths.config_dir / "AGENT.md"
    if not agent_file.exists():
        agent_file.write_text(AGENT_TEMPLATE.format(name=agent_name), encoding="utf-8")
        created.append(agent_file)
    with MemoryManager(agent_name) as manager:
        created += manager.created
    return created


def report(agent_name: str, created: list[Path]) -> str:
    """What :func:`initialize_agent_memory` created, as lines of text."""
    paths = AgentPaths.for_agent(agent_name)
    if not created:
        return f"Agent {agent_name!r} is already initialised in {paths.root}: nothing to create."
    lines = [f"Initialised agent {agent_name!r} in {paths.root}:"]
    lines += [f"  created {path.relative_to(paths.root.parent)}{'/' if path.is_dir() else ''}"
              for path in created]
    return "\n".join(lines)
