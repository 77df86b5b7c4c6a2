"""One agent session in the conversation-memory provider, as the engine sees it.

The engine reads the conversation through :meth:`Conversation.history` (the
provider's ``assemble``) and stores each finished turn with
:meth:`Conversation.append_turn`. A provider without its own compaction gets
seed 002's handoff compaction: a structured summary replaces all but the last
``keep_tail`` messages in what the model sees. The memory keeps the summary
(:class:`core.memory.SessionHandoff`, ``memory/sessions/<session>-<hash>.handoff.json``);
the messages stay stored, so nothing is lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from core.engine import prompts
from core.errors import SummarizerError, ValidationError
from core.llm import estimate_tokens, pack, room_chars, window_of_generate
from core.memory.provider import (
    CompactionMode,
    Compactor,
    ConstraintStore,
    Message,
    ProfileStore,
    Session,
    SessionManager,
)
from core.memory import Handoff, Redactor, SessionHandoff
from core.paths import AgentPaths
from core.engine.prompting.system_prompt import Identity

log = logging.getLogger(__name__)

EVERYTHING = 10**12
"""A budget and fresh tail larger than any session: "give me all of it"."""


@dataclass(frozen=True)
class CompactionReport:
    """What a session compaction did, for the user."""

    method: str
    """``lcm`` (the provider's full compaction) or ``handoff`` (seed 002 summary)."""
    tokens_before: int
    tokens_after: int
    summary: str = ""
    """The handoff summary, or LCM's newest summary in the context."""
    details: str = ""
    """What was compacted (LCM: messages and summaries)."""


class Conversation:
    """The session's messages through the provider, plus handoff compaction when the provider has none."""

    def __init__(self, provider: Any, session: Session, paths: AgentPaths, fresh_tail: int, *,
                 redactor: Callable[[], Redactor]) -> None:
        """``redactor()`` hides the secrets known now in the handoff summary and in the prompt that asks for
        it."""
        self.provider = provider
        self.redactor = redactor
        self.session = session
        self.fresh_tail = fresh_tail
        self.handoffs = SessionHandoff(paths, session.id)
        self.handoff_file = self.handoffs.file
        self.warned: set[str] = set()
        """Warnings already given in this session (each is given once)."""
        provider.bootstrap(session)

    # -- reading ----------------------------------------------------------------

    def history(self, budget: int, fresh_tail: int | None = None) -> list[dict[str, Any]]:
        """Earlier turns as Ollama chat dicts, oldest first, within ``budget`` tokens (the fresh tail always;
        ``fresh_tail`` overrides the configured one)."""
        tail = self.fresh_tail if fresh_tail is None else fresh_tail
        handoff = self.handoff()
        if handoff is None:
            messages = self.provider.assemble(self.session, max(0, budget), tail)
            return [m.to_ollama() for m in messages]
        prefix = _handoff_messages(handoff)
        rest = _fit(self._all_messages()[handoff.covered:], budget - _tokens(prefix), tail)
        return prefix + [m.to_ollama() for m in rest]

    def tokens(self) -> int:
        """Tokens the session would put before the model now (its size for auto-compaction)."""
        handoff = self.handoff()
        if handoff is not None:
            return estimate_tokens(handoff.summary) + sum(m.tokens()
                                                          for m in self._all_messages()[handoff.covered:])
        stats = self.provider.stats(self.session)
        return stats.context_tokens or stats.token_count

    def message_count(self) -> int:
        """Messages stored for the session."""
        return self.provider.stats(self.session).message_count

    def handoff(self) -> Handoff | None:
        """The current handoff summary, if the session was compacted that way."""
        return self.handoffs.read()

    def identity(self) -> Identity:
        """Soul, constraints and user profile from the provider's profile store (when it has one)."""
        user, agent = self.session.user_id, self.session.agent_id
        soul = profile = ""
        constraints: tuple[str, ...] = ()
        if isinstance(self.provider, ProfileStore):
            soul = self.provider.get_agent_soul(user, agent)
            profile = self.provider.get_profile(user, agent)
        if isinstance(self.provider, ConstraintStore):
            constraints = tuple(c.text for c in self.provider.get_constraints(user, agent))
        return Identity(soul=soul, constraints=constraints, profile=profile)

    # -- writing ----------------------------------------------------------------

    def append_turn(self, turn_id: str, messages: list[dict[str, Any]], maybe_stored: bool = False) -> bool:
        """Store one finished turn; return False if it was already stored.

        ``maybe_stored`` says an earlier attempt may have stored it before a kill:
        then the session's last messages are compared with the turn first.

        Raises:
            ValidationError: a message is malformed; nothing is stored.
        """
        converted = [Message.from_ollama(m) for m in messages]
        if not converted:
            return False
        last = self.provider.assemble(self.session, 1, len(converted)) if maybe_stored else []
        if maybe_stored and [_key(m) for m in last[-len(converted):]] == [_key(m) for m in converted]:
            log.info("turn %s is already in session %s", turn_id, self.session.id)
            return False
        self.provider.append(self.session, converted)
        return True

    def compact(self, summarize, keep_tail: int) -> CompactionReport:
        """Compact the session: the provider's full compaction if it has one, else a handoff summary.

        ``summarize(prompt) -> text`` asks the backend. On any failure the session is untouched.

        Raises:
            SummarizerError: the summary failed or was empty.
        """
        before = self.tokens()
        if isinstance(self.provider, Compactor):
            result = self.provider.compact(self.session, CompactionMode.FULL, fresh_tail=keep_tail)
            if not result.leaf_summaries_created and not result.condensed_summaries_created:
                raise ValidationError(f"nothing to compact: beyond the newest {keep_tail} messages, kept as "
                                      f"they are, too few are left unsummarised ({self.message_count()} "
                                      f"messages, ~{before} tokens); the session was left untouched")
            top = self.provider.top_summary(self.session) if hasattr(self.provider, "top_summary") else ""
            done = (f"{result.messages_compacted} messages into {result.leaf_summaries_created} leaf and "
                    f"{result.condensed_summaries_created} condensed summaries, the newest {keep_tail} kept "
                    f"as they are ({result.stopped})")
            return CompactionReport("lcm", before, self.tokens(), top, details=done)
        return self._handoff_compact(summarize, keep_tail, before)

    def _handoff_compact(self, summarize, keep_tail: int, before: int) -> CompactionReport:
        messages = self._all_messages()
        previous = self.handoff()
        start = previous.covered if previous else 0
        covered = _cut(messages, max(start, len(messages) - max(0, keep_tail)))
        if covered <= start:
            raise ValidationError(f"nothing to compact: the session has at most {keep_tail} messages since "
                                  "the last summary")
        redactor = self.redactor()
        transcript = redactor.text(_transcript(previous, messages[start:covered]))
        summary = handoff_summary(summarize, transcript)
        if not isinstance(summary, str) or not summary.strip():
            raise SummarizerError("empty summary response: the session was left untouched")
        replaced = estimate_tokens(transcript)
        if estimate_tokens(summary.strip()) >= replaced:
            raise SummarizerError(f"the summary ({estimate_tokens(summary.strip())} tokens) is not smaller "
                                  f"than what it would replace ({replaced} tokens): the session was left "
                                  "untouched")
        written = self.handoffs.write(redactor.text(summary.strip()), covered)
        return CompactionReport("handoff", before, self.tokens(), written.summary)

    def _all_messages(self) -> list[Message]:
        if isinstance(self.provider, SessionManager):
            return self.provider.load_history(self.session.id)
        return self.provider.assemble(self.session, EVERYTHING, EVERYTHING)


def _handoff_messages(handoff: Handoff) -> list[dict[str, Any]]:
    """Seed 002: the summary as a user message and an assistant acknowledgment."""
    return [
        {"role": "user", "content": f"[Summary of the earlier conversation]\n\n{handoff.summary}"},
        {"role": "assistant", "content": prompts.load("HANDOFF_ACK")},
    ]


def _cut(messages: list[Message], index: int) -> int:
    """Move a cut back so the kept tail never starts with a tool result cut off from its call."""
    while 0 < index < len(messages) and messages[index].role == "tool":
        index -= 1
    return index


def _fit(messages: list[Message], budget: int, fresh_tail: int) -> list[Message]:
    kept: list[Message] = []
    for position, message in enumerate(reversed(messages)):
        cost = message.tokens()
        if position >= fresh_tail and cost > budget:
            break
        kept.append(message)
        budget -= cost
    kept.reverse()
    while kept and kept[0].role == "tool":
        kept.pop(0)
    return kept


def handoff_summary(summarize, transcript: str) -> str:
    """The handoff summary of ``transcript``; a transcript too long for the model's window is read in
    pieces that fit, each prompt carrying the summary so far (so no prompt is ever cut)."""
    head = prompts.load("HANDOFF")
    room = room_chars(window_of_generate(summarize), len(head) + 64)
    pieces = pack(transcript.splitlines(), room // 2 if len(transcript) > room else room)
    summary = ""
    for number, piece in enumerate(pieces, 1):
        so_far = (
            f"# Summary so far (parts 1-{number - 1} of {len(pieces)})\n\n{summary}\n\n" if summary else ""
        )
        part = f" (part {number} of {len(pieces)})" if len(pieces) > 1 else ""
        summary = summarize(f"{head}\n\n{so_far}# Conversation{part}\n\n" + "\n".join(piece))
        if not isinstance(summary, str) or not summary.strip():
            return ""
    return summary


def _transcript(previous: Handoff | None, messages: list[Message]) -> str:
    lines = []
    if previous:
        lines.append(f"[Summary of what came before]\n{previous.summary}\n")
    for message in messages:
        name = f" ({message.tool_name})" if message.tool_name else ""
        lines.append(f"{message.role}{name}: {message.text()}")
    return "\n".join(lines)


def _tokens(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(str(m.get("content") or "")) for m in messages)


def _key(message: Message) -> tuple[str, str, str]:
    return message.role, message.content, message.tool_name
