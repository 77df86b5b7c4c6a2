"""What memory.db's two databases say differently: full-text search (conversations' and recall's), how a
query's words match, the catalog.

Everything else runs the same SQL on both (PostgreSQL's spelling differences
are translated in :mod:`core.memory.storage.postgres.translate`). A dialect is chosen
by the database object (``db.dialect``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from core.memory.storage.words import Fts5Words, TsvectorWords


@dataclass(frozen=True)
class Dialect:
    """The SQL that differs between SQLite and PostgreSQL."""

    name: str
    search_messages: str
    """Best-first message matches of one conversation: params (snippet words, match, conversation, limit);
    columns id, at, snip (matches marked ``[...]``), rank (lower is better)."""
    search_summaries: str
    """The same for summaries."""
    count_messages: str
    """How many messages of one conversation match: params (match, conversation)."""
    count_summaries: str
    """The same for summaries."""
    match: Callable[[list[str]], str]
    """The query text matching every one of the words."""
    tables: str
    """The names of the database's tables (of the agent's schema, on PostgreSQL)."""
    recall_words: type[Fts5Words] | type[TsvectorWords]
    """Recall's word search: stemming, word counts and BM25 ranking."""


def _fts5_match(words: list[str]) -> str:
    """Each word quoted, so no character is an FTS5 operator; FTS5 ANDs them."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


SQLITE = Dialect(
    name="sqlite",
    search_messages=(
        "SELECT m.id, m.created_at AS at, snippet(ctx_messages_fts, 0, '[', ']', '…', ?) AS snip,"
        " bm25(ctx_messages_fts) AS rank FROM ctx_messages_fts JOIN ctx_messages m"
        " ON m.id = ctx_messages_fts.rowid WHERE ctx_messages_fts MATCH ? AND m.conversation_id = ?"
        " ORDER BY rank LIMIT ?"),
    search_summaries=(
        "SELECT s.id, s.created_at AS at, snippet(ctx_summaries_fts, 0, '[', ']', '…', ?) AS snip,"
        " bm25(ctx_summaries_fts) AS rank FROM ctx_summaries_fts JOIN ctx_summaries s"
        " ON s.rowid = ctx_summaries_fts.rowid WHERE ctx_summaries_fts MATCH ? AND s.conversation_id = ?"
        " ORDER BY rank LIMIT ?"),
    count_messages=("SELECT count(*) FROM ctx_messages_fts JOIN ctx_messages m ON m.id = "
                    "ctx_messages_fts.rowid WHERE ctx_messages_fts MATCH ? AND m.conversation_id = ?"),
    count_summaries=("SELECT count(*) FROM ctx_summaries_fts JOIN ctx_summaries s"
                     " ON s.rowid = ctx_summaries_fts.rowid"
                     " WHERE ctx_summaries_fts MATCH ? AND s.conversation_id = ?"),
    match=_fts5_match,
    tables="SELECT name FROM sqlite_master WHERE type = 'table'",
    recall_words=Fts5Words,
)

# tsvector 'simple' (lower-cased words, no stemming) is the closest to FTS5's unicode61 tokenizer;
# the GIN indexes of migration m003 are on exactly these expressions (a tsvector holds at most 1 MB: the
# first 200,000 characters of a text are searched). The snippet is made for the
# rows kept only (ts_headline is slow), with the same parameters in the same order as SQLite's.
_PG_SEARCH = """
WITH q AS (SELECT ?::int AS words, plainto_tsquery('simple', ?) AS query)
SELECT t.id, t.created_at AS at, h.rank, ts_headline('simple', left(t.content, 200000), q.query, format(
    'StartSel=[, StopSel=], FragmentDelimiter=…, MaxFragments=1, MinWords=%s, MaxWords=%s',
    greatest(1, q.words / 2), greatest(2, q.words))) AS snip
FROM (SELECT t.id, -ts_rank_cd(to_tsvector('simple', left(t.content, 200000)), q.query) AS rank
      FROM {table} t, q WHERE to_tsvector('simple', left(t.content, 200000)) @@ q.query AND t.conversation_id
      = ?
      ORDER BY rank, t.id LIMIT ?) h
JOIN {table} t ON t.id = h.id, q
ORDER BY h.rank, t.id
"""

_PG_COUNT = """SELECT count(*) FROM {table} t
WHERE to_tsvector('simple', left(t.content, 200000)) @@ plainto_tsquery('simple', ?)
  AND t.conversation_id = ?"""

POSTGRES = Dialect(
    name="postgres",
    search_messages=_PG_SEARCH.format(table="ctx_messages"),
    search_summaries=_PG_SEARCH.format(table="ctx_summaries"),
    count_messages=_PG_COUNT.format(table="ctx_messages"),
    count_summaries=_PG_COUNT.format(table="ctx_summaries"),
    match=" ".join,
    tables="SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    recall_words=TsvectorWords,
)
