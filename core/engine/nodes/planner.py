"""planner: one LLM call with a freshly built system prompt, the assembled conversation and the tools,
sized to the model's window by :mod:`core.engine.prompting.context_builder`."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from core.errors import (BackendError, BackendUnavailableError, ContextWindowTooSmallError,
                         ModelNotFoundError,
                         ToolArgumentError)
from core.engine.nodes.runtime import Runtime, is_status
from core.engine.task_input import mask_credentials
from core.engine.state import AgentState
from core.engine.prompting.system_prompt import PromptExtras

log = logging.getLogger(__name__)

MALFORMED_CALL_NOTE = (
    "[AgentOS] Your last reply contained a malformed tool call ({error}). Call the tool again with "
    "its arguments as a JSON object that matches the tool's schema, or answer without tools."
)


def planner(state: AgentState, rt: Runtime) -> dict[str, Any]:
    """Ask the model for its next move; the reply goes into the turn's messages.

    Fatal backend errors (server down, model missing) propagate: retrying cannot
    help. Other backend errors and malformed tool calls count as retries.
    """
    steps = state.get("steps", 0)
    if steps >= rt.config.engine.max_steps:
        message = f"step limit reached ({rt.config.engine.max_steps} LLM calls) before the task was finished"
        return {"outcome": "step_limit", "errors": [*state.get("errors", []), message]}
    try:
        prompt = rt.context.build(state, _extras(state, rt))
        memory = prompt.memory
        reply = rt.backend.chat(prompt.messages, prompt.tools, rt.on_text)
        if rt.on_text is not None:
            rt.on_text.end_reply()
    except (BackendUnavailableError, ModelNotFoundError, ContextWindowTooSmallError):
        raise
    except ToolArgumentError as exc:
        note = {"role": "user", "content": MALFORMED_CALL_NOTE.format(error=exc)}
        return _failed(state, rt, exc, steps, extra_messages=[note])
    except BackendError as exc:
        return _failed(state, rt, exc, steps)
    if reply.cut:
        rt.cut_replies.append(reply.usage.get("completion_tokens"))
        log.warning("the model's reply stopped at the token limit (%s tokens generated)",
                    reply.usage.get("completion_tokens", "?"))
    # a question about NOW leaves it as it was
    if not reply.blocked and not is_status(state.get("task") or ""):
        _clear_stale_blockers(rt)
    assistant: dict[str, Any] = {"role": "assistant", "content": reply.text}
    pending = []
    if reply.tool_calls:
        assistant["tool_calls"] = [call.as_message_part() for call in reply.tool_calls]
        pending = [{"id": f"{state['turn_id']}:{steps}:{i}", "name": c.name, "arguments": dict(c.arguments)}
                   for i, c in enumerate(reply.tool_calls)]
    update = {
        "messages": [*state["messages"], assistant],
        "pending_tool_calls": pending,
        "steps": steps + 1,
        "memory_context": memory,
        "final_response": "" if pending else reply.text,
    }
    if reply.blocked and not pending:
        update["outcome"] = "blocked"
        update["errors"] = [*state.get("errors", []), reply.blocked]
    return update


def _extras(state: AgentState, rt: Runtime) -> PromptExtras:
    return PromptExtras(errors=tuple(state.get("errors", [])), resumed=rt.resumed, notes=tuple(rt.notes),
                        request=mask_credentials(state.get("task", "")))


def _failed(state: AgentState, rt: Runtime, exc: Exception, steps: int,
            extra_messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Self-annealing for a failed LLM call: log it, set NOW to recovery, count a retry."""
    line = f"{type(exc).__name__}: {exc}"
    rt.log("ERROR", f"LLM call failed: {line}", turn_id=state["turn_id"], step=steps,
           traceback=traceback.format_exc())
    written = rt.manager.update_now(state="error", current_step="Recovering from a failed model call",
                                    blockers=[line[:300]],
                                    resume_hint="Retrying the model call; if it keeps failing, check the "
                                                "backend and run again with --resume")
    rt.stale_blockers.extend(written["blockers"])
    log.warning("LLM call failed (retry %d): %s", state.get("retries", 0) + 1, line)
    return {
        "messages": [*state["messages"], *(extra_messages or [])],
        "pending_tool_calls": [],
        "steps": steps + 1,
        "retries": state.get("retries", 0) + 1,
        "errors": [*state.get("errors", []), line],
    }


def _clear_stale_blockers(rt: Runtime) -> None:
    """The model answered: blockers about not reaching it (or left by an earlier run) no longer hold.

    Blockers the model set during this run are kept: only those in ``rt.stale_blockers`` go.
    """
    if not rt.stale_blockers:
        return
    stale, rt.stale_blockers = set(rt.stale_blockers), []
    now = rt.manager.now_state()
    kept = [b for b in now.blockers if b not in stale]
    if len(kept) == len(now.blockers):
        return
    if kept:
        rt.manager.update_now(blockers=kept)
        return
    recovered = now.status in ("error", "blocked")
    # The resume hint said how to get past the block; it now says how to go on if this run stops.
    rt.manager.update_now(state="active" if recovered else None,
                          current_step="Working on the request" if recovered else None, blockers=[],
                          resume_hint="If this run stops, run: agentos run --agent "
                                      f"{rt.manager.agent_name} --resume")
