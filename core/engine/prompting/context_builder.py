"""The prompt of each planner call, sized to the model's window.

Before every call: the system prompt and the memory message are built, the memory context trimmed
to its budget (see :mod:`core.engine.prompting.budgets`); a provider that can compact is asked
``needs_compaction(budget, threshold)`` and, when it says yes, runs one incremental compaction so
older turns live on as summaries (a failure warns and the turn goes on with the full history); the
earlier turns are assembled within what the window has left after this turn's messages, whose
largest tool results (then other messages) are shortened if they alone would overflow it. What does
not fit is never lost silently: the first time in a session that part of the conversation stays out
of the prompt, a WARNING and a LOG.md entry say so.

The model server keeps the previous prompt's KV cache and evaluates only what follows the prefix a
prompt shares with it, so the prompt keeps its prefix from call to call: the memory message, the one
part rebuilt at every step, comes after the older turns, right before this turn's request (which must be
the last thing the model reads before it answers, see :func:`ordered`); a compaction (whose summary calls take the server's cache)
runs at a run's first call unless the history no longer fits, and goes deep, keeping verbatim only the
newest messages that fill a quarter of the budget, so that several turns pass before the next one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from core.engine.prompting import budgets as sizing
from core.engine.prompting.budgets import Budgets
from core.errors import AgentOSError, ContextWindowTooSmallError
from core.memory.provider import CompactionMode, CompactionResult, Compactor
from core.llm import estimate_tokens
from core.plugins.memory.lcm import LCMProvider
from core.engine.prompting.system_prompt import PromptExtras, PromptParts, build_system_prompt

log = logging.getLogger(__name__)

CLIPPED_NOTE = "\n[... {cut} characters of this result left out to fit the model's window; ask for less]"
MIN_FRESH_TAIL = 2
"""Newest messages always sent verbatim, however small the window."""
TAIL_SHARE = 0.25
"""Share of the history budget that a compaction keeps verbatim (the newest messages, at most the
configured fresh tail): with the summaries the history is then well under the threshold."""
MIN_LEAF = 2
"""Fewest messages of a leaf summary made because the window is full."""
MIDDLE_NOTE = "\n[... {cut} characters of this message left out to fit the model's window ...]\n"
LOSS_TOLERANCE = 0.05
"""Share of the conversation that may differ between the stored and the assembled estimate (wrappers)."""


@dataclass
class Prompt:
    """One planner call's request."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    memory: str
    budgets: Budgets
    compaction: CompactionResult | None = None


