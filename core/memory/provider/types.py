"""Data shapes of the provider contract: sessions, stats, compaction, search, lineage, profiles."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from core.memory.provider.messages import Message


@dataclass(frozen=True)
class Session:
    """Identifies one conversation; passed to every provider method."""

    id: str
    """Unique session key, e.g. ``finn:cli:main``."""
    agent_id: str = ""
    """The agent the session belongs to."""
    user_id: str = ""
    """The user talking to the agent ("" when anonymous)."""
    channel: str = ""
    """Where the conversation happens, e.g. ``cli``."""


@dataclass(frozen=True)
class SessionStats:
    """What a provider holds for one session; all zero for an unknown session."""

    message_count: int = 0
    """Messages stored."""
    token_count: int = 0
    """Estimated tokens of every stored message."""
    summary_count: int = 0
    """Summaries stored (0 for providers without compaction)."""
    context_tokens: int = 0
    """Tokens of the current context (summaries plus messages not yet summarised)."""
    oldest_at: str = ""
    """Time of the first message ("" when empty)."""
    newest_at: str = ""
    """Time of the last message ("" when empty)."""


class CompactionMode(enum.Enum):
    """How far a compaction goes."""

    INCREMENTAL = "incremental"
    """One leaf pass and one condensed pass."""
    FULL = "full"
    """Repeat passes until nothing changes (bounded by rounds, deadline and progress)."""


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction did."""

    leaf_summaries_created: int = 0
    condensed_summaries_created: int = 0
    messages_compacted: int = 0
    tokens_before: int = 0
    """Context tokens before."""
    tokens_after: int = 0
    """Context tokens after."""
    duration_s: float = 0.0
    summarizer_calls: int = 0
    """Calls of the summarizer's ``summarize`` (an LLM summarizer may escalate inside one call)."""
    rounds: int = 0
    """Leaf+condensed rounds run."""
    stopped: str = "done"
    """Why it stopped: ``done``, ``round_limit``, ``deadline``, ``no_progress`` or ``no_summarizer``."""


class SearchScope(enum.Enum):
    """Which layer a search looks in."""

    BOTH = "both"
    MESSAGES = "messages"
    SUMMARIES = "summaries"


@dataclass(frozen=True)
class SearchQuery:
    """A full-text search request."""

    text: str
    """Words to find (all of them must occur)."""
    scope: SearchScope = SearchScope.BOTH
    limit: int = 20


@dataclass(frozen=True)
class SearchResult:
    """One search hit."""

    source_type: str
    """``message`` or ``summary``."""
    source_id: str
    """``msg_<n>`` or ``sum_<hex>``."""
    content: str
    """A snippet around the match, matches in ``[brackets]``."""
    score: float
    """Relevance in [0, 1], higher is better: BM25 as a share of the most the query's words could score
    (0.45 for a text of average length holding each word once; see
    :mod:`core.plugins.memory.lcm.relevance`)."""
    timestamp: str
    """When the source was created."""


@dataclass(frozen=True)
class DescribeResult:
    """A summary's metadata and lineage."""

    summary_id: str
    kind: str
    """``leaf`` (built from messages) or ``condensed`` (built from summaries)."""
    depth: int
    """0 for a leaf, 1+ for condensed."""
    content: str
    earliest_at: str
    latest_at: str
    descendant_count: int
    """Original messages this summary covers."""
    token_count: int
    parent_ids: tuple[str, ...]
    """Summaries that were built from this one."""
    child_ids: tuple[str, ...]
    """Summaries or messages (``msg_<n>``) this one was built from, in order."""


@dataclass(frozen=True)
class ExpandMessage:
    """A source message of a leaf summary."""

    id: str
    message: Message


@dataclass(frozen=True)
class ExpandChild:
    """A child summary of a condensed summary."""

    id: str
    kind: str
    depth: int
    content: str
    token_count: int


@dataclass(frozen=True)
class ExpandResult:
    """The children of a summary: messages for a leaf, summaries for a condensed one."""

    summary_id: str
    messages: tuple[ExpandMessage, ...] = ()
    children: tuple[ExpandChild, ...] = ()
    truncated: bool = False
    """True when the token cap cut the list short."""


@dataclass(frozen=True)
class SessionInfo:
    """Metadata of one session."""

    id: str
    agent_id: str = ""
    user_id: str = ""
    channel: str = ""
    title: str = ""
    """Taken from the first user message unless set."""
    created_at: str = ""
    last_active: str = ""
    archived: bool = False


@dataclass(frozen=True)
class ListOptions:
    """Filters of ``list_info``."""

    agent_id: str = ""
    """Only this agent ("" = all)."""
    user_id: str | None = None
    """Only this user (None = all)."""
    include_archived: bool = False
    limit: int = 0
    """0 = no limit."""
    offset: int = 0


class ChangeSource(str, enum.Enum):
    """Who triggered a memory write."""

    USER = "user"
    AGENT = "agent"
    REFLECT = "reflect"
    SYSTEM = "system"


@dataclass(frozen=True)
class ChangeEntry:
    """One changelog record."""

    id: int
    user_id: str
    agent_id: str
    session_id: str
    scope: str
    """``profile``, ``soul`` or ``constraint``."""
    action: str
    """``create``, ``update``, ``delete`` or ``rollback``."""
    source: str
    version_before: int | None
    version_after: int | None
    before_text: str
    after_text: str
    created_at: str


@dataclass(frozen=True)
class ConstraintEntry:
    """One hard rule the agent must follow."""

    id: str
    text: str
    created_at: str


@dataclass(frozen=True)
class SessionSnapshot:
    """The memory version a session is frozen at."""

    session_id: str
    user_id: str
    agent_id: str
    version: int
    updated_at: str
