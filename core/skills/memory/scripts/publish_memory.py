"""Skill publish_memory: share a finding with the other agents of a memory space."""

from __future__ import annotations

from typing import Any, Optional

from core.errors import ToolArgumentError
from core.memory.shared import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    *,
    space: str,
    content: str,
    metadata: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Publish a memory to a shared space, where every member agent can recall it (it records you as its author). Only for what the other agents should know; never a secret.

    Args:
        space: the space's name, e.g. "research" (you must be a read-write member).
        content: what to share, in plain words.
        metadata: optional details returned with it, e.g. {"source": "https://..."}.
    """
    if not isinstance(space, str) or not space.strip():
        raise ToolArgumentError("publish_memory: space must be a space's name, e.g. \"research\"")
    if not isinstance(content, str) or not content.strip():
        raise ToolArgumentError("publish_memory: content must be a non-empty string")
    return {"id": shared_manager(agent_name).publish(space, content, metadata)}


SKILL_METADATA = skill_metadata(execute, name="publish_memory")
