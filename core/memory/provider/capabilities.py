"""The Provider protocol and its optional capabilities, detected at run time by shape.

A provider implements :class:`Provider`; each optional capability is a small
protocol. Code branches on ``isinstance(provider, Searcher)`` and the like,
so the protocols that are branched on are ``@runtime_checkable``; the
conformance suite in ``tests/providers`` is the real check of behaviour.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.memory.provider.messages import Message
from core.memory.provider.types import (
    ChangeEntry,
    CompactionMode,
    CompactionResult,
    ConstraintEntry,
    DescribeResult,
    ExpandResult,
    ListOptions,
    SearchQuery,
    SearchResult,
    Session,
    SessionInfo,
    SessionSnapshot,
    SessionStats,
)


@runtime_checkable
class Provider(Protocol):
    """The conversation-memory contract every provider implements.

    Appends on the same session are serialised by the provider; appends on
    different sessions may run concurrently, from threads or processes.
    """

    @property
    def name(self) -> str:
        """The provider's identifier (``lcm``, ``simple``)."""

    def bootstrap(self, session: Session) -> None:
        """Make sure the session's conversation record exists; idempotent."""

    def append(self, session: Session, messages: list[Message]) -> None:
        """Store the messages of one turn, in order, in one transaction.

        Raises:
            ValidationError: a message is malformed; nothing was stored.
        """

    def assemble(self, session: Session, budget: int, fresh_tail: int) -> list[Message]:
        """Build the context for the model, oldest first.

        The last ``fresh_tail`` messages are always included verbatim (all of
        them when the session has fewer); older content fills the rest of
        ``budget`` tokens, newest first. A tool result is never returned
        without the assistant message that called it.
        """

    def stats(self, session: Session) -> SessionStats:
        """Counts for the session; zero stats (not an error) for an unknown session."""

    def close(self) -> None:
        """Release connections; safe to call twice."""


@runtime_checkable
class Compactor(Protocol):
    """Summarises older context so it fits the budget."""

    def needs_compaction(self, session: Session, budget: int, threshold: float | None = None) -> bool:
        """True when the context holds more than ``threshold * budget`` tokens and a summarizer exists."""

    def compact(self, session: Session,
                mode: CompactionMode = CompactionMode.INCREMENTAL) -> CompactionResult:
        """Run one compaction.

        Raises:
            SummarizerError: the summarizer failed; what was committed before stays consistent.
        """


@runtime_checkable
class Searcher(Protocol):
    """Full-text search of a session's history."""

    def search(self, session: Session, query: SearchQuery) -> list[SearchResult]:
        """Best matches first."""


@runtime_checkable
class Explorer(Protocol):
    """Navigation of the summary hierarchy."""

    def describe(self, summary_id: str, session: Session | None = None) -> DescribeResult:
        """Metadata and lineage of a summary (of ``session`` when given).

        Raises:
            SummaryNotFoundError: no such summary (in that session).
        """

    def expand(self, summary_id: str, token_cap: int = 4000, session: Session | None = None) -> ExpandResult:
        """The children of a summary: source messages of a leaf, child summaries of a condensed one."""


@runtime_checkable
class ProfileStore(Protocol):
    """Per-user, per-agent profile notes and agent soul."""

    def get_profile(self, user_id: str, agent_id: str) -> str:
        """The profile, "" when none."""

    def set_profile(self, user_id: str, agent_id: str, content: str) -> None:
        """Replace the profile."""

    def get_agent_soul(self, user_id: str, agent_id: str) -> str:
        """The soul, "" when none."""

    def set_agent_soul(self, user_id: str, agent_id: str, content: str) -> None:
        """Replace the soul."""


@runtime_checkable
class VersionedProfileStore(Protocol):
    """Reads of profile and soul as they were at a memory version."""

    def get_profile_at(self, user_id: str, agent_id: str, version: int) -> str:
        """The profile at ``version`` (current when ``version <= 0``)."""

    def get_agent_soul_at(self, user_id: str, agent_id: str, version: int) -> str:
        """The soul at ``version`` (current when ``version <= 0``)."""


@runtime_checkable
class ConstraintStore(Protocol):
    """Hard rules per user and agent."""

    def get_constraints(self, user_id: str, agent_id: str) -> list[ConstraintEntry]:
        """The active constraints, oldest first."""

    def add_constraint(self, user_id: str, agent_id: str, text: str) -> list[ConstraintEntry]:
        """Add one; return the new list."""

    def remove_constraint(self, user_id: str, agent_id: str, constraint_id: str) -> list[ConstraintEntry]:
        """Remove one by id; return the new list."""


@runtime_checkable
class VersionedConstraintStore(Protocol):
    """Reads of constraints as they were at a memory version."""

    def get_constraints_at(self, user_id: str, agent_id: str, version: int) -> list[ConstraintEntry]:
        """The constraints at ``version`` (current when ``version <= 0``)."""


@runtime_checkable
class ChangelogReader(Protocol):
    """Read access to the history of memory writes."""

    def read_changelog(self, user_id: str, agent_id: str, scope: str = "",
                       limit: int = 20) -> list[ChangeEntry]:
        """The newest ``limit`` entries (of ``scope`` when given), newest first."""


@runtime_checkable
class ChangelogWriter(Protocol):
    """Records memory writes made outside the provider."""

    def write_changelog(self, entry: ChangeEntry) -> None:
        """Store one entry (its id and time are assigned)."""


@runtime_checkable
class SessionManager(Protocol):
    """Session metadata and full history."""

    def save_info(self, info: SessionInfo) -> None:
        """Create or update a session's metadata."""

    def load_info(self, session_id: str) -> SessionInfo:
        """Raises SessionNotFoundError when unknown."""

    def list_info(self, options: ListOptions = ListOptions()) -> list[SessionInfo]:
        """Sessions matching the options, most recently active first."""

    def load_history(self, session_id: str) -> list[Message]:
        """Every stored message, oldest first ([] when unknown)."""


@runtime_checkable
class SessionSnapshotStore(Protocol):
    """Freezes the memory version a session sees."""

    def get_or_create_session_snapshot(self, session_id: str, user_id: str, agent_id: str) -> SessionSnapshot:
        """The snapshot, created at the current version when missing."""

    def advance_session_snapshot(self, session_id: str, user_id: str, agent_id: str) -> None:
        """Move the snapshot to the current version."""


@runtime_checkable
class Reviewer(Protocol):
    """Formats a conversation for a reviewing agent."""

    def build_review_context(self, session: Session, since: str = "") -> str:
        """Background summaries plus the messages since ``since`` (all when "")."""


CAPABILITIES: dict[str, type] = {
    "compactor": Compactor,
    "searcher": Searcher,
    "explorer": Explorer,
    "profile": ProfileStore,
    "versioned_profile": VersionedProfileStore,
    "constraints": ConstraintStore,
    "versioned_constraints": VersionedConstraintStore,
    "changelog_reader": ChangelogReader,
    "changelog_writer": ChangelogWriter,
    "sessions": SessionManager,
    "snapshots": SessionSnapshotStore,
    "reviewer": Reviewer,
}
"""Every optional capability by short name."""


def capabilities(provider: object) -> frozenset[str]:
    """The short names of the optional capabilities ``provider`` has."""
    return frozenset(name for name, proto in CAPABILITIES.items() if isinstance(provider, proto))
