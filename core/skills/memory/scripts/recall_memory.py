"""Skill recall_memory: search everything the agent remembers (log, archives, notes, facts, conversations) and
its memory spaces by meaning and words."""

from __future__ import annotations

from typing import Any, Literal, Optional

from core.errors import ToolArgumentError
from core.memory import shared_reader
from core.skills.base import skill_metadata

MAX_RESULTS = 20


def execute(
    agent_name: str,
    *,
    query: Optional[str] = None,
    n_results: int = 3,
    kind: Optional[Literal["log", "log_archive", "fact", "note", "summary", "message"]] = None,
    since: Optional[str] = None,
    until: Optional[str] = None,
    spaces: Optional[list[str]] = None,
    explain: bool = False,
) -> list[dict[str, Any]] | dict[str, Any]:
    """Search long-term memory (log, facts, notes, past conversations, shared spaces); results scored 0-1.

    Args:
        n_results: 1-20, default 3.
        since: a date, e.g. 2023-05-01.
        spaces: default all yours; [] none.
    """
    if isinstance(n_results, bool) or not isinstance(n_results, int) or not 1 <= n_results <= MAX_RESULTS:
        raise ToolArgumentError(f"recall_memory: n_results must be an integer from 1 to {MAX_RESULTS}")
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise ToolArgumentError("recall_memory: query must be a non-empty string (or left out, with "
                                "since/until, to list a time window)")
    if not isinstance(explain, bool):
        raise ToolArgumentError("recall_memory: explain must be true or false")
    found = shared_reader(agent_name).recall_memory(query, n_results=n_results, kind=kind, since=since,
                                                     until=until, spaces=spaces, explain=explain)
    # the ranking did not see every memory's meaning: say so with the results
    if not explain and found.warning:
        return {"results": list(found), "warning": found.warning}
    return found


SKILL_METADATA = skill_metadata(execute, name="recall_memory")
