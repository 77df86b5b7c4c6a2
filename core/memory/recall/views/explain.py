"""Recall that explains itself: why each result ranked, and what the recall met but left out.

Only an explained recall (``recall_memory(..., explain=True)``) computes any of this: the searches
record what they met in a :class:`Trace`, :func:`core.memory.recall.search.select` tells a
:class:`LeftOut` what it drops, and :func:`why` reads a result's evidence from its candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence

from core.memory.files.log_format import utc_timestamp
from core.memory.recall.docs import learned_keys
from core.memory.recall.search import Candidate, Dropped, Tuning
from core.memory.storage.facts import redact

EXAMPLES = 3
"""Examples shown for each reason something was left out."""
REASONS = ("below_min_score", "duplicate", "superseded", "forgotten", "expired")
"""Why a memory the searches met is not among the results, in the order reported."""
PREVIEW = 100
"""Characters of an example's text shown."""
_WORD = re.compile(r"\w+")


@dataclass
class Trace:
    """What the two searches of one recall met."""

    word_hits: list[tuple[str, float]] = field(default_factory=list)
    """The word matches, ``(id, BM25 share)``, best first."""
    vector_hits: list[tuple[str, float]] | None = None
    """The nearest vectors, ``(id, cosine similarity)``, best first; None: no vector search could run."""
    unfound: list[str] = field(default_factory=list)
    """Ids a search met that are not recalled: forgotten (a vector whose deletion is queued) or expired."""

    def record(self, word_hits: Sequence[tuple[str, float]], vector_hits: Sequence[tuple[str, float]] | None,
               found: dict[str, Any]) -> None:
        """Keep both searches' hits and which of them recall could not return."""
        self.word_hits = list(word_hits)
        self.vector_hits = None if vector_hits is None else list(vector_hits)
        met = dict.fromkeys([i for i, _ in self.word_hits] + [i for i, _ in self.vector_hits or ()])
        self.unfound = [i for i in met if i not in found]


@dataclass
class LeftOut:
    """What one recall met but did not return: a count and a few examples for each reason."""

    secrets: list[str]
    """Values to redact from the examples."""
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reported: set[str] = field(default_factory=set)

    def add(self, reason: str, example: dict[str, Any]) -> None:
        """Count one memory left out for ``reason`` (shown if fewer than :data:`EXAMPLES` are)."""
        self.counts[reason] = self.counts.get(reason, 0) + 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < EXAMPLES:
            shown.append(example)
        self.reported.add(example["id"])

    def dropped(self) -> Dropped:
        """The callback :func:`core.memory.recall.search.select` tells what it drops (a superseded version
        is counted as superseded, whatever else dropped it)."""
        def told(reason: str, cand: Candidate, twin: Candidate | None) -> None:
            example = self.example(cand)
            if cand.superseded_by is not None:
                reason = "superseded"
            elif twin is not None:
                example["repeats"] = twin.doc.id
            self.add(reason, example)
        return told

    def superseded(self, ranked: Sequence[Candidate], chosen: Sequence[Candidate]) -> None:
        """Count the superseded versions met that are not among the results (and not counted yet)."""
        skip = {c.doc.id for c in chosen} | self.reported
        for cand in ranked:
            if cand.superseded_by is not None and cand.doc.id not in skip:
                self.add("superseded", self.example(cand))

    def unfound(self, conn: Any, ids: Sequence[str]) -> None:
        """Count the ids a search met that are forgotten (their vectors await deletion) or expired."""
        for start in range(0, len(ids), 500):
            part = list(ids[start:start + 500])
            marks = ", ".join("?" * len(part))
            for (doc_id,) in conn.execute(f"SELECT id FROM recall_forgotten WHERE id IN ({marks})", part):
                self.add("forgotten", {"id": doc_id})  # the id only: a forgotten memory's text is never shown
            for (doc_id,
                 ) in conn.execute(f"SELECT id FROM recall_docs WHERE id IN ({marks}) AND expires_at <= ?",
                                          [*part, utc_timestamp()]):
                self.add("expired", {"id": doc_id})

    def example(self, cand: Candidate) -> dict[str, Any]:
        """How a left-out memory is shown: its id, kind, score and the start of its text."""
        text = redact(cand.doc.text, self.secrets)
        found = {"id": cand.doc.id, "kind": cand.doc.kind, "score": round(cand.score, 4),
                 "content": text if len(text) <= PREVIEW else text[:PREVIEW - 1] + "…"}
        if cand.superseded_by is not None:
            found["superseded_by"] = cand.superseded_by[0]
        return found

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """``{reason: {count, examples}}`` for each reason that left something out."""
        return {r: {"count": self.counts[r],
                    "examples": self.examples[r]} for r in REASONS if r in self.counts}


