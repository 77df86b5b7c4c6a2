"""One recall, from its arguments to its results: validation, both searches, ranking, redaction.

A question whose answer is spread out ("how many weddings did I attend this year", "which trip did I take
first", "how many days passed between the workshop and the planting") needs several memories, usually from
several sessions, and the rest of its answer often scores far below its best piece (a remark in passing
inside a turn about something else). A question that asks to count, add up, compare or order
(:func:`spread_of`) keeps, with the default ``min_score``, every result its best one brings along
(``Tuning.spread_floor``) instead of stopping at a share of the best (``Tuning.relative_floor``): widened,
never filtered; an explained recall says so (``spread``).

Used by an agent's cold tier (which first catches up with what was just written) and by
readers that write nothing, such as the inspector (a read-only cold store and a read-only
memory.db): the same request gives both the same ranking.
"""

from __future__ import annotations

import logging
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from core.errors import BackendError, ValidationError, shown
from core.memory.recall import search as recall_search
from core.memory.recall.lance_table import where_clause
from core.memory.recall.store import ColdStore
from core.memory.storage.facts import redact
from core.memory.files.log_format import check_text, utc_timestamp
from core.memory.recall.docs import KINDS, DocIndex, Filters
from core.memory.recall.views import supersession
from core.memory.recall.views.explain import LeftOut, Trace, query_words, why
from core.memory.recall.search import Candidate, Tuning
from core.memory.recall.when import parse_time, time_window, without_counts_back
from core.durable import leave_ctrl_c_to_the_main_thread

log = logging.getLogger(__name__)

MAX_RESULTS = 100
MAX_RECENCY_DAYS = 1_000_000
"""The longest half-life of a score, in days (some 2,700 years: any a person means, and finite)."""


_CUES = re.compile(
    r"\b(how many|how much|how long|how old|in total|total|altogether|combined|sum of|average|"
    r"all the|all of my|each of|every time|"
    r"first|most recent(?:ly)?|earliest|latest|the order|order of|before|after|between|since|"
    r"compared? to|compared with|difference|more than|less than|longer|shorter|older|younger|"
    r"increase|decrease|change[sd]?|still)\b",
    re.IGNORECASE)
"""Words that ask to count, add up, compare or order what was said at several times."""


@dataclass(frozen=True)
class Spread:
    """A question whose answer is spread out, and the words that marked it."""

    cue: str
    """The words that marked it ("how many", "first", "between"), lower case."""

    def as_dict(self, relative_floor: float) -> dict[str, Any]:
        """What an explained recall says of the widened search."""
        return {"cue": self.cue, "relative_floor": relative_floor}


def spread_of(query: str) -> Spread | None:
    """Whether ``query`` asks to count, add up, compare or order (None: it does not)."""
    cue = _CUES.search(query)
    return None if cue is None else Spread(cue.group(1).lower())


@dataclass(frozen=True)
class RecallRequest:
    """A validated recall."""

    text: str
    n_results: int
    filters: Filters
    min_score: float
    recency_days: float | None
    now: datetime | None = None
    """The moment the query speaks from ("last week", ``recency_days``); None: the time of the call."""
    relative: bool = False
    """``min_score`` is the default, lowered for a query whose best result passes it
    (``search.threshold``)."""
    spread: Spread | None = None
    """Set for a question whose answer is spread out ("how many", "which first"): the default ``min_score``
    keeps every result its best one brings along (:func:`spread_of`)."""


def check_recall(
    query: Any, n_results: Any, kind: str | list[str] | None = None, since: Any = None, until: Any = None, *,
    min_score: Any = None, recency_days: Any = None, default_min_score: float, now: Any = None,
) -> RecallRequest:
    """Validate the arguments of a recall (``min_score`` None: ``default_min_score``, lowered for a query
    whose best result passes it); raise ValidationError."""
    text = check_text(query, "query").strip()
    if not text:
        raise ValidationError("query must not be empty")
    kinds = check_scope(n_results, kind)
    threshold = default_min_score if min_score is None else min_score
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValidationError(f"min_score must be a number from 0 to 1, got {shown(min_score)}")  # NaN too
    if recency_days is not None and (isinstance(recency_days, bool)
                                     or not isinstance(recency_days, (int, float))
                                     or not 0 < recency_days <= MAX_RECENCY_DAYS):
        raise ValidationError("recency_days must be a number of days above 0 and at most "
                              f"{MAX_RECENCY_DAYS:,}, got {shown(recency_days)}")
    moment = parse_time(now, "now") if now is not None else None
    filters = Filters(kinds, *time_bounds(since, until, moment))
    return RecallRequest(text, n_results, filters, float(threshold), recency_days, moment,
                         relative=min_score is None, spread=spread_of(text))