class ContextBuilder:
    """Builds planner prompts for one session; remembers what it already reported."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.loss_reported = False
        self.last: Prompt | None = None
        self.tools_chosen = False
        self.turn_log: tuple[Any, int] = (None, 0)
        """The turn whose first planner call was built, and the newest LOG.md entry then: its later calls'
        memory shows the log up to it (the run's own steps are in the conversation)."""
        self.tools_note = ""
        """One line saying the core tool set is offered and why ("" when every tool is)."""

    def check(self) -> Budgets:
        """Size the fixed parts now (at start-up).

        Raises:
            ContextWindowTooSmallError: the window cannot hold them.
        """
        window = sizing.window_of(self.rt.backend, self.rt.config)
        return self._choose_tools(window, self._parts(PromptExtras(), window))

    def build(self, state: dict[str, Any], extras: PromptExtras) -> Prompt:
        """The messages and tools of the next planner call.

        Raises:
            ContextWindowTooSmallError: the window cannot hold the fixed parts.
            BackendError: the model's window could not be asked.
        """
        rt = self.rt
        window = sizing.window_of(rt.backend, rt.config)
        if not state.get("steps"):
            self.turn_log = (state.get("turn_id"), rt.manager.log.last_seq())
        elif self.turn_log[0] == state.get("turn_id"):
            extras = replace(extras, log_until=self.turn_log[1])
        parts = self._parts(extras, window)
        if not self.tools_chosen:
            self._choose_tools(window, parts)
        tools = rt.toolbox.definitions()
        budgets = self._plan(window, parts, tools)
        # The memory budget caps the memory message; what it leaves unused goes to the conversation.
        left = (budgets.num_ctx - budgets.reply - budgets.margin - budgets.tools - window.tokens(parts.system)
                - window.tokens(parts.memory_message))
        left = min(left, rt.config.engine.context_budget or left)
        current = fit_current(state["messages"], window, left)
        left -= sum(window.tokens(_text(m)) for m in current)
        units = sizing.estimate_units(window, max(0, left))
        tail = self._fresh_tail(units)
        compaction = self._compact_if_needed(units, tail, first_step=not state.get("steps"))
        history = rt.conversation.history(units, fresh_tail=tail)
        if _estimate(history) > units:  # the protected fresh tail alone is too long: newest first within the budget
            history = rt.conversation.history(units, fresh_tail=0)
        self._report_loss(history)
        earlier = tuple(str(m.get("content") or "") for m in history if m.get("role") == "user")
        if earlier:  # the memory points to the requests the conversation shows (it only gets shorter)
            parts = self._parts(replace(extras, earlier_requests=earlier), window)
        # Earlier turns never carry a secret back into a prompt. In this turn only the user's request and
        # get_fact's replies may: the model's own calls and other tools' results are redacted too.
        redactor = rt.manager.facts.redactor()
        current = [m if _may_hold_secret(m, n) else redactor(m) for n, m in enumerate(current)]
        stable = [{"role": "system", "content": parts.system}, *redactor(history)]
        prompt = Prompt(ordered(stable, current, parts.memory_message), tools, parts.memory, budgets, compaction)
        self.last = prompt
        return prompt

    def _choose_tools(self, window: Any, parts: PromptParts) -> Budgets:
        """Keep every tool when the conversation keeps a quarter of the window beside them, else offer the
        core set for the rest of the session (said once, in :attr:`tools_note`); return the budgets.

        Raises:
            ContextWindowTooSmallError: the window cannot hold the prompt even with the core set.
        """
        toolbox = self.rt.toolbox
        core = toolbox.core()
        try:
            budgets = self._plan(window, parts, toolbox.definitions())
        except ContextWindowTooSmallError:
            if len(core.tools) == len(toolbox.tools):
                raise
            budgets = None
        if budgets is None or (not sizing.leaves_room(budgets) and len(core.tools) < len(toolbox.tools)):
            budgets = self._plan(window, parts, core.definitions(), "the core set")
            full = sizing.tools_tokens(window, toolbox.definitions())
            self.rt.toolbox = core
            self.tools_note = (f"tools: the core set ({', '.join(core.tools)}; {budgets.tools} tokens), since "
                               f"all {len(toolbox.tools)} tools ({full} tokens) would leave the conversation less "
                               f"than a quarter of the {window.num_ctx}-token window")
            log.info("%s", self.tools_note)
        self.tools_chosen = True
        return budgets

    def _parts(self, extras: PromptExtras, window: Any) -> PromptParts:
        memory_units = sizing.estimate_units(window, sizing.memory_budget(window.num_ctx, self.rt.config))
        return build_system_prompt(self.rt.manager, self.rt.identity(), extras, memory_units)

    def _plan(self, window: Any, parts: PromptParts, tools: list[dict[str, Any]], tool_set: str = "") -> Budgets:
        # The budget's "system" is everything rebuilt each call except the memory context it sizes itself.
        base = max(0, window.tokens(parts.system) + window.tokens(parts.memory_message) - window.tokens(parts.memory))
        model = f"model {getattr(self.rt.backend, 'model', '?')!r}"
        return sizing.plan(window, self.rt.config, sizing.tools_tokens(window, tools), base, model, tool_set)

    def _fresh_tail(self, units: int) -> int:
        """The configured fresh tail, shortened to the newest messages that fill ``TAIL_SHARE`` of the history
        budget (so the summaries of older turns keep room beside it, and turns room to grow); at least two
        messages."""
        conversation = self.rt.conversation
        configured = conversation.fresh_tail
        newest = conversation.provider.assemble(conversation.session, int(units * TAIL_SHARE), 0)
        fitting = 0
        for message in reversed(newest):
            if message.summary_id:
                break
            fitting += 1
        return max(MIN_FRESH_TAIL, min(configured, fitting))

    def _compact_if_needed(self, units: int, tail: int, first_step: bool) -> CompactionResult | None:
        """One incremental compaction when the provider says the history passes the threshold; after a
        run's first call, only when the history no longer fits (a summary call takes the model server's
        prompt cache, which the run's later calls would otherwise reuse)."""
        rt = self.rt
        provider, session = rt.conversation.provider, rt.conversation.session
        if not isinstance(provider, Compactor) or rt.conversation.handoff() is not None:
            return None
        threshold = rt.config.provider.context_threshold if first_step else 1.0
        try:
            if not provider.needs_compaction(session, units, threshold):
                return None
            if isinstance(provider, LCMProvider):  # under the window's pressure: the tail that fits, small leaves
                result = provider.compact(session, CompactionMode.INCREMENTAL, fresh_tail=tail, min_leaf=MIN_LEAF)
            else:
                result = provider.compact(session, CompactionMode.INCREMENTAL)
        except AgentOSError as exc:
            log.warning("compaction before the model call failed, going on with the full history: %s", exc)
            rt.manager.append_log("SYSTEM", f"compaction before the model call failed: {exc}",
                                  {"kind": "context_compaction", "outcome": "warning"})
            return None
        log.info("conversation compacted before the model call: %s -> %s tokens (%d messages into %d+%d summaries)",
                 result.tokens_before, result.tokens_after, result.messages_compacted,
                 result.leaf_summaries_created, result.condensed_summaries_created)
        return result

    def _report_loss(self, history: list[dict[str, Any]]) -> None:
        """Warn once per session when part of the conversation stays out of the prompt."""
        if self.loss_reported:
            return
        stored = self.rt.conversation.tokens()
        sent = _estimate(history)
        if stored <= sent * (1 + LOSS_TOLERANCE) + 10:
            return
        self.loss_reported = True
        message = (f"the conversation holds ~{stored} tokens but only ~{sent} fit the model's window: older turns "
                   f"are left out of the prompt (they stay stored; /compact summarises them, or use the lcm "
                   f"provider, or a model with a longer context)")
        log.warning("%s", message)
        self.rt.manager.append_log("SYSTEM", message, {"kind": "context_overflow", "stored_tokens": stored,
                                                       "sent_tokens": sent})


def ordered(stable: list[dict[str, Any]], current: list[dict[str, Any]], memory: str) -> list[dict[str, Any]]:
    """The prompt's messages: the system message and older turns (the same from call to call, so the server's
    prompt cache covers them), the memory message, rebuilt at every step, then this turn's request and its
    tool calls and results.

    The request comes after the memory, never before it: the last user text of a prompt is what a model
    answers, and a real one asked with the memory block after the request answers the block. Ollama keeps
    the last message whatever its size when it must drop some to fit, so the request is the one it keeps.
    """
    return [*stable, {"role": "user", "content": memory}, *current]


def fit_current(messages: list[dict[str, Any]], window: Any, budget: int) -> list[dict[str, Any]]:
    """This turn's messages; when they overflow ``budget`` tokens, the largest tool results are shortened
    (their end goes), then the largest other messages (their middle goes)."""
    sizes = [window.tokens(_text(m)) for m in messages]
    excess = sum(sizes) - budget
    if excess <= 0:
        return messages
    out = [dict(m) for m in messages]
    tools = sorted((i for i, m in enumerate(out) if m.get("role") == "tool"), key=lambda i: -sizes[i])
    others = sorted((i for i, m in enumerate(out) if m.get("role") != "tool"), key=lambda i: -sizes[i])
    for i in [*tools, *others]:
        if excess <= 0:
            break
        content = str(out[i].get("content") or "")
        keep_tokens = max(sizes[i] - excess - window.tokens(CLIPPED_NOTE) - 8, 16)
        keep = window.chars(keep_tokens)
        if keep >= len(content):
            continue
        if out[i].get("role") == "tool":
            out[i]["content"] = content[:keep] + CLIPPED_NOTE.format(cut=len(content) - keep)
        else:  # a request: its beginning and its end (where the question usually is)
            head = keep * 2 // 3
            tail = keep - head
            out[i]["content"] = (content[:head] + MIDDLE_NOTE.format(cut=len(content) - keep)
                                 + content[len(content) - tail:])
        excess -= sizes[i] - window.tokens(out[i]["content"])
    return out


def _may_hold_secret(message: dict[str, Any], position: int) -> bool:
    """True for a message of this turn that may show a secret: the user's request (what they typed, the
    turn's first message) and get_fact's replies."""
    role = message.get("role")
    return (position == 0 and role == "user") or (role == "tool" and message.get("tool_name") == "get_fact")


def _text(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "")
    if message.get("tool_calls"):
        text += str(message["tool_calls"])
    return text


def _estimate(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(_text(m)) for m in messages)
