"""Skill recall_memory: search everything the agent remembers (log, archives, notes, facts, conversations) and its memory spaces by meaning and words."""

from __future__ import annotations

from typing import Any, Literal, Optional

from core.errors import ToolArgumentError
from core.memory.shared import shared_manager
from core.skills.base import skill_metadata

MAX_RESULTS = 20


def execute(
    agent_name: str,
    *,
    query: str,
    n_results: int = 3,
    kind: Optional[Literal["log", "log_archive", "fact", "note", "summary", "message"]] = None,
    since: Optional[str] = None,
    until: Optional[str] = None,
    spaces: Optional[list[str]] = None,
) -> list[dict[str, Any]] | dict[str, Any]:
    """Search long-term memory: the log and its compacted history, saved facts, stored notes and past conversations. Use it when NOW, the recent log and the facts do not answer the question. Each result has a score from 0 to 1 and says where it came from. When memories stored just before are not fully indexed yet, the answer is {"results": [...], "warning": "..."}: recall again later for a complete ranking.

    Args:
        query: what to look for, in plain words, e.g. "stocks the user asked about".
        n_results: how many results to return (1-20).
        kind: only this kind: log (recent log entries), log_archive (old log entries), fact, note, summary or message.
        since: only what happened from this date on, e.g. "2023-05-01" or "8 May 2023".
        until: only what happened up to this date.
        spaces: the shared memory spaces to search too (default: every space you belong to; [] for your own memory only). A result from a space names its space and author.
    """
    if isinstance(n_results, bool) or not isinstance(n_results, int) or not 1 <= n_results <= MAX_RESULTS:
        raise ToolArgumentError(f"recall_memory: n_results must be an integer from 1 to {MAX_RESULTS}")
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError("recall_memory: query must be a non-empty string")
    found = shared_manager(agent_name).recall_memory(query, n_results=n_results, kind=kind, since=since,
                                                     until=until, spaces=spaces)
    if found.warning:  # the ranking did not see every memory's meaning: the caller is told with the results
        return {"results": list(found), "warning": found.warning}
    return found


SKILL_METADATA = skill_metadata(execute, name="recall_memory")
