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
prompt shares with it, so a prompt repeats the previous one and adds to its end (see
:mod:`core.engine.prompting.anchor`): the system message, the earlier turns up to the memory message and the
memory message stay as they were (the memory is read at every call and sent again as it was while it says
nothing the prompt does not show), then come the turns stored since, this call's notes and this turn, whose
request is the last thing the model reads before it answers (see :func:`ordered`). A compaction (whose
summary calls take the server's cache) runs only when the history no longer fits
(``provider.context_threshold`` at a run's first call) and goes deep, keeping verbatim only the newest
messages that fill a quarter of the budget, so that several turns pass before the next one; without
compactions, older turns leave the prompt in a block, half the history budget at once.
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
from core.engine.prompting.anchor import Anchor
from core.engine.prompting.memory_message import MemoryView
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
KEEP_SHARE = 0.5
"""Share of the history budget that the turns kept fill when older ones must leave a prompt that no compaction
makes room in: a block leaves at once, and the next turns are added after the same start."""
LOSS_TOLERANCE = 0.05
"""Share of the conversation that may differ between the stored and the assembled estimate (wrappers)."""


@dataclass
class Prompt:
    """One planner call's request."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    memory: str
    """The memory message sent."""
    budgets: Budgets
    compaction: CompactionResult | None = None
    renewed: str = ""
    """Why the prompt's start (the earlier turns and the memory message) was laid again ("" when it was
    kept)."""


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
        self.anchor: Anchor | None = None
        """The earlier turns and the memory message that the session's prompts start with."""

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
        first_step = not state.get("steps")
        if first_step:
            self.turn_log = (state.get("turn_id"), rt.manager.log.last_seq())
        elif self.turn_log[0] == state.get("turn_id"):
            extras = replace(extras, log_until=self.turn_log[1])
        parts = self._parts(extras, window)
        if not self.tools_chosen:
            self._choose_tools(window, parts)
        tools = rt.toolbox.definitions()
        budgets = self._plan(window, parts, tools)
        redactor = rt.manager.facts.redactor()
        anchor, renewed = self._kept_anchor(parts.view, first_step)
        memory = redactor(anchor.memory) if anchor is not None else parts.memory
        current, units = self._fit(window, budgets, parts, memory, state["messages"])
        tail = self._fresh_tail(units)
        compaction = self._compact_if_needed(units, tail, first_step=first_step)
        history = redactor(self._history(units, tail))
        start = anchor.start_in(history) if anchor is not None else None
        if anchor is None or start is None:
            renewed = renewed or "the conversation's start changed"
            evict = self._leaves_out(history)
            # a block of older turns leaves at once; or sized for another memory
            if evict or memory != parts.memory:
                current, units = self._fit(window, budgets, parts, parts.memory, state["messages"])
                history = redactor(self._history(int(units * KEEP_SHARE) if evict else units, tail))
            # The memory points to the requests the prompt shows (it only gets shorter), this turn's among
            # them: it stays in the prompts of later turns, before this one.
            requests = tuple(str(m.get("content") or "") for m in history if m.get("role") == "user")
            parts = self._parts(replace(extras, earlier_requests=(*requests, extras.request)), window)
            anchor = Anchor(rt.conversation.session.id, history, parts.memory, parts.view)
            self.anchor, memory, start = anchor, parts.memory, 0
            log.debug("the prompt's start is laid again: %s", renewed)
        self._report_loss(history[start:])
        settled_end = start + len(anchor.settled)
        anchor.saw(parts.view, rt.manager.log.last_seq(), rt.run_id)
        # Earlier turns never carry a secret back into a prompt. In this turn only the user's request and
        # get_fact's replies may: the model's own calls and other tools' results are redacted too.
        current = [m if _may_hold_secret(m, n) else redactor(m) for n, m in enumerate(current)]
        messages = ordered(parts.system, anchor.settled, memory, history[settled_end:], parts.note, current)
        prompt = Prompt(messages, tools, memory, budgets, compaction, renewed)
        self.last = prompt
        return prompt

    def _kept_anchor(self, view: MemoryView, first_step: bool) -> tuple[Anchor | None, str]:
        """The session's anchor when its memory still says it all, else None and why not."""
        anchor = self.anchor
        if anchor is None or anchor.session != self.rt.conversation.session.id:
            return None, "a new session"
        why = anchor.outdated(view, self.rt.run_id, first_step)
        return (None, why) if why else (anchor, "")

    def _fit(self, window: Any, budgets: Budgets, parts: PromptParts, memory: str,
             messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """This turn's messages fitted beside the fixed parts and ``memory``, and the units left for the
        history."""
        # The memory budget caps the memory message; what it leaves unused goes to the conversation.
        left = (budgets.num_ctx - budgets.reply - budgets.margin - budgets.tools - window.tokens(parts.system)
                - window.tokens(parts.note) - window.tokens(memory))
        left = min(left, self.rt.config.engine.context_budget or left)
        current = fit_current(messages, window, left)
        left -= sum(window.tokens(_text(m)) for m in current)
        return current, sizing.estimate_units(window, max(0, left))

    def _history(self, units: int, tail: int) -> list[dict[str, Any]]:
        history = self.rt.conversation.history(units, fresh_tail=tail)
        # the protected fresh tail alone is too long: newest first within the budget
        if _estimate(history) > units:
            history = self.rt.conversation.history(units, fresh_tail=0)
        return history

    def _leaves_out(self, history: list[dict[str, Any]]) -> bool:
        """True when ``history`` leaves out part of the stored conversation (no compaction made room for
        it)."""
        return self.rt.conversation.tokens() > _estimate(history) * (1 + LOSS_TOLERANCE) + 10

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
            self.tools_note = (f"tools: the core set ({', '.join(core.tools)}; {budgets.tools} tokens), "
                               f"since all {len(toolbox.tools)} tools ({full} tokens) would leave the "
                               f"conversation less than a quarter of the {window.num_ctx}-token window")
            log.info("%s", self.tools_note)
        self.tools_chosen = True
        return budgets

    def _parts(self, extras: PromptExtras, window: Any) -> PromptParts:
        memory_units = sizing.estimate_units(window, sizing.memory_budget(window.num_ctx, self.rt.config))
        return build_system_prompt(self.rt.manager, self.rt.identity(), extras, memory_units)

    def _plan(self, window: Any, parts: PromptParts, tools: list[dict[str, Any]],
              tool_set: str = "") -> Budgets:
        # The budget's "system" is everything rebuilt each call but the memory, which it sizes itself.
        base = window.tokens(parts.system) + window.tokens(parts.note)
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
            # under the window's pressure: the tail that fits, small leaves
            if isinstance(provider, LCMProvider):
                result = provider.compact(session, CompactionMode.INCREMENTAL, fresh_tail=tail,
                                          min_leaf=MIN_LEAF)
            else:
                result = provider.compact(session, CompactionMode.INCREMENTAL)
        except AgentOSError as exc:
            log.warning("compaction before the model call failed, going on with the full history: %s", exc)
            rt.manager.append_log("SYSTEM", f"compaction before the model call failed: {exc}",
                                  {"kind": "context_compaction", "outcome": "warning"})
            return None
        log.info("conversation compacted before the model call: %s -> %s tokens (%d messages into %d+%d "
                 "summaries)",
                 result.tokens_before, result.tokens_after, result.messages_compacted,
                 result.leaf_summaries_created, result.condensed_summaries_created)
        return result

    def _report_loss(self, history: list[dict[str, Any]]) -> None:
        """Warn once per session when part of the conversation stays out of the prompt."""
        if self.loss_reported or not self._leaves_out(history):
            return
        stored, sent = self.rt.conversation.tokens(), _estimate(history)
        self.loss_reported = True
        message = (f"the conversation holds ~{stored} tokens but only ~{sent} fit the model's window: older "
                   "turns are left out of the prompt (they stay stored; /compact summarises them, or use the "
                   "lcm provider, or a model with a longer context)")
        log.warning("%s", message)
        self.rt.manager.append_log("SYSTEM", message, {"kind": "context_overflow", "stored_tokens": stored,
                                                       "sent_tokens": sent})


def ordered(system: str, settled: list[dict[str, Any]], memory: str, recent: list[dict[str, Any]], note: str,
            current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The prompt's messages: the system message, the settled earlier turns and the memory message (the same
    from call to call, see :mod:`core.engine.prompting.anchor`), the turns stored since, this call's notes,
    then this turn's request and its tool calls and results.

    The request comes after the memory, never before it: the last user text of a prompt is what a model
    answers, and a real one asked with the memory block after the request answers the block. Ollama keeps
    the last message whatever its size when it must drop some to fit, so the request is the one it keeps.
    """
    notes = [{"role": "user", "content": note}] if note else []
    return [{"role": "system", "content": system}, *settled, {"role": "user", "content": memory}, *recent,
            *notes,
            *current]


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
