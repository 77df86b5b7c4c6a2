"""Reading LCM history: assemble, full-text search, describe/expand of summaries, review text."""

from __future__ import annotations

import re
from typing import Any, Iterator

from core.errors import SummaryNotFoundError, ValidationError, shown
from core.memory.storage import SQLITE, Connection, Dialect
from core.memory.secrets import FORGOTTEN, forgotten_of
from core.memory.provider import (
    DescribeResult,
    ExpandChild,
    ExpandMessage,
    ExpandResult,
    SearchQuery,
    SearchResult,
    SearchScope,
)
from core.plugins.memory.lcm import relevance
from core.plugins.memory.lcm.render import render_message_line, render_summary_line, summary_message
from core.plugins.memory.store import FORGOTTEN_TOKENS, MESSAGE_COLUMNS, shown_message, shown_tokens
from core.plugins.memory.window import WindowItem

SNIPPET_TOKENS = 32
_WORD = re.compile(r"\w+", re.UNICODE)

_CONTEXT_SQL = f"""
SELECT i.token_count, i.summary_id, {MESSAGE_COLUMNS},
       s.id AS sid, s.kind, s.depth, s.content AS s_content, s.descendant_count, s.earliest_at, s.latest_at
FROM ctx_items i
LEFT JOIN ctx_messages m ON m.id = i.message_id
LEFT JOIN ctx_summaries s ON s.id = i.summary_id
WHERE i.conversation_id = ? ORDER BY i.position DESC
"""


def context_newest_first(db, conv: int) -> Iterator[WindowItem]:
    """The conversation's context items, newest first, read lazily so assembly stops at the budget."""
    forgotten = forgotten_of(db, "msg:", "sum:")  # forgotten items stay in the DAG (lossless), not in prompts
    for row in db.iterate(_CONTEXT_SQL, (conv,)):
        if row["summary_id"] is None:
            yield WindowItem(shown_message(row, forgotten), shown_tokens(row, forgotten))
        else:
            hidden = f"sum:{row['sid']}" in forgotten
            content = FORGOTTEN if hidden else row["s_content"]
            summary = {"id": row["sid"], "kind": row["kind"], "depth": row["depth"], "content": content,
                       "descendant_count": row["descendant_count"], "earliest_at": row["earliest_at"],
                       "latest_at": row["latest_at"]}
            yield WindowItem(summary_message(summary), FORGOTTEN_TOKENS if hidden else row["token_count"],
                             is_summary=True)


def query_words(text: object) -> list[str]:
    """The words of a search text; ValidationError when it is not text or has none."""
    if not isinstance(text, str):
        raise ValidationError(f"search text must be a string, got {type(text).__name__}")
    words = _WORD.findall(text)
    if not words:
        raise ValidationError(f"search text {text!r} has no words to look for")
    return words


def fts_query(text: object) -> str:
    """``text`` as an FTS5 query matching all its words, each quoted so no character is an operator."""
    return SQLITE.match(query_words(text))


def search(conn: Connection, conv: int, query: SearchQuery, dialect: Dialect = SQLITE) -> list[SearchResult]:
    """Best matches first, with snippets (matches marked ``[...]``) and a score in [0, 1] (:mod:`.relevance`).

    The database finds and orders the candidates (BM25 in SQLite, ts_rank_cd in PostgreSQL).
    """
    if not isinstance(query.limit, int) or query.limit <= 0:
        raise ValidationError(f"search limit must be a positive integer, got {shown(query.limit)}")
    words = query_words(query.text)
    match = dialect.match(words)
    hits: list[SearchResult] = []
    if query.scope in (SearchScope.BOTH, SearchScope.MESSAGES):
        rows = conn.execute(dialect.search_messages, (SNIPPET_TOKENS, match, conv, query.limit)).fetchall()
        score = relevance.scores(conn, dialect, "ctx_messages", conv, words, [r["id"] for r in rows])
        hits += [SearchResult("message", f"msg_{r['id']}", r["snip"], score[r["id"]], r["at"]) for r in rows]
    if query.scope in (SearchScope.BOTH, SearchScope.SUMMARIES):
        rows = conn.execute(dialect.search_summaries, (SNIPPET_TOKENS, match, conv, query.limit)).fetchall()
        score = relevance.scores(conn, dialect, "ctx_summaries", conv, words, [r["id"] for r in rows])
        hits += [SearchResult("summary", r["id"], r["snip"], score[r["id"]], r["at"]) for r in rows]
    hits.sort(key=lambda hit: hit.score, reverse=True)  # stable: equal scores keep the database's order
    return hits[: query.limit]