def check_scope(n_results: Any, kind: Any) -> tuple[str, ...] | None:
    """Check ``n_results`` and ``kind`` (a kind or a list of them); return the kinds (None: every kind)."""
    if isinstance(n_results, bool) or not isinstance(n_results, int) or not 1 <= n_results <= MAX_RESULTS:
        raise ValidationError(f"n_results must be an integer from 1 to {MAX_RESULTS}")
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is not None and (not isinstance(kinds, list) or not kinds or any(k not in KINDS for k in kinds)):
        raise ValidationError(f"kind must be one of {', '.join(KINDS)} (or a list of them), got "
                              f"{shown(kind)}")
    return tuple(kinds) if kinds else None


def time_bound(value: Any, what: str, now: datetime | None = None) -> str | None:
    """A ``since``/``until`` bound (datetime, ISO-8601, a written date or a relative phrase such as
    "last week", read from ``now``: ``since`` is the period's start, ``until`` its end) in the store's UTC
    format."""
    if value is None:
        return None
    moment = time_window(value, what, "start" if what == "since" else "end", now)
    if what == "until" and _is_day(value, moment):  # until="2023-05-31" takes in all of that day
        moment += timedelta(days=1) - timedelta(microseconds=1)
    return utc_timestamp(moment)


def _is_day(value: Any, moment: datetime) -> bool:
    """Whether ``value`` names a day without a time of day ("2023-05-31", "31 May 2023")."""
    return isinstance(value, str) and ":" not in value and moment.time() == datetime.min.time()


def time_bounds(since: Any, until: Any, now: datetime | None = None) -> tuple[str | None, str | None]:
    """Both bounds of a time window; raise ValidationError if ``until`` is before ``since``."""
    start, end = time_bound(since, "since", now), time_bound(until, "until", now)
    if start and end and end < start:
        raise ValidationError(f"until ({until!r}, {end}) is before since ({since!r}, {start}): "
                              "give the earlier date as since")
    return start, end


def candidates(
    text: str, filters: Filters, docs: DocIndex, store: ColdStore | None, tuning: Tuning,
    trace: Trace | None = None,
) -> list[Candidate]:
    """Every candidate for ``text`` scored, best first: the word matches of ``docs`` and the nearest
    vectors of ``store`` (no store, an empty one or an embedder that fails: by words only, see
    ``Tuning.unknown_vector``).

    The query is embedded and the vectors searched in a thread of their own while this one runs the
    word search and reads its matches: both wait mostly outside the GIL (ONNX Runtime, LanceDB,
    SQLite), so a recall takes about as long as the longer of the two. ``trace`` (an explained recall)
    records what both searches met.
    """
    if store is None:
        return _ranked(text, filters, docs, tuning, None, trace)
    where = where_clause(filters.kinds, filters.since, filters.until, filters.source_prefix)
    with ThreadPoolExecutor(1, thread_name_prefix="recall-vectors",
                            initializer=leave_ctrl_c_to_the_main_thread) as pool:
        # The vectors are searched without "two weeks ago": when is the time evidence's to weigh, and a
        # memory that says "three weeks ago" speaks of another day.
        vectors = pool.submit(nearest, without_counts_back(text), store, tuning.depth, where,
                              tuning.piece_share)
        return _ranked(text, filters, docs, tuning, vectors, trace)


def nearest(text: str, store: ColdStore, depth: int, where: str | None,
            piece_share: float = Tuning.piece_share) -> list[tuple[str, float]] | None:
    """The ``depth`` memories nearest in meaning to ``text`` as ``(id, similarity)``, best first; None when no
    vector search can run (the embedder failed, or no memory has its vector yet).

    A memory's similarity is its own vector's cosine, raised by ``piece_share`` of what its best sentence (or
    chunk) adds to it (see ``Tuning.piece_share``).
    """
    try:
        if not store.may_have_rows():  # nothing to compare with: the model is not even loaded
            return None
        vector = store.embedder.embed([text])[0]
    except BackendError as exc:
        log.warning("recall by words only: the embedder failed: %s", exc)
        return None
    hits = [(row["id"], similarity(row, piece_share))
            for row in store.nearest(vector, depth, where, columns=("id",))]
    # Empty (no vector yet, or none passes the filters): what the vector search would say is unknown.
    return sorted(hits, key=lambda hit: hit[1], reverse=True) or None


