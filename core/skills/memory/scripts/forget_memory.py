"""Skill forget_memory: forget a memory by id, or the memories that say every word of a query (or are that
close in meaning to it) and/or happened before a time; each is returned with why it was taken."""

from __future__ import annotations

from typing import Any, Optional

from core.errors import ToolArgumentError
from core.memory import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    *,
    memory_id: Optional[str] = None,
    query: Optional[str] = None,
    before: Optional[str] = None,
    meaning_above: Optional[float] = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Forget what the user asks: one memory by id (from recall_memory), or what says every word of a query
    and/or happened before a date.

    Args:
        before: a date, e.g. 2023-05-01 or '30 days ago'.
        meaning_above: instead, what is closer in meaning to query (0-1).
        dry_run: only list them, with why.
    """
    if memory_id is None and query is None and before is None:
        raise ToolArgumentError("forget_memory: give memory_id, or a query and/or a before date")
    if memory_id is not None and (query is not None or before is not None):
        raise ToolArgumentError("forget_memory: give memory_id, or a query and/or a before date, not both")
    manager = shared_manager(agent_name)
    if memory_id is not None:
        forgotten = manager.forget_memories(ids=[memory_id], dry_run=dry_run)
    else:
        forgotten = manager.forget_memories(query=query, before=before, meaning_above=meaning_above,
                                            dry_run=dry_run)
    return forgotten.as_dict()


SKILL_METADATA = skill_metadata(execute, name="forget_memory")
