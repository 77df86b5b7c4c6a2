"""Ranking for recall: words and meaning fused into one score in [0, 1].

For a query, two candidate lists are gathered: the memories whose words match
(SQLite FTS5, BM25, Porter stems) and the memories nearest in meaning
(LanceDB, cosine of all-MiniLM-L6-v2 vectors of the memory with its speaker
and the turn before it, and of each of its sentences). Each candidate gets
five evidence features:

- ``vector``: the cosine similarity to the query, raised toward its best sentence's (``Tuning.piece_share``);
- ``words``: the BM25 score as a share of what one match of every query word scores;
- ``word_rank``: its rank among the word matches (BM25's scale moves with the query, its order does not);
- ``speaker``: the query names the person who said it;
- ``informative``: how much the memory says (its distinct content words, up to
  ``Tuning.informative_words``): "That sounds amazing!" says nothing a question
  could ask about, "I took a pottery class yesterday and made a bowl" does.

The score is the logistic function of their weighted sum. The weights were
measured on the generated conversations of ``scripts/bench_recall_quality.py``
and the real ones of ``scripts/bench_longmemeval.py`` (docs/recall.md and
docs/benchmarks.md list what each feature adds). Only the word rank looks at
the other results, and only word matches get it, so nonsense queries ("zzzz
qqqq"), which match no word, stay below the default ``min_score``. The default
is set per query (:func:`threshold`): the rest of a query's evidence often
scores far below its best on real chats.

Facts get a bonus (a fact is the curated, current value: it outranks an older
note that contradicts it), the records of one thing are folded into one result
(the same words kept in several tiers, and near-duplicates: see
:mod:`core.memory.recall.views.folding`), and an optional recency half-life
favours newer memories.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from core.memory.recall.docs import STOP_WORDS, Doc
from core.memory.recall.views.folding import fold
from core.memory.recall.when import query_times

_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Tuning:
    """The ranking's parameters (fitted on the recall benchmark; see the README)."""

    depth: int = 100
    """Candidates taken from each of the word and vector searches."""
    bias: float = -6.5
    vector: float = 13.0
    """The weight of the closeness in meaning (``piece_share`` of a sentence's evidence included: 11 before
    sentences had vectors of their own; with them, 13 lost no type at any k on LongMemEval, 11 did)."""
    piece_share: float = 0.7
    """How much of what a memory's best sentence (or chunk) adds to its own vector's cosine counts: a turn is
    found by a remark in passing ("By the way, I just attended a workshop at the library") without a long turn
    that says many things winning by its best sentence alone (all of it, the best of the two: 1.0, cost
    single-session questions a result at k = 5 on LongMemEval; docs/benchmarks.md)."""
    words: float = 2.2
    word_rank: float = 2.0
    """Added to the evidence of the best word matches, ``word_rank_k / (word_rank_k + r)`` of it for the
    match ranked ``r`` (0: the best): BM25's scale changes with the query (a long question's best match
    scores a small share of its words), its order does not. Only word matches get it, so a query whose
    words match nothing (nonsense) gains nothing."""
    word_rank_k: float = 10.0
    speaker: float = 2.2
    informative: float = 2.0
    informative_words: int = 12
    """Distinct content words at which a memory counts as fully informative."""
    fact_bonus: float = 1.5
    """Added to a fact's evidence: a saved fact is the current value."""
    unknown_vector: float = 0.35
    """The closeness in meaning assumed for word matches when no vector search could run (the embedder
    is down, or no memory has its vector yet): that of a memory that shares words but little meaning,
    so that only strong word matches pass the default ``min_score``."""
    relative_floor: float = 0.05
    """With the default ``min_score``, a query whose best result passes it also keeps the results scoring at
    least this share of the best: the score's scale is not the same in every store (long turns of real
    chats score lower than short ones), and the rest of a query's evidence often scores far below its
    best. A query whose best result does not pass (a query about nothing) still gets nothing."""
    time_fit: float = 2.0
    """Added to the evidence of a memory from the period the query names ("last month", "in March"),
    less the further outside it (see :func:`rescore_time`)."""
    time_day: float = 4.0
    """The same for a day the query counts back to ("two weeks ago", "a couple of days ago"): a count back
    names a day, more precisely than a period does."""
    collapse_jaccard: float = 0.9
    """Two results of the same speaker and session with this share of words in common are one."""
    spread_floor: float = 0.0
    """For a question whose answer is spread out ("how many", "which first": ``query.spread_of``),
    the share of its best result that the default ``min_score`` keeps instead of ``relative_floor``: 0,
    nothing its best result brings along is cut."""
    fold_within_s: float = 3600.0
    """Records of the same words (or near-duplicates) fold into one result when they happened within this
    many seconds of each other (a request's records span its run)."""


