"""Skill forget_memory: forget a memory by id, or what matches a query and/or happened before a time."""

from __future__ import annotations

from typing import Any, Optional

from core.errors import ToolArgumentError
from core.memory.shared import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    *,
    memory_id: Optional[str] = None,
    query: Optional[str] = None,
    before: Optional[str] = None,
) -> dict[str, Any]:
    """Forget what the user asks: one memory by id (from recall_memory), or all matching a query and/or before a date.

    Args:
        before: a date, e.g. 2023-05-01.
    """
    if memory_id is None and query is None and before is None:
        raise ToolArgumentError("forget_memory: give memory_id, or a query and/or a before date")
    manager = shared_manager(agent_name)
    if memory_id is not None:
        forgotten = [memory_id] if manager.forget_memory(memory_id) else []
    else:
        forgotten = manager.forget_memories(query=query, before=before)
    return {"forgotten": forgotten, "count": len(forgotten)}


SKILL_METADATA = skill_metadata(execute, name="forget_memory")
