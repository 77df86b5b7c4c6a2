"""Recall's word search as each database runs it: stemming a query, counting the memories a word is
in, and ranking the matches by BM25.

:class:`core.memory.recall.docs.DocIndex` keeps the one algorithm (which query words count, how a
score becomes a strength in [0, 1]); the dialect (:mod:`core.memory.storage.dialect`) chooses one of the two
classes here for the SQL.

- SQLite: FTS5 with the Porter stemmer; ``fts5vocab`` counts the memories a word is in; FTS5's own
  ``bm25()`` ranks.
- PostgreSQL: a stored ``tsvector`` (the memory's words weighted A, its context B, stemmed by the
  ``english`` configuration) under a GIN index; the counts are read from that index; BM25 is
  computed in SQL with FTS5's formula and constants (k1 = 1.2, b = 0.75, the column weights below,
  a row's length in words, IDF ``ln((N - n + 0.5) / (n + 0.5))``), so a score means what FTS5's does.
  What differs: Snowball's English stemmer for Porter's (nearly always the same stem), stop words
  absent from the index (they are dropped from every query anyway), N the highest row number on
  both (FTS5 counts live rows for its own IDF), the average length estimated from a sample of
  about 2,000 rows when there are more.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

TEXT_WEIGHT, CONTEXT_WEIGHT = 1.0, 0.5
"""Column weights: the words of the memory itself count more than its context."""
K1, B = 1.2, 0.75
"""FTS5's BM25 constants."""
FILTER_MARGIN = 50
"""Word matches ranked beyond the ``depth`` needed, so that a few left out by the filters (an expired
note, another kind) rarely make the search rank every match again."""
LENGTH_SAMPLE = 2000
"""Rows read to estimate the average memory length on PostgreSQL."""


def idf(count: int, total: int) -> float:
    """FTS5's BM25 weight of a term found in ``count`` of ``total`` rows: what one occurrence of it
    scores in a memory of average length."""
    return max(1e-6, math.log((total - count + 0.5) / (count + 0.5)))


class Fts5Words:
    """SQLite: the ``recall_fts`` FTS5 table and its ``recall_terms`` vocabulary."""

    @staticmethod
    def terms(conn: Any, text: str) -> list[str]:
        """``text``'s distinct words as the index stores them."""
        # A scratch FTS5 table of this connection stems the text exactly as the index does.
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_stem USING fts5 (t, tokenize = 'porter "
                     "unicode61')")
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_stem_terms USING fts5vocab (temp, "
                     "recall_stem, 'row')")
        conn.execute("INSERT INTO temp.recall_stem (rowid, t) VALUES (1, ?)", (text,))
        try:
            return [row[0] for row in conn.execute("SELECT term FROM temp.recall_stem_terms")]
        finally:
            conn.execute("DELETE FROM temp.recall_stem")

    @staticmethod
    def doc_counts(conn: Any, terms: Sequence[str], cap: int) -> dict[str, int]:
        """How many memories each of ``terms`` is in (exact: ``cap`` is not needed)."""
        return dict(conn.execute(
            f"SELECT term, doc FROM recall_terms WHERE term IN ({', '.join('?' * len(terms))})", list(terms)
        ).fetchall())

    @staticmethod
    def ranked(conn: Any, weights: dict[str, float], total: int, where: str, params: list[Any],
               depth: int) -> list[tuple[str, float]]:
        """The ``depth`` best matches of any of the terms (``weights``: term to IDF) that pass ``where``,
        as ``(id, bm25)``.

        The full-text index ranks first, on its own, a few more rows than needed (joining every match
        with ``recall_docs`` before ranking made the search several times slower on large indexes);
        only when the filters leave too few of them is every match joined and ranked.
        """
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in weights)
        bm25 = f"bm25(recall_fts, {TEXT_WEIGHT}, {CONTEXT_WEIGHT})"
        first = depth + FILTER_MARGIN
        rows = conn.execute(
            f"""SELECT d.id, -f.score FROM (
                    SELECT rowid, {bm25} AS score FROM recall_fts WHERE recall_fts MATCH ? ORDER BY score
                    LIMIT ?
                ) f JOIN recall_docs d ON d.rowid = f.rowid WHERE {where} ORDER BY f.score LIMIT ?""",
            [match, first, *params, depth],
        ).fetchall()
        if len(rows) == depth or conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM recall_fts WHERE recall_fts MATCH ? LIMIT ?)",
                (match, first + 1)).fetchone()[0] <= first:
            return [(row[0], row[1]) for row in rows]
        rows = conn.execute(
            f"""SELECT d.id, -{bm25} FROM recall_fts JOIN recall_docs d ON d.rowid = recall_fts.rowid
                WHERE recall_fts MATCH ? AND {where} ORDER BY {bm25} LIMIT ?""",
            [match, *params, depth]).fetchall()
        return [(row[0], row[1]) for row in rows]


    @staticmethod
    def holding_all(conn: Any, terms: Sequence[str], where: str, params: list[Any]) -> list[str]:
        """The ids of the memories whose own text (not its context) holds every one of ``terms`` and that pass
        ``where`` (on ``d``), newest first."""
        match = "text : (" + " AND ".join('"' + t.replace('"', '""') + '"' for t in terms) + ")"
        return [row[0] for row in conn.execute(
            f"""SELECT d.id FROM recall_fts JOIN recall_docs d ON d.rowid = recall_fts.rowid
                WHERE recall_fts MATCH ? AND {where} ORDER BY d.occurred_at DESC, d.rowid DESC""",
            [match, *params])]


