"""Skill store_memory: keep a note in long-term memory, with who said it and when."""

from __future__ import annotations

from typing import Any, Optional

from core.errors import ToolArgumentError
from core.memory import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    *,
    content: str,
    metadata: Optional[dict[str, Any]] = None,
    occurred_at: Optional[str] = None,
    expires_at: Optional[str] = None,
) -> dict[str, Any]:
    """Keep a note in long-term memory for recall_memory.

    Args:
        occurred_at: when it happened, e.g. 2023-05-08.
        expires_at: when to forget it.
    """
    if not isinstance(content, str) or not content.strip():
        raise ToolArgumentError("store_memory: content must be a non-empty string")
    memory_id = shared_manager(agent_name).store_memory(content, metadata, occurred_at=occurred_at,
                                                    expires_at=expires_at)
    return {"id": memory_id}


SKILL_METADATA = skill_metadata(execute, name="store_memory")