@dataclass
class Candidate:
    """One memory under consideration, with its evidence."""

    doc: Doc
    vector: float = 0.0
    words: float = 0.0
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    factors: dict[str, float] = field(default_factory=dict)
    """What multiplied the score after the evidence was weighed (``recency``, ``superseded``), for
    explanations."""
    superseded_by: tuple[str, str] | None = None
    """``(id, occurred_at)`` of the later version of this memory, if one supersedes it."""
    also: list[str] = field(default_factory=list)
    """The ids of the other records of the same thing, folded into this result."""


Dropped = Callable[[str, Candidate, "Candidate | None"], None]
"""Told of each candidate :func:`select` leaves out: ``(reason, candidate, the result it repeats or None)``,
reason ``below_min_score`` or ``duplicate``; only an explained recall passes one."""


def sigmoid(x: float) -> float:
    """The logistic function, safe for large ``|x|``."""
    return 1.0 / (1.0 + math.exp(-x)) if x > -60 else 0.0


def logit(p: float) -> float:
    """The inverse of :func:`sigmoid` (a score of 0 or 1 is taken as the most ``sigmoid`` gives)."""
    p = min(max(p, 1e-26), 1 - 1e-16)
    return math.log(p / (1 - p))


def rank(
    query: str, found: dict[str, Doc], vector_hits: Sequence[tuple[str, float]] | None,
    word_hits: Sequence[tuple[str, float]], tuning: Tuning,
) -> list[Candidate]:
    """Every candidate scored, best first (no threshold, no collapsing); ``found`` holds the docs of the
    hits that may be returned (those that pass the filters), ``vector_hits`` None: no vector search
    could run."""
    if vector_hits is None:
        vector_hits, floor = [], tuning.unknown_vector
    else:
        floor = min((v for _, v in vector_hits), default=0.0)
    cands: dict[str, Candidate] = {}
    for doc_id, similarity in vector_hits:
        if doc_id in found:
            cands[doc_id] = Candidate(found[doc_id], vector=similarity)
    word_order: dict[str, int] = {}
    stronger, last = 0, None
    for doc_id, strength in word_hits:
        if doc_id in found:
            # A memory the vector search did not return is at most as close as the last one it did.
            cand = cands.setdefault(doc_id, Candidate(found[doc_id], vector=floor))
            cand.words = strength
            if strength != last:  # equal matches share their rank
                stronger, last = len(word_order), strength
            word_order[doc_id] = stronger
    query_words = set(_WORD.findall(query.lower()))
    for cand in cands.values():
        speaker = 1.0 if cand.doc.speaker and _names_in(cand.doc.speaker, query_words) else 0.0
        # A summary restates other memories: its length says nothing about its own evidence.
        info = 0.0 if cand.doc.kind == "summary" else informative(cand.doc.text, tuning.informative_words)
        order = word_order.get(cand.doc.id)
        word_rank = 0.0 if order is None else tuning.word_rank_k / (tuning.word_rank_k + order)
        cand.features = {"vector": cand.vector, "words": cand.words, "word_rank": round(word_rank, 4),
                         "speaker": speaker, "informative": info}
        z = (tuning.bias + tuning.vector * cand.vector + tuning.words * cand.words + tuning.speaker * speaker
             + tuning.word_rank * word_rank + tuning.informative * info
             + (tuning.fact_bonus if cand.doc.kind == "fact" else 0.0))
        cand.score = sigmoid(z)
    return sorted(cands.values(), key=lambda c: c.score, reverse=True)


def rescore_time(cands: list[Candidate], query: str, now: datetime | None, tuning: Tuning) -> list[Candidate]:
    """``cands`` with the fit of their time to the query's (feature ``time``, weighted by ``tuning.time_fit``
    or, for a day counted back to, ``tuning.time_day``) added to their evidence, best first; unchanged when
    the query names no time."""
    asked = query_times(query, now)
    if not asked:
        return cands
    for cand in cands:
        when = _time(cand.doc.occurred_at)
        fits = [(a.fit(when), tuning.time_fit if a.day is None else tuning.time_day) for a in asked]
        evidence, fit = max((weight * fit, fit) for fit, weight in fits)
        cand.features["time"] = round(fit, 4)
        cand.score = sigmoid(logit(cand.score) + evidence)
    return sorted(cands, key=lambda c: c.score, reverse=True)