_PG_COUNTS = """SELECT q.term,
  (SELECT count(*) FROM (SELECT 1 FROM recall_docs WHERE search @@ q.query LIMIT ?) s)
FROM unnest(?::text[], ?::tsquery[]) AS q(term, query)"""


def pg_ranked_sql(table: str, alias: str, key: str, order: str, avgdl: str) -> str:
    """BM25 in PostgreSQL over ``table``'s ``search`` tsvector (weight A: text, B: context) and ``tokens``, as
    the SQLite side scores: parameters terms, IDFs, (those of ``avgdl``), the tsquery, (those of the
    ``{where}`` left to fill, on ``alias``) and the depth; rows ``(key, score)`` best first, ties by
    ``order``."""
    return f"""
WITH q AS (SELECT * FROM unnest(?::text[], ?::float8[]) AS q(term, idf)),
     l AS (SELECT {avgdl}::float8 AS avgdl)
SELECT {alias}.{key}, sum(q.idf * f.freq * {K1 + 1} / (f.freq + {K1} * ({1 - B} + {B} * {alias}.tokens /
l.avgdl)))
       AS score
FROM {table} {alias} CROSS JOIN l
CROSS JOIN LATERAL (
    SELECT u.lexeme, (SELECT sum(CASE w WHEN 'A' THEN {TEXT_WEIGHT} ELSE {CONTEXT_WEIGHT} END)
                      FROM unnest(u.weights) w)::float8 AS freq
    FROM unnest({alias}.search) u) f
JOIN q ON q.term = f.lexeme
WHERE {alias}.search @@ ?::tsquery AND {{where}}
GROUP BY {alias}.{key}, {order} ORDER BY score DESC, {order} LIMIT ?
"""


_PG_RANKED = pg_ranked_sql("recall_docs", "d", "id", "d.rowid",
                           "coalesce((SELECT avg(tokens) FROM recall_docs TABLESAMPLE SYSTEM (?)), "
                           "(SELECT avg(tokens) FROM recall_docs), 1)")


def _lexeme(term: str) -> str:
    """``term`` as a tsquery of that one lexeme, taken as it is (not parsed or stemmed again)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


class TsvectorWords:
    """PostgreSQL: the ``search`` tsvector column of ``recall_docs`` and its GIN index."""

    @staticmethod
    def terms(conn: Any, text: str) -> list[str]:
        """``text``'s distinct words as the index stores them."""
        return [row[0] for row in conn.execute(
            "SELECT lexeme FROM unnest(to_tsvector('english', left(?, 200000)))", (text,))]

    @staticmethod
    def doc_counts(conn: Any, terms: Sequence[str], cap: int) -> dict[str, int]:
        """How many memories each of ``terms`` is in, counted up to ``cap`` (beyond it a word is too
        common to search for, and counting every match would read most of the index)."""
        return dict(conn.execute(_PG_COUNTS, (cap, list(terms), [_lexeme(t) for t in terms])).fetchall())

    @staticmethod
    def ranked(conn: Any, weights: dict[str, float], total: int, where: str, params: list[Any],
               depth: int) -> list[tuple[str, float]]:
        """The ``depth`` best matches of any of the terms (``weights``: term to IDF) as ``(id, bm25)``."""
        sample = min(100.0, 100.0 * LENGTH_SAMPLE / max(1, total))
        query = " | ".join(_lexeme(t) for t in weights)
        rows = conn.execute(_PG_RANKED.format(where=where),
                            [list(weights), list(weights.values()), sample, query, *params, depth]).fetchall()
        return [(row[0], float(row[1])) for row in rows]


    @staticmethod
    def holding_all(conn: Any, terms: Sequence[str], where: str, params: list[Any]) -> list[str]:
        """The ids of the memories whose own text (weight A, not its context) holds every one of ``terms`` and
        that pass ``where`` (on ``d``), newest first."""
        query = " & ".join(_lexeme(t) + ":A" for t in terms)
        return [row[0] for row in conn.execute(
            f"""SELECT d.id FROM recall_docs d WHERE d.search @@ ?::tsquery AND {where}
                ORDER BY d.occurred_at DESC, d.rowid DESC""", [query, *params])]