def query_words(text: str, terms_of: Callable[[str], list[str]]) -> list[tuple[str, str]]:
    """The words of a query as written, each with the term the index stores for it (stop words left out)."""
    found: dict[str, tuple[str, str]] = {}
    for word in dict.fromkeys(_WORD.findall(text)):
        for term in terms_of(word)[:1]:
            found.setdefault(term, (word, term))
    return list(found.values())


def source_label(source_id: str) -> str:
    """How an explanation names an entry: ``#123`` (LOG.md), ``message 40``, ``note 3f2a9c1e``."""
    kind, _, key = source_id.partition(":")
    return {"log": f"#{key}", "msg": f"message {key}", "note": f"note {key[:8]}"}.get(kind, source_id)


def learned_from(extracted: dict[str, Any], dates: dict[str, str]) -> str:
    """``extracted from #123 (2026-11-20) by qwen2.5:7b``: where reflection learned a memory (``dates``: each
    source's day, when it is still there)."""
    named = [source_label(s) + (f" ({dates[s][:10]})" if s in dates else "")
             for s in extracted.get("sources", [])]
    return f"extracted from {', '.join(named) or 'entries since forgotten'} by {extracted.get('model', '?')}"


def why(cand: Candidate, trace: Trace | None, words: Sequence[tuple[str, str]],
        terms_of: Callable[[str], list[str]],
        tuning: Tuning, weighed: Collection[str] | None = None,
        dates: dict[str, str] | None = None) -> dict[str, Any]:
    """Why ``cand`` ranked where it did: the evidence its score was computed from, and what changed it after.

    ``vector`` is None for a memory the vector search did not return (or when none could run: see
    ``vector_search``); ranking then assumed the similarity in ``features["vector"]``. Without ``trace``
    (a memory space's hit), ``vector`` is the similarity ranking used. ``words`` are the query's words
    (:func:`query_words`) that the memory or its context (speaker, dates) holds, stemmed as the index
    stems them ("Fridays" matches "Friday"); ``common_words`` those the word search left out, being in
    too many memories (``weighed``: the terms it kept). A memory reflection learned says where from
    (``extracted``, see :func:`learned_from`), an entry it learned from what it learned (``learned``).
    """
    doc = cand.doc
    own = set(terms_of(f"{doc.text} {doc.context}"))
    if trace is None:
        vector, searched = round(cand.vector, 4), "ran"
    else:
        vectors = dict(trace.vector_hits or ())
        vector = round(vectors[doc.id], 4) if doc.id in vectors else None
        searched = "ran" if trace.vector_hits is not None else "no vectors to search"
    matched = [(word, term) for word, term in words if term in own]
    return {
        "words": [word for word, _ in matched],
        "common_words": [word for word, term in matched if weighed is not None and term not in weighed],
        "word_score": round(cand.words, 4),
        "vector": vector,
        "vector_search": searched,
        "features": {name: round(value, 4) for name, value in cand.features.items()},
        "kind": doc.kind,
        "kind_bonus": tuning.fact_bonus if doc.kind == "fact" else 0.0,
        "recency": round(cand.factors["recency"], 4) if "recency" in cand.factors else None,
        "superseded_by": ({"id": cand.superseded_by[0], "occurred_at": cand.superseded_by[1]}
                          if cand.superseded_by else None),
        "score": round(cand.score, 4),
        **({"extracted": learned_from(doc.metadata["extracted"], dates or {})}
           if isinstance(doc.metadata.get("extracted"), dict) else {}),
        **({"learned": learned_keys(doc.context)} if learned_keys(doc.context) else {}),
    }