def summary_row(conn: Connection, summary_id: object, conv: int | None) -> Any:
    """The summary ``summary_id`` (of conversation ``conv`` when given), else SummaryNotFoundError."""
    if not isinstance(summary_id, str):
        raise ValidationError(f"a summary id is a string like 'sum_0123abcd', got {shown(summary_id)}")
    row = conn.execute("SELECT * FROM ctx_summaries WHERE id = ?", (summary_id,)).fetchone()
    if row is None or (conv is not None and row["conversation_id"] != conv):
        raise SummaryNotFoundError(
            f"no summary {summary_id!r} in this session; summary ids appear in context as '[summary sum_…]'"
        )
    return row


def describe(conn: Connection, summary_id: str, conv: int | None) -> DescribeResult:
    """Metadata and lineage of one summary."""
    row = summary_row(conn, summary_id, conv)
    parents = conn.execute("SELECT parent_id FROM ctx_summary_parents WHERE child_id = ?", (summary_id,))
    if row["kind"] == "leaf":
        children = conn.execute(
            "SELECT 'msg_' || message_id FROM ctx_summary_messages WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,))
    else:
        children = conn.execute(
            "SELECT child_id FROM ctx_summary_parents WHERE parent_id = ? ORDER BY ordinal", (summary_id,))
    return DescribeResult(
        summary_id=row["id"], kind=row["kind"], depth=row["depth"], content=row["content"],
        earliest_at=row["earliest_at"], latest_at=row["latest_at"], descendant_count=row["descendant_count"],
        token_count=row["token_count"], parent_ids=tuple(r[0] for r in parents),
        child_ids=tuple(r[0] for r in children),
    )


def expand(conn: Connection, summary_id: str, token_cap: int, conv: int | None) -> ExpandResult:
    """The children of a summary, in order, until ``token_cap`` (at least one is always returned)."""
    if not isinstance(token_cap, int) or token_cap <= 0:
        raise ValidationError(f"token_cap must be a positive integer, got {shown(token_cap)}")
    row = summary_row(conn, summary_id, conv)
    if row["kind"] == "leaf":
        rows = conn.execute(
            f"SELECT {MESSAGE_COLUMNS}, m.token_count FROM ctx_summary_messages sm JOIN ctx_messages m"
            " ON m.id = sm.message_id WHERE sm.summary_id = ? ORDER BY sm.ordinal", (summary_id,))
        kept, truncated = _within(rows, token_cap)
        forgotten = forgotten_of(conn, "msg:")  # reachable still (lossless), but its text is not shown again
        messages = tuple(ExpandMessage(f"msg_{r['id']}", shown_message(r, forgotten)) for r in kept)
        return ExpandResult(summary_id, messages=messages, truncated=truncated)
    rows = conn.execute(
        "SELECT s.* FROM ctx_summary_parents p JOIN ctx_summaries s ON s.id = p.child_id"
        " WHERE p.parent_id = ? ORDER BY p.ordinal", (summary_id,))
    kept, truncated = _within(rows, token_cap)
    forgotten = forgotten_of(conn, "sum:")
    children = tuple(ExpandChild(r["id"], r["kind"], r["depth"], FORGOTTEN if f"sum:{r['id']}" in forgotten
                                 else r["content"], r["token_count"]) for r in kept)
    return ExpandResult(summary_id, children=children, truncated=truncated)


def _within(rows, token_cap: int) -> tuple[list, bool]:
    """The leading rows whose ``token_count`` fits ``token_cap`` (always the first); and whether any was
    cut."""
    kept, used = [], 0
    for row in rows:
        if kept and used + row["token_count"] > token_cap:
            return kept, True
        used += row["token_count"]
        kept.append(row)
    return kept, False


def review_context(conn: Connection, conv: int, since: str) -> str:
    """Summaries in context as background, then the messages (since ``since`` when given)."""
    summaries = conn.execute(
        "SELECT s.* FROM ctx_items i JOIN ctx_summaries s ON s.id = i.summary_id"
        " WHERE i.conversation_id = ? ORDER BY i.position", (conv,)).fetchall()
    if since:
        messages = conn.execute(
            "SELECT * FROM ctx_messages WHERE conversation_id = ? AND created_at >= ? ORDER BY seq",
            (conv, since))
    else:
        messages = conn.execute(
            "SELECT m.* FROM ctx_items i JOIN ctx_messages m ON m.id = i.message_id"
            " WHERE i.conversation_id = ? ORDER BY i.position", (conv,))
    lines = [render_message_line(r) for r in messages]
    if not summaries and not lines:
        return ""
    parts = []
    if summaries:
        parts += ["## Background (summaries)", *(render_summary_line(r) for r in summaries), ""]
    parts += ["## Conversation", *(lines or ["(no new messages)"])]
    return "\n".join(parts)
