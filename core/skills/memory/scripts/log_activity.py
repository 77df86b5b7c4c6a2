"""Skill log_activity: append a thought, observation or note to LOG.md."""

from __future__ import annotations

from typing import Any, Literal

from core.memory import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    content: str,
    entry_type: Literal["THOUGHT", "TOOL_USE", "USER_FEEDBACK", "ERROR", "SYSTEM"] = "THOUGHT",
    metadata: dict | None = None,
) -> dict[str, Any]:
    """Add an entry to your log (LOG.md), e.g. a decision and its reason."""
    seq = shared_manager(agent_name).append_log(entry_type, content, metadata)
    return {"logged": True, "seq": seq}


SKILL_METADATA = skill_metadata(execute, name="log_activity")
