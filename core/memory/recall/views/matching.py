"""What a forget by query takes: the memories that say every word of it, or, when asked, those close in
meaning.

A ranked recall is the wrong tool to choose what to delete: it returns what is *closest* to a query, and
for a word an agent never met ("asyncio") the closest memories are about something else, while a query
whose words are everywhere ("topic number 3") matches most of memory. So forgetting takes what the user
named:

- **by words** (the default): a memory is a candidate when its own text holds every word of the query that
  is not a stop word or a letter alone, stemmed as recall's word index stems them ("deploys" finds "deploy";
  numbers count as words, so "topic number 3" does not take topic number 2). Its context (speaker, dates) does
  not count:
  to forget by time, give a ``before`` bound. A query of stop words alone names nothing and is refused.
- **by meaning** (``meaning_above``, asked explicitly): a memory is a candidate when its vector's cosine
  similarity to the query is above that number.

Each candidate says why it was taken (``why``: the query's words it holds, as written, or its similarity),
and the other records of the same thing come with it (:func:`with_other_records`): a request kept in LOG.md
and in the conversation is forgotten whole, even where a record of it was cut short before the word.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from core.errors import ValidationError
from core.memory.files.log_format import utc_timestamp
from core.memory.recall.docs import Doc, DocIndex, Filters
from core.memory.recall.views.explain import query_words
from core.memory.recall.views.folding import fold


@dataclass(frozen=True)
class Match:
    """One memory a forget by query takes, and why."""

    doc: Doc
    why: dict[str, Any]
    """``{"words": [...]}`` (the query's words its text holds, as written) or ``{"meaning": similarity}``."""
    records: tuple[Doc, ...] = ()
    """The other records of the same words, taken with it (:func:`with_other_records`)."""


@dataclass(frozen=True)
class Matches:
    """The candidates of a forget by query, newest first, at most the limit asked."""

    found: list[Match]
    total: int
    """How many memories match in all (more than ``len(found)`` when the limit cut them; by meaning, at most
    one more than the limit is looked for)."""


def check_threshold(meaning_above: Any) -> float | None:
    """``meaning_above`` checked: None, or a number from 0 to 1 (exclusive of 0); raise ValidationError."""
    if meaning_above is None:
        return None
    if isinstance(meaning_above, bool) or not isinstance(meaning_above,
                                                         (int, float)) or not 0 < meaning_above < 1:
        raise ValidationError("meaning_above must be a cosine similarity between 0 and 1 (e.g. 0.6), got "
                              f"{meaning_above!r}")
    return float(meaning_above)


def by_words(docs: DocIndex, query: str, filters: Filters, before: str | None, limit: int) -> Matches:
    """The memories whose text holds every content word of ``query`` (see the module's docstring).

    Raises:
        ValidationError: the query has no word to match (stop words only).
    """
    # A letter alone ("Ada's" gives "s", "don't" gives "t") names nothing; a number does ("topic number 3").
    words = [(word, term) for word,
             term in query_words(query, docs.terms) if not (len(term) == 1 and term.isalpha())]
    if not words:
        raise ValidationError(f"the query {query!r} has only common words (such as 'what' or 'the') and "
                              "names nothing to forget: give words the memories say, or forget by meaning "
                              "(meaning_above, --meaning-above) or by id")
    where, params = _where(filters, before)
    ids = docs.db.dialect.recall_words.holding_all(docs.db.conn, [t for _, t in words], where, params)
    found = docs.get(ids[:limit])
    matches = []
    for doc_id in ids[:limit]:
        doc = found[doc_id]
        own = set(docs.terms(doc.text))
        matches.append(Match(doc, {"words": [word for word, term in words if term in own]}))
    return Matches(matches, len(ids))


def by_meaning(docs: DocIndex, nearest: Sequence[tuple[str, float]], threshold: float, filters: Filters,
               before: str | None, limit: int) -> Matches:
    """The memories of ``nearest`` (``(id, cosine similarity)``, best first) above ``threshold`` that pass the
    filters, newest first."""
    close = {doc_id: similarity for doc_id, similarity in nearest if similarity > threshold}
    found = [doc for doc in docs.get(close, filters).values() if before is None or doc.occurred_at < before]
    found.sort(key=lambda d: (d.occurred_at, d.rowid), reverse=True)
    return Matches([Match(doc, {"meaning": round(close[doc.id], 4)}) for doc in found[:limit]], len(found))


def with_other_records(docs: DocIndex, found: Matches, filters: Filters, before: str | None,
                       within_s: float) -> Matches:
    """``found`` with each match's other records of the same words that the filters allow (not
    near-duplicates:
    one of those may lack the words); a record that matched itself stays its own match."""
    if not found.found:
        return found
    spans: list[list[float]] = []
    for at in sorted(_seconds(m.doc.occurred_at) for m in found.found):
        if spans and at - within_s <= spans[-1][1]:
            spans[-1][1] = at + within_s
        else:
            spans.append([at - within_s, at + within_s])
    near: dict[str, Doc] = {}
    for start, end in spans:
        window = Filters(filters.kinds, _stamp(start), _stamp(end), filters.source_prefix)
        near.update((d.id, d) for d in docs.window(window,
                                                   100_000) if before is None or d.occurred_at < before)
    matched = {m.doc.id for m in found.found}
    pool = [m.doc for m in found.found] + [d for i, d in near.items() if i not in matched]
    records: dict[str, tuple[Doc, ...]] = {}
    for group in fold(pool, within_s, None):
        head = pool[group[0]]
        if head.id in matched:
            records[head.id] = tuple(pool[i] for i in group[1:] if pool[i].id not in matched)
    return Matches([Match(m.doc, m.why, records.get(m.doc.id, ())) for m in found.found], found.total)


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _stamp(seconds: float) -> str:
    return utc_timestamp(datetime.fromtimestamp(seconds, timezone.utc))


def _where(filters: Filters, before: str | None) -> tuple[str, list[Any]]:
    where, params = filters.sql("d")
    if before is not None:
        where += " AND d.occurred_at < ?"
        params.append(before)
    return where, params
