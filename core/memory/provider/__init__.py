"""The conversation-memory provider contract (a port of seeds 000/001).

    from core.memory.provider import Session, Message, bind, build_tool
    provider.append(session, [Message("user", "hi")])
    context = provider.assemble(session, budget=8000, fresh_tail=20)

Contract: :class:`Provider` and the optional capabilities in
:mod:`~core.memory.provider.capabilities`; data shapes in
:mod:`~core.memory.provider.types`; who is talking in
:mod:`~core.memory.provider.context`; the generated ``memory`` tool in
:mod:`~core.memory.provider.tool`; tracing in :mod:`~core.memory.provider.tracing`.
"""

from core.memory.provider.capabilities import (
    CAPABILITIES,
    ChangelogReader,
    ChangelogWriter,
    Compactor,
    ConstraintStore,
    Explorer,
    ProfileStore,
    Provider,
    Reviewer,
    Searcher,
    SessionManager,
    SessionSnapshotStore,
    VersionedConstraintStore,
    VersionedProfileStore,
    capabilities,
)
from core.memory.compaction.escalation import SummarizeOptions, Summarizer  # shared with LOG.md compaction
from core.memory.provider.context import bind, current_session
from core.memory.provider.messages import (
    Message,
    ToolCall,
    check_id,
    check_message,
    tool_calls_from_json,
    tool_calls_to_json,
)
from core.memory.provider.tool import MemoryTool, build_tool
from core.memory.provider.tracing import TraceEvent, unwrap, with_tracing
from core.memory.provider.types import (
    ChangeEntry,
    ChangeSource,
    CompactionMode,
    CompactionResult,
    ConstraintEntry,
    DescribeResult,
    ExpandChild,
    ExpandMessage,
    ExpandResult,
    ListOptions,
    SearchQuery,
    SearchResult,
    SearchScope,
    Session,
    SessionInfo,
    SessionSnapshot,
    SessionStats,
)
from core.llm import estimate_tokens

__all__ = [
    "CAPABILITIES", "ChangeEntry", "ChangeSource", "ChangelogReader", "ChangelogWriter", "CompactionMode",
    "CompactionResult", "Compactor", "ConstraintEntry", "ConstraintStore", "DescribeResult", "ExpandChild",
    "ExpandMessage", "ExpandResult", "Explorer", "ListOptions", "MemoryTool", "Message", "ProfileStore",
    "Provider", "Reviewer", "SearchQuery", "SearchResult", "SearchScope", "Searcher", "Session",
    "SessionInfo", "SessionManager", "SessionSnapshot", "SessionSnapshotStore", "SessionStats",
    "SummarizeOptions", "Summarizer", "ToolCall", "TraceEvent", "VersionedConstraintStore",
    "VersionedProfileStore", "bind", "build_tool", "capabilities", "check_id", "check_message",
    "current_session", "estimate_tokens", "tool_calls_from_json", "tool_calls_to_json", "unwrap",
    "with_tracing",
]
