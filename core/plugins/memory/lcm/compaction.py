"""LCM compaction: leaf and condensed passes, bounded by rounds, a deadline and a progress check.

Concurrency: one compaction at a time per conversation (the database's
conversation lock: a file lock beside memory.db, an advisory lock in
PostgreSQL, so processes and hosts queue too). Summaries are computed outside any
database transaction; each one is then committed in its own ``BEGIN
IMMEDIATE`` transaction that re-reads the items it replaces and skips the
commit if they changed, so appends running meanwhile are never lost. A
compaction killed at any point leaves every committed summary complete and
every message reachable.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field, replace

from core.config import ProviderConfig
from core.memory.storage import Database
from core.memory.secrets import forgotten_ids, redactor_of
from core.memory.files import utc_timestamp
from core.memory.provider import CompactionMode, CompactionResult, SummarizeOptions
from core.llm import estimate_tokens
from core.plugins.memory.lcm import plan
from core.plugins.memory.lcm.render import (FORGOTTEN_LINE, render_message_line, render_summary,
                                            render_summary_line)
from core.plugins.memory.lcm.summarizer import call_with_timeout
from core.plugins.memory.store import ConversationStore

log = logging.getLogger(__name__)

_ITEMS_SQL = """
SELECT i.position, i.message_id, i.summary_id, i.token_count, m.role, s.depth, s.content AS summary_content
FROM ctx_items i
LEFT JOIN ctx_messages m ON m.id = i.message_id
LEFT JOIN ctx_summaries s ON s.id = i.summary_id
WHERE i.conversation_id = ? ORDER BY i.position
"""
_LEAF_LINKS = "INSERT INTO ctx_summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)"
_CONDENSED_LINKS = "INSERT INTO ctx_summary_parents (parent_id, child_id, ordinal) VALUES (?, ?, ?)"


@dataclass
class _Run:
    """Counters of one compaction."""

    deadline: float
    fresh_tail: int = 0
    """Newest messages left out of this compaction."""
    min_leaf: int = 1
    """Fewest messages summarised into one leaf summary."""
    leaf: int = 0
    condensed: int = 0
    messages: int = 0
    calls: int = 0
    stopped: str = "done"
    started: float = field(default_factory=time.monotonic)

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline


class CompactionEngine:
    """Runs compactions of one memory.db with one summarizer."""

    def __init__(self, db: Database, store: ConversationStore, summarizer, config: ProviderConfig) -> None:
        self.db = db
        self.store = store
        self.summarizer = summarizer
        self.config = config

    def compact(self, conv: int, mode: CompactionMode, fresh_tail: int | None = None,
                min_leaf: int | None = None) -> CompactionResult:
        """Compact conversation ``conv``, leaving its newest ``fresh_tail`` messages (default: the
        configured fresh tail) as they are, with leaves of at least ``min_leaf`` messages (default: the
        configured ``leaf_chunk_size``); see the module docstring for the guarantees."""
        if self.summarizer is None:
            log.warning("conversation %s not compacted: no summarizer is configured", conv)
            tokens = self.store.context_tokens(conv)
            return CompactionResult(tokens_before=tokens, tokens_after=tokens, stopped="no_summarizer")
        with self.db.conversation_lock(conv, self.config.deadline_s):
            return self._compact_locked(conv, mode, _Run(
                deadline=time.monotonic() + self.config.deadline_s,
                fresh_tail=self.config.fresh_tail if fresh_tail is None else fresh_tail,
                min_leaf=self.config.leaf_chunk_size if min_leaf is None else max(1, min_leaf)))

    def _compact_locked(self, conv: int, mode: CompactionMode, run: _Run) -> CompactionResult:
        tokens_before = tokens = self.store.context_tokens(conv)
        max_rounds = self.config.max_rounds if mode is CompactionMode.FULL else 1
        rounds = 0
        while True:
            if rounds >= max_rounds:
                run.stopped = "round_limit" if mode is CompactionMode.FULL else "done"
                break
            rounds += 1
            created = self._leaf_pass(conv, run) + self._condensed_pass(conv, run)
            after = self.store.context_tokens(conv)
            if run.stopped == "deadline" or created == 0:
                break
            if after >= tokens:
                run.stopped = "no_progress"
                break
            tokens = after
        result = CompactionResult(
            leaf_summaries_created=run.leaf, condensed_summaries_created=run.condensed,
            messages_compacted=run.messages, tokens_before=tokens_before,
            tokens_after=self.store.context_tokens(conv), duration_s=time.monotonic() - run.started,
            summarizer_calls=run.calls, rounds=rounds, stopped=run.stopped,
        )
        log.info("compacted conversation %s (%s): %s", conv, mode.value, result)
        return result

    # -- passes ----------------------------------------------------------------

    def _items(self, conv: int) -> tuple[list[plan.Item], dict[str, str]]:
        items, contents = [], {}
        for row in self.db.conn.execute(_ITEMS_SQL, (conv,)):
            items.append(plan.Item(
                position=row["position"], message_id=row["message_id"], summary_id=row["summary_id"],
                tokens=row["token_count"], role=row["role"] or "",
                depth=-1 if row["depth"] is None else row["depth"],
            ))
            if row["summary_id"]:
                contents[row["summary_id"]] = row["summary_content"]
        return items, contents

    def _leaf_pass(self, conv: int, run: _Run) -> int:
        items, contents = self._items(conv)
        older = items[: plan.tail_start(items, run.fresh_tail)]
        created = 0
        index_of = {item.position: n for n, item in enumerate(older)}
        for chunk in plan.leaf_chunks(older, run.min_leaf, self.config.leaf_chunk_max_tokens):
            if run.expired():
                run.stopped = "deadline"
                break
            previous = _previous_summary(older, index_of[chunk[0].position], contents)
            if self._summarize_leaf(conv, chunk, previous, run):
                created += 1
        return created

    def _condensed_pass(self, conv: int, run: _Run) -> int:
        if run.stopped == "deadline":
            return 0
        items, _ = self._items(conv)
        older = items[: plan.tail_start(items, run.fresh_tail)]
        created = 0
        for group in plan.condensed_groups(older, self.config.leaf_chunk_max_tokens):
            if run.expired():
                run.stopped = "deadline"
                break
            if self._summarize_condensed(conv, group, run):
                created += 1
        return created

    def _summarize_leaf(self, conv: int, chunk: list[plan.Item], previous: str, run: _Run) -> bool:
        ids = [item.message_id for item in chunk]
        rows = self._message_rows(ids)
        # A forgotten message stays in the DAG (lossless: expand reaches it), not in what summarises it.
        hidden = forgotten_ids(self.db, [f"msg:{row['id']}" for row in rows])
        text = "\n".join(FORGOTTEN_LINE if f"msg:{row['id']}" in hidden else render_message_line(row)
                         for row in rows)
        target = min(self.config.leaf_target_tokens, max(1, estimate_tokens(text) // 3))
        summary = self._summarize(text, SummarizeOptions(previous=previous, target_tokens=target), run)
        node = _Node("leaf", 0, summary, estimate_tokens(text), len(rows),
                     rows[0]["created_at"], rows[-1]["created_at"])
        if not self._commit(conv, chunk, node, _LEAF_LINKS, ids):
            return False
        run.leaf += 1
        run.messages += len(chunk)
        return True

    def _summarize_condensed(self, conv: int, group: list[plan.Item], run: _Run) -> bool:
        ids = [item.summary_id for item in group]
        rows = self._summary_rows(ids)
        hidden = forgotten_ids(self.db, [f"sum:{row['id']}" for row in rows])
        text = "\n\n".join(FORGOTTEN_LINE if f"sum:{row['id']}" in hidden else render_summary_line(row)
                           for row in rows)
        target = min(self.config.condensed_target_tokens, max(1, estimate_tokens(text) // 3))
        depth = group[0].depth + 1
        options = SummarizeOptions(is_condensed=True, depth=depth, target_tokens=target)
        summary = self._summarize(text, options, run)
        node = _Node("condensed", depth, summary, estimate_tokens(text),
                     sum(r["descendant_count"] for r in rows),
                     min(r["earliest_at"] for r in rows), max(r["latest_at"] for r in rows))
        if not self._commit(conv, group, node, _CONDENSED_LINKS, ids):
            return False
        run.condensed += 1
        return True

    def _commit(self, conv: int, items: list, node: "_Node", links: str, sources: list) -> bool:
        """Store ``node`` in place of ``items``, linked to ``sources``, in one transaction.

        False (nothing written) when the summary would not shrink the context or the
        items changed while the summarizer ran.
        """
        if not _shrinks(node, items):
            return False
        with self.db.transaction() as conn:
            self.db.serialize(conn, "conversation", conv)
            if not _unchanged(conn, conv, items):
                return False
            summary_id = _insert_summary(conn, conv, node)
            conn.executemany(links, [(summary_id, source, n) for n, source in enumerate(sources)])
            _replace_items(conn, conv, items, summary_id, node)
        return True

    def _summarize(self, text: str, options: SummarizeOptions, run: _Run) -> str:
        run.calls += 1
        remaining = max(1.0, run.deadline - time.monotonic())
        # Neither the summarizer's prompt nor the stored summary carries a secret or a forgotten fact's
        # value, even one saved or forgotten after the messages were stored.
        redactor = redactor_of(self.db)
        options = replace(options, previous=redactor.text(options.previous))
        summary = call_with_timeout(self.summarizer, redactor.text(text), options,
                                    min(self.config.summarizer_timeout_s, remaining))
        return redactor_of(self.db).text(summary)  # read again: a secret saved while the model wrote

    def _message_rows(self, ids: list[int]) -> list:
        rows = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ",".join("?" * len(part))
            for row in self.db.conn.execute(f"SELECT * FROM ctx_messages WHERE id IN ({marks})", part):
                rows[row["id"]] = row
        return [rows[i] for i in ids]

    def _summary_rows(self, ids: list[str]) -> list:
        marks = ",".join("?" * len(ids))
        rows = {r["id"]: r
                for r in self.db.conn.execute(f"SELECT * FROM ctx_summaries WHERE id IN ({marks})", ids)}
        return [rows[i] for i in ids]


@dataclass(frozen=True)
class _Node:
    kind: str
    depth: int
    content: str
    source_tokens: int
    descendants: int
    earliest_at: str
    latest_at: str


def _previous_summary(older: list[plan.Item], index: int, contents: dict[str, str]) -> str:
    if index > 0 and older[index - 1].summary_id:
        return contents.get(older[index - 1].summary_id, "")
    return ""


def _rendered_tokens(summary_id: str, node: _Node) -> int:
    return estimate_tokens(render_summary(summary_id, node.kind, node.depth, node.descendants,
                                          node.earliest_at, node.latest_at, node.content))


def _shrinks(node: _Node, items: list[plan.Item]) -> bool:
    """True when the rendered summary costs fewer context tokens than the items it would replace."""
    replaced = sum(item.tokens for item in items)
    if _rendered_tokens("sum_" + "0" * 16, node) < replaced:
        return True
    log.debug("summary of %d items would not shrink the context (%d tokens); kept as is", len(items),
              replaced)
    return False


def _unchanged(conn, conv: int, items: list[plan.Item]) -> bool:
    """True when the items are still in the context exactly as planned (read inside the transaction)."""
    rows = conn.execute(
        "SELECT position, message_id, summary_id FROM ctx_items WHERE conversation_id = ?"
        " AND position BETWEEN ? AND ? ORDER BY position",
        (conv, items[0].position, items[-1].position),
    ).fetchall()
    if [tuple(row) for row in rows] != [item.key for item in items]:
        log.warning("conversation %s changed during compaction; its chunk is skipped", conv)
        return False
    return True


def _insert_summary(conn, conv: int, node: _Node) -> str:
    summary_id = "sum_" + uuid.uuid4().hex[:16]
    conn.execute(
        "INSERT INTO ctx_summaries (id, conversation_id, kind, depth, content, token_count, "
        "source_token_count, descendant_count, earliest_at, latest_at, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (summary_id, conv, node.kind, node.depth, node.content, _rendered_tokens(summary_id, node),
         node.source_tokens, node.descendants, node.earliest_at, node.latest_at, utc_timestamp()),
    )
    return summary_id


def _replace_items(conn, conv: int, items: list[plan.Item], summary_id: str, node: _Node) -> None:
    conn.execute(
        "DELETE FROM ctx_items WHERE conversation_id = ? AND position BETWEEN ? AND ?",
        (conv, items[0].position, items[-1].position),
    )
    tokens = conn.execute("SELECT token_count FROM ctx_summaries WHERE id = ?", (summary_id,)).fetchone()[0]
    conn.execute(
        "INSERT INTO ctx_items (conversation_id, position, summary_id, token_count) VALUES (?, ?, ?, ?)",
        (conv, items[0].position, summary_id, tokens),
    )