def similarity(hit: dict[str, Any], piece_share: float) -> float:
    """A folded vector hit's similarity: its own row's cosine plus ``piece_share`` of what its best row
    (a piece's, or its own) adds to it."""
    own, best = 1.0 - hit["own_distance"], 1.0 - hit["_distance"]
    return own + piece_share * max(0.0, best - own)


def _ranked(
    text: str, filters: Filters, docs: DocIndex, tuning: Tuning,
    vectors: "Future[list[tuple[str, float]] | None] | None", trace: Trace | None = None,
) -> list[Candidate]:
    word_hits = docs.words(text, tuning.depth, filters)
    found = docs.get([i for i, _ in word_hits], filters)
    vector_hits = vectors.result() if vectors is not None else None
    found.update(docs.get([i for i, _ in vector_hits or () if i not in found], filters))
    if trace is not None:
        trace.record(word_hits, vector_hits, found)
    return supersession.demote(docs.db.conn, recall_search.rank(text, found, vector_hits, word_hits, tuning))


def results(
    request: RecallRequest, ranked: list[Candidate], tuning: Tuning, secrets: list[str],
) -> list[dict[str, Any]]:
    """The best of ``ranked`` for ``request`` as ``recall_memory`` returns them, secrets redacted."""
    ranked = recall_search.rescore_time(ranked, request.text, request.now, tuning)
    chosen = recall_search.select(ranked, request.n_results, request.min_score, widened(request, tuning),
                                  request.recency_days, request.now, request.relative)
    return [hit(c, secrets) for c in chosen]


def widened(request: RecallRequest, tuning: Tuning) -> Tuning:
    """The tuning that selects the results of ``request``: for a question whose answer is spread out, the
    default ``min_score`` keeps what its best result brings along down to ``Tuning.spread_floor`` of it."""
    return tuning if request.spread is None else replace(tuning, relative_floor=tuning.spread_floor)


def hit(cand: Candidate, secrets: list[str]) -> dict[str, Any]:
    """One result as ``recall_memory`` returns it, secrets redacted, marked if a later version supersedes
    it."""
    found = supersession.marked(recall_search.as_result(cand), cand.superseded_by)
    return {**found, "content": redact(found["content"], secrets),
            "metadata": redact(found["metadata"], secrets)}


def explained(
    request: RecallRequest, ranked: list[Candidate], trace: Trace, docs: DocIndex, tuning: Tuning,
    secrets: list[str],
) -> dict[str, Any]:
    """``{results, left_out}``: the results of :func:`results`, each with ``why`` it ranked, and what the
    searches met that is not among them (see :mod:`core.memory.recall.views.explain`); for a question whose
    answer is spread out also ``spread``: the words that marked it and how its search was widened."""
    left = LeftOut(secrets)
    ranked = recall_search.rescore_time(ranked, request.text, request.now, tuning)
    chosen = recall_search.select(ranked, request.n_results, request.min_score, widened(request, tuning),
                                  request.recency_days, request.now, request.relative, dropped=left.dropped())
    left.superseded(ranked, chosen)
    left.unfound(docs.db.conn, trace.unfound)
    words, weighed = query_words(request.text, docs.terms), docs.weights(request.text)[0]
    dates = source_dates(docs, chosen)
    return {"results": [{**hit(c, secrets), "why": why(c, trace, words, docs.terms, tuning, weighed, dates)}
                        for c in chosen],
            "left_out": left.as_dict(),
            **({"spread": request.spread.as_dict(tuning.spread_floor)} if request.spread is not None else {})}


def source_dates(docs: DocIndex, chosen: list[Candidate]) -> dict[str, str]:
    """When each entry that a chosen memory was learned from happened (those still indexed)."""
    sources = [s for c in chosen for s in (c.doc.metadata.get("extracted") or {}).get("sources", [])]
    return {doc_id: doc.occurred_at for doc_id, doc in docs.get(sources).items()} if sources else {}


def recall(
    request: RecallRequest, docs: DocIndex, store: ColdStore | None, tuning: Tuning, secrets: list[str],
    explain: bool = False,
) -> list[dict[str, Any]] | dict[str, Any]:
    """Search ``docs`` and ``store`` for ``request`` (nothing is indexed first); ``explain``: see
    :func:`explained`."""
    if not explain:
        return results(request, candidates(request.text, request.filters, docs, store, tuning), tuning,
                       secrets)
    trace = Trace()
    ranked = candidates(request.text, request.filters, docs, store, tuning, trace)
    return explained(request, ranked, trace, docs, tuning, secrets)

