"""An agent's recall across its own memory and the spaces it belongs to, merged by score.

``spaces=None`` searches every space the agent is a member of, a list names spaces (each must
exist and count the agent among its members: a space it may not read is refused, never silently
empty), ``[]`` none. Space memories are scored by the ranking of the agent's own recall
(:mod:`core.memory.recall.search`), so one ``min_score`` means the same for both, and every hit
says where it came from: ``space`` (None for the agent's own memory) and ``author``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from core.errors import ValidationError, shown
from core.memory.recall import search as recall_search
from core.memory.recall.views.explain import query_words, why
from core.memory.recall.query import check_recall, widened
from core.memory.recall.search import Tuning
from core.memory.spaces import members as members_file
from core.memory.spaces.paths import SpacePaths
from core.memory.spaces.opened import opened
from core.memory.spaces.space import spaces_of
from core.memory.secrets.redaction import Redactor


@dataclass(frozen=True)
class Asker:
    """The agent whose recall searches the spaces, and what of its own memory the merge needs (a
    ``MemoryManager`` or a ``MemoryReader`` hands it over; the spaces never see the agent's memory itself)."""

    agent: str
    home: Path
    """The agents home, where the spaces are."""
    tuning: Tuning
    """The ranking of the agent's own recall: space memories are scored by it too."""
    default_min_score: float
    """``cold.min_score`` of the agent's config."""
    hidden: list[str]
    """The values of the agent's secrets and forgotten facts, never shown in a space's hit."""
    terms_of: Callable[[str], list[str]]
    """The terms the agent's word index stores for a word (an explained recall's words)."""


def spaces_to_search(agent: str, home: Path, spaces: Any) -> list[str]:
    """The spaces a recall with ``spaces`` searches, each checked readable by ``agent``.

    Raises:
        ValidationError: ``spaces`` is not None or a list of space names.
        UnknownSpaceError: a named space does not exist.
        PermissionDeniedError: ``agent`` is not a member of a named space.
    """
    if spaces is None:
        return spaces_of(agent, home)
    if isinstance(spaces, str) or not isinstance(spaces, (list, tuple)):
        raise ValidationError("spaces must be a list of space names (or None: every space of the agent), "
                              f"got {shown(spaces)}")
    for name in spaces:
        members_file.read(SpacePaths.for_space(name, home)).require_reader(agent)
    return list(dict.fromkeys(spaces))


def merged(asker: Asker, own: list[dict[str, Any]] | dict[str, Any], spaces: list[str], query: str | None,
           n_results: int, kind: Any, since: Any, until: Any, min_score: float | None,
           recency_days: float | None, now: Any = None) -> list[dict[str, Any]] | dict[str, Any]:
    """``own`` (the agent's recall) and the best hits of ``spaces``, best first, ``n_results`` at most; an
    explained ``own`` (``{results, left_out}``) gets the space hits explained too; a listed window (no
    ``query``) is the agent's own memory only."""
    if query is None:
        return own
    if isinstance(own, dict):
        return {**own, "results": _merged(asker, own["results"], spaces, query, n_results, kind, since, until,
                                          min_score, recency_days, now, explain=True)}
    return _merged(asker, own, spaces, query, n_results, kind, since, until, min_score, recency_days, now)


def _merged(asker: Asker, own: list[dict[str, Any]], spaces: list[str], query: str, n_results: int,
            kind: Any, since: Any, until: Any, min_score: float | None,
            recency_days: float | None, now: Any = None, explain: bool = False) -> list[dict[str, Any]]:
    for hit in own:
        hit["space"], hit["author"] = None, asker.agent
    request = check_recall(query, n_results, kind, since, until, min_score=min_score,
                           recency_days=recency_days,
                           default_min_score=asker.default_min_score, now=now)
    if not spaces or (request.filters.kinds and "note" not in request.filters.kinds):
        return own
    tuning = asker.tuning
    found = list(own)
    words = query_words(request.text, asker.terms_of) if explain else []
    for name in spaces:
        with opened(name, asker.home) as space:  # kept open between recalls
            ranked = space.candidates(asker.agent, request.text, tuning, request.filters.since,
                                      request.filters.until)
            # and every member's secrets (one saved after it was published)
            mask = space.redactor(asker.hidden)
        ranked = recall_search.rescore_time(ranked, request.text, request.now, tuning)
        for cand in recall_search.select(ranked, n_results, request.min_score, widened(request, tuning),
                                         request.recency_days, request.now, request.relative):
            found.append(_result(name, cand, mask))
            if explain:
                found[-1]["why"] = mask(why(cand, None, words, asker.terms_of, tuning))
    found.sort(key=lambda hit: hit["score"], reverse=True)
    return found[:n_results]


def _result(space: str, cand: recall_search.Candidate, mask: Redactor) -> dict[str, Any]:
    hit = recall_search.as_result(cand)
    seq = int(hit["id"].rsplit(":", 1)[1])
    return {**hit, "content": mask(hit["content"]), "metadata": mask(hit["metadata"]),
            "where": {"space": space, "seq": seq}, "space": space, "author": cand.doc.speaker}
