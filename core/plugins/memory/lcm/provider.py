"""LCMProvider: lossless context management over memory.db.

Messages are never deleted: compaction replaces runs of context items by
summaries that link to what they cover, so every message stays reachable
through ``describe``/``expand``.
"""

from __future__ import annotations

from pathlib import Path

from core.config import ProviderConfig
from core.memory.storage import Database
from core.memory.provider import (
    ChangeEntry,
    CompactionMode,
    CompactionResult,
    ConstraintEntry,
    DescribeResult,
    ExpandResult,
    SearchQuery,
    SearchResult,
    Session,
    SessionSnapshot,
)
from core.plugins.memory.base import StoredConversations
from core.plugins.memory.lcm import explore
from core.plugins.memory.lcm.compaction import CompactionEngine


class LCMProvider(StoredConversations):
    """The LCM provider: every capability of the contract."""

    name = "lcm"

    def __init__(self, db_path: Path | str | Database, summarizer=None,
                 config: ProviderConfig | None = None) -> None:
        """Open the provider over memory.db at ``db_path``.

        Args:
            db_path: the agent's memory.db (created and migrated on first use), or an open database.
            summarizer: an object with ``summarize(text, options) -> str``; None disables compaction.
            config: limits of compaction and the default fresh tail.
        """
        super().__init__(db_path, config)
        self.engine = CompactionEngine(self.db, self.store, summarizer, self.config)

    # -- Provider --------------------------------------------------------------

    def _window_items(self, conv: int):
        """Context items newest first: messages and the summaries that stand in for older ones."""
        return explore.context_newest_first(self.db, conv)

    # -- Compactor -------------------------------------------------------------

    def needs_compaction(self, session: Session, budget: int, threshold: float | None = None) -> bool:
        """True when a summarizer exists and the context exceeds ``threshold * budget`` tokens."""
        conv = self._conversation(session)
        if conv is None or self.engine.summarizer is None:
            return False
        limit = budget * (self.config.context_threshold if threshold is None else threshold)
        return self.store.context_tokens(conv) > limit

    def compact(self, session: Session, mode: CompactionMode = CompactionMode.INCREMENTAL,
                fresh_tail: int | None = None, min_leaf: int | None = None) -> CompactionResult:
        """Summarise older context, all but the newest ``fresh_tail`` messages (default: the configured
        fresh tail), in leaves of at least ``min_leaf`` messages (default: ``leaf_chunk_size``);
        see ``CompactionEngine``."""
        conv = self._conversation(session)
        if conv is None:
            return CompactionResult(stopped="done")
        return self.engine.compact(conv, CompactionMode(mode), fresh_tail, min_leaf)

    def top_summary(self, session: Session) -> str:
        """The newest summary in the session's context (what a compaction produced last), or ""."""
        conv = self._conversation(session)
        if conv is None:
            return ""
        row = self.db.conn.execute(
            "SELECT s.content FROM ctx_items i JOIN ctx_summaries s ON s.id = i.summary_id"
            " WHERE i.conversation_id = ? ORDER BY i.position DESC LIMIT 1", (conv,)).fetchone()
        return row[0] if row else ""

    # -- Searcher / Explorer / Reviewer -----------------------------------------

    def search(self, session: Session, query: SearchQuery) -> list[SearchResult]:
        """BM25-ranked full-text search of the session's messages and/or summaries."""
        conv = self._conversation(session)
        if conv is None:
            explore.fts_query(query.text)
            return []
        return explore.search(self.db.conn, conv, query, self.db.dialect)

    def describe(self, summary_id: str, session: Session | None = None) -> DescribeResult:
        """Metadata and lineage of a summary."""
        return explore.describe(self.db.conn, summary_id, self._scope(session))

    def expand(self, summary_id: str, token_cap: int = 4000, session: Session | None = None) -> ExpandResult:
        """Source messages of a leaf; child summaries of a condensed summary."""
        return explore.expand(self.db.conn, summary_id, token_cap, self._scope(session))

    def build_review_context(self, session: Session, since: str = "") -> str:
        """Background summaries plus messages since ``since``; "" when there is nothing."""
        conv = self._conversation(session)
        return "" if conv is None else explore.review_context(self.db.conn, conv, since)

    def _scope(self, session: Session | None) -> int | None:
        if session is None:
            return None
        # An unknown session owns no summaries: -1 matches none.
        conv = self._conversation(session)
        return -1 if conv is None else conv

    def get_profile_at(self, user_id: str, agent_id: str, version: int) -> str:
        return self.profiles.get_at("profile", user_id, agent_id, version)

    def get_agent_soul_at(self, user_id: str, agent_id: str, version: int) -> str:
        return self.profiles.get_at("soul", user_id, agent_id, version)

    def get_constraints(self, user_id: str, agent_id: str) -> list[ConstraintEntry]:
        return self.profiles.constraints(user_id, agent_id)

    def get_constraints_at(self, user_id: str, agent_id: str, version: int) -> list[ConstraintEntry]:
        return self.profiles.constraints(user_id, agent_id, version)

    def add_constraint(self, user_id: str, agent_id: str, text: str) -> list[ConstraintEntry]:
        return self.profiles.add_constraint(user_id, agent_id, text)

    def remove_constraint(self, user_id: str, agent_id: str, constraint_id: str) -> list[ConstraintEntry]:
        return self.profiles.remove_constraint(user_id, agent_id, constraint_id)

    def read_changelog(self, user_id: str, agent_id: str, scope: str = "",
                       limit: int = 20) -> list[ChangeEntry]:
        return self.profiles.changelog(user_id, agent_id, scope, limit)

    def write_changelog(self, entry: ChangeEntry) -> None:
        self.profiles.write_entry(entry)

    def get_or_create_session_snapshot(self, session_id: str, user_id: str, agent_id: str) -> SessionSnapshot:
        return self.profiles.snapshot(session_id, user_id, agent_id)

    def advance_session_snapshot(self, session_id: str, user_id: str, agent_id: str) -> None:
        self.profiles.advance_snapshot(session_id, user_id, agent_id)

