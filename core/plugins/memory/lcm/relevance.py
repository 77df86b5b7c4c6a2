"""The score of a conversation search hit: BM25 as a share of the most its words could score, in [0, 1].

The databases' own ranks cannot be shown as scores: SQLite's ``bm25()`` weighs a word found in
more than half of the rows at 1e-6 (its IDF, ``ln((N - n + 0.5) / (n + 0.5))``, is negative
there, and in a short conversation the searched words are in most messages), and PostgreSQL's
``ts_rank_cd`` has a scale of its own. They still choose and order the candidates; the score
each hit is given is BM25 over the searched conversation (its messages, or its summaries: each
their own collection) with Lucene's IDF, which stays positive, divided by what the words could
score at most::

    idf(w)   = ln(1 + (N - n(w) + 0.5) / (n(w) + 0.5))
    score    = sum idf(w) * f(w) * (k1 + 1) / (f(w) + k1 * (1 - b + b * len / avg_len))
               / sum idf(w) * (k1 + 1)

``N`` is the collection's size, ``n(w)`` how many of its rows hold the word, ``f(w)`` how often
the hit holds it, ``len`` the hit's length in characters and ``avg_len`` the collection's
average. Every hit holds every word of the query, so a hit of average length holding each word
once scores 1 / (k1 + 1) = 0.45 whatever the query; repeating the words or being shorter moves
it towards 1, being longer towards 0. Rare words weigh more than common ones in a query of
several words.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, Sequence

from core.memory.storage import Dialect

K1, B = 1.2, 0.75
"""BM25's constants, as FTS5 and recall use them."""
_WORD = re.compile(r"\w+", re.UNICODE)


def scores(conn: Any, dialect: Dialect, table: str, conv: int, words: Sequence[str],
           ids: Sequence[Any]) -> dict[Any, float]:
    """The score in [0, 1] of each row of ``ids`` of ``table`` (ctx_messages or ctx_summaries) of
    conversation ``conv`` for the query ``words`` (each of which every one of these rows holds)."""
    if not ids:
        return {}
    stats = conn.execute(f"SELECT count(*), avg(length(content)) FROM {table} WHERE conversation_id = ?",
                         (conv,)).fetchone()
    total, avg_len = stats[0], max(float(stats[1] or 1), 1.0)
    count = dialect.count_messages if table == "ctx_messages" else dialect.count_summaries
    weights = {}
    for word in words:
        matching = conn.execute(count, (dialect.match([word]), conv)).fetchone()[0]
        weights[fold(word)] = idf(matching, total)
    ceiling = sum(weights.values()) * (K1 + 1)
    rows = conn.execute(f"SELECT id, content FROM {table} WHERE id IN ({', '.join('?' * len(ids))})",
                        list(ids))
    return {row["id"]: min(1.0, _bm25(row["content"], weights, avg_len) / ceiling) for row in rows}


def _bm25(text: str, weights: dict[str, float], avg_len: float) -> float:
    frequency = _frequencies(text)
    norm = K1 * (1 - B + B * len(text) / avg_len)
    score = 0.0
    for term, weight in weights.items():
        # The row holds every word (the search asks for all): a form the count misses still counts once.
        f = max(1, frequency.get(term, 0))
        score += weight * f * (K1 + 1) / (f + norm)
    return score


def idf(count: int, total: int) -> float:
    """Lucene's BM25 weight of a word found in ``count`` of ``total`` rows: positive even in most rows."""
    return math.log(1 + (total - count + 0.5) / (count + 0.5))


def fold(word: str) -> str:
    """A word as the full-text index compares it: lower case, accents removed (FTS5's unicode61)."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _frequencies(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in _WORD.findall(text):
        key = fold(word)
        counts[key] = counts.get(key, 0) + 1
    return counts
