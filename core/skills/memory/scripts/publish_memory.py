"""Skill publish_memory: share a finding with the other agents of a memory space."""

from __future__ import annotations

from typing import Any, Optional

from core.errors import ToolArgumentError
from core.memory import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    *,
    space: str,
    content: str,
    metadata: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Share a note with the agents of a memory space you may write to (never a secret)."""
    if not isinstance(space, str) or not space.strip():
        raise ToolArgumentError("publish_memory: space must be a space's name, e.g. \"research\"")
    if not isinstance(content, str) or not content.strip():
        raise ToolArgumentError("publish_memory: content must be a non-empty string")
    return {"id": shared_manager(agent_name).publish(space, content, metadata)}


SKILL_METADATA = skill_metadata(execute, name="publish_memory")