def informative(text: str, enough: int) -> float:
    """The share of ``enough`` distinct content words (not stop words, not one letter) that ``text`` has."""
    words = {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOP_WORDS}
    return min(1.0, len(words) / enough)


def _names_in(speaker: str, query_words: set[str]) -> bool:
    names = [w for w in _WORD.findall(speaker.lower()) if len(w) > 2]
    return bool(names) and any(n in query_words for n in names)


def select(
    cands: list[Candidate], n_results: int, min_score: float, tuning: Tuning,
    recency_days: float | None = None, now: datetime | None = None, relative: bool = False,
    dropped: Dropped | None = None,
) -> list[Candidate]:
    """The best ``n_results`` candidates scoring at least ``min_score``, each with the other records of the
    same thing folded into it (``also``: see :mod:`core.memory.recall.views.folding`).

    ``relative``: ``min_score`` is the default, lowered for this query (see :func:`threshold`).
    With ``recency_days`` a score is halved for every ``recency_days`` of the memory's age.
    """
    floor = threshold(cands, min_score, tuning) if relative else min_score
    passed = {id(c) for c in cands if c.score >= floor}
    if recency_days:
        moment = now or datetime.now(timezone.utc)
        for cand in cands:
            age = (moment - _time(cand.doc.occurred_at)).total_seconds() / 86400
            cand.factors["recency"] = 0.5 ** (max(0.0, age) / recency_days)
            cand.score *= cand.factors["recency"]
        cands = sorted(cands, key=lambda c: c.score, reverse=True)
    chosen: list[Candidate] = []
    folded: dict[int, Candidate] = {}
    for group in fold([c.doc for c in cands], tuning.fold_within_s, tuning.collapse_jaccard, n_results):
        head, *rest = (cands[i] for i in group)
        if id(head) in passed and len(chosen) < n_results:
            head.also = [c.doc.id for c in rest]
            chosen.append(head)
            folded.update((id(c), head) for c in rest)
    for cand in cands if dropped is not None else ():  # best first, as the examples are shown
        if id(cand) in folded:
            dropped("duplicate", cand, folded[id(cand)])
        elif id(cand) not in passed:
            dropped("below_min_score", cand, None)
    return chosen


def threshold(cands: list[Candidate], min_score: float, tuning: Tuning) -> float:
    """The default ``min_score`` for this query: ``min_score``, or a share of its best result
    (``Tuning.relative_floor``) if that is lower and the best result passes ``min_score``."""
    best = max((c.score for c in cands), default=0.0)
    return min(min_score, best * tuning.relative_floor) if best >= min_score else min_score


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def as_result(cand: Candidate) -> dict[str, Any]:
    """A ranked memory as ``recall_memory`` returns it."""
    doc = cand.doc
    return {
        "content": doc.text, "metadata": doc.metadata, "score": round(cand.score, 4), "source": doc.source,
        "created_at": doc.created_at, "occurred_at": doc.occurred_at, "kind": doc.kind, "tier": doc.tier,
        "where": where_of(doc), "id": doc.id, **({"also": list(cand.also)} if cand.also else {}),
    }


def where_of(doc: Doc) -> dict[str, Any]:
    """Where to open a memory's original: ``{seq}``, ``{archive, seq}``, ``{conversation, message_id}``,
    ..."""
    meta = doc.metadata
    if doc.kind in ("log", "log_archive"):
        found = {"seq": meta.get("seq")}
        if doc.kind == "log_archive":
            found["archive"] = meta.get("archive_id")
        return found
    if doc.id.startswith("summary:"):
        return {"archive": meta.get("archive_id"), "first_seq": meta.get("first_seq"),
                "last_seq": meta.get("last_seq")}
    if doc.kind == "message":
        return {"conversation": meta.get("conversation"), "message_id": meta.get("message_id"),
                "seq": meta.get("seq")}
    if doc.id.startswith("sum:"):
        return {"conversation": meta.get("conversation"), "summary_id": meta.get("summary_id")}
    if doc.kind == "fact":
        return {"fact": meta.get("key")}
    if doc.kind == "item":
        return {"namespace": meta.get("namespace"), "key": meta.get("key"), "path": meta.get("path")}
    if doc.kind == "event":  # learned from entries: where it came from is its provenance (``extracted``)
        return {"event": doc.id.partition(":")[2],
                "sources": (meta.get("extracted") or {}).get("sources", [])}
    return {"note": doc.id.partition(":")[2]}
