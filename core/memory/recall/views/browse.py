"""Browsing by time: what happened in a window, newest first, with no query to rank by, each thing once (the
records of the same words are folded into the newest: :mod:`core.memory.recall.views.folding`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.errors import ValidationError
from core.memory.recall.views import supersession
from core.memory.recall.docs import Doc, DocIndex, Filters
from core.memory.recall.query import check_scope, hit, time_bounds
from core.memory.recall.when import parse_time
from core.memory.recall.search import Candidate, Tuning
from core.memory.recall.views.folding import fold


@dataclass(frozen=True)
class WindowRequest:
    """A validated listing of a time window."""

    n_results: int
    filters: Filters


def check_window(n_results: Any, kind: Any, since: Any, until: Any, now: Any = None,
                 **ranking: Any) -> WindowRequest:
    """Validate a listing of what happened between ``since`` and ``until`` (relative phrases read from
    ``now``, default the time of the call); raise ValidationError.

    ``ranking`` holds the recall arguments that only a query uses (``min_score``, ``recency_days``,
    ``explain``): given here, they are refused rather than ignored.
    """
    if since is None and until is None:
        raise ValidationError("give a query, or a time window to list (since and/or until, e.g. since='last "
                              "week')")
    given = [name for name, value in ranking.items() if value not in (None, False)]
    if given:
        raise ValidationError(f"{', '.join(given)}: only a recall with a query takes this (a time window is "
                              "listed newest first, not ranked)")
    moment = parse_time(now, "now") if now is not None else None
    return WindowRequest(n_results, Filters(check_scope(n_results, kind), *time_bounds(since, until, moment)))


def browse(request: WindowRequest, docs: DocIndex, secrets: list[str],
           tuning: Tuning) -> list[dict[str, Any]]:
    """The newest memories of the window as ``recall_memory`` returns results, with ``score`` None (a listing
    is not ranked), ``superseded_by`` on a superseded version and ``also`` on one that other records of the
    same words were folded into."""
    groups = window_groups(docs, request.filters, request.n_results, tuning)
    later = supersession.successors(docs.db.conn, [group[0] for group in groups])
    return [{**hit(Candidate(head, superseded_by=later.get(head.id), also=[d.id for d in rest]), secrets),
             "score": None} for head, *rest in groups]


def window_groups(docs: DocIndex, filters: Filters, n_results: int, tuning: Tuning) -> list[list[Doc]]:
    """The ``n_results`` newest groups of records of the window, each newest first.

    Reads more of the window until the last group is complete: a record older than its first by more than
    ``tuning.fold_within_s`` cannot join it.
    """
    limit = max(50, 4 * n_results)
    while True:
        found = docs.window(filters, limit)
        groups = [[found[i] for i in group]
                  for group in fold(found, tuning.fold_within_s, tuning.collapse_jaccard, n_results)]
        if len(found) < limit:
            return groups[:n_results]
        if (
            len(groups) > n_results
            and _seconds(found[-1]) < _seconds(groups[n_results - 1][0]) - tuning.fold_within_s
        ):
            return groups[:n_results]
        limit *= 4


def _seconds(doc: Doc) -> float:
    return datetime.fromisoformat(doc.occurred_at.replace("Z", "+00:00")).timestamp()
