"""Browsing by time: what happened in a window, newest first, with no query to rank by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import ValidationError
from core.memory.recall.views import supersession
from core.memory.recall.docs import DocIndex, Filters
from core.memory.recall.query import check_scope, hit, time_bounds
from core.memory.recall.when import parse_time
from core.memory.recall.search import Candidate


@dataclass(frozen=True)
class WindowRequest:
    """A validated listing of a time window."""

    n_results: int
    filters: Filters


def check_window(n_results: Any, kind: Any, since: Any, until: Any, now: Any = None, **ranking: Any) -> WindowRequest:
    """Validate a listing of what happened between ``since`` and ``until`` (relative phrases read from ``now``,
    default the time of the call); raise ValidationError.

    ``ranking`` holds the recall arguments that only a query uses (``min_score``, ``recency_days``,
    ``explain``): given here, they are refused rather than ignored.
    """
    if since is None and until is None:
        raise ValidationError("give a query, or a time window to list (since and/or until, e.g. since='last week')")
    given = [name for name, value in ranking.items() if value not in (None, False)]
    if given:
        raise ValidationError(f"{', '.join(given)}: only a recall with a query takes this (a time window is "
                              "listed newest first, not ranked)")
    moment = parse_time(now, "now") if now is not None else None
    return WindowRequest(n_results, Filters(check_scope(n_results, kind), *time_bounds(since, until, moment)))


def browse(request: WindowRequest, docs: DocIndex, secrets: list[str]) -> list[dict[str, Any]]:
    """The newest memories of the window as ``recall_memory`` returns results, with ``score`` None (a listing
    is not ranked) and ``superseded_by`` on a superseded version."""
    found = docs.window(request.filters, request.n_results)
    later = supersession.successors(docs.db.conn, found)
    return [{**hit(Candidate(doc, superseded_by=later.get(doc.id)), secrets), "score": None} for doc in found]
