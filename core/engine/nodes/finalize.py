"""finalize: save the turn in the conversation, log the response, and set NOW to done or error."""

from __future__ import annotations

import logging
from typing import Any

from core.engine.nodes.runtime import SCAN_ENTRIES, Runtime, is_status, preview
from core.engine.state import AgentState

log = logging.getLogger(__name__)

RECOVERY_STEPS = ("Review the ERROR entries in LOG.md", "Fix the cause (tool, backend or arguments)")


def finalize(state: AgentState, rt: Runtime) -> dict[str, Any]:
    """Close the turn. Idempotent: the turn is appended and logged once (found by turn id)."""
    outcome = _outcome(state, rt)
    turn_id = state["turn_id"]
    response = state.get("final_response") or ""
    if outcome not in ("done", "blocked"):
        response = _failure_text(state, outcome)
    steps = {e["type"] for e in rt.manager.read_log(SCAN_ENTRIES) if e["metadata"].get("turn_id") == turn_id}
    if "STEP_END" not in steps:
        # STEP_START marks the save as begun: a re-run after a kill then checks for a stored copy.
        maybe_stored = "STEP_START" in steps
        if not maybe_stored:
            rt.log("STEP_START", f"saving turn {turn_id}", turn_id=turn_id)
        hide = rt.manager.facts.redactor(forgotten=False)  # a secret told in this turn is saved by now
        rt.conversation.append_turn(turn_id, hide(_turn_messages(state, response, outcome)), maybe_stored)
        if state.get("auto_log_enabled", True):
            rt.log("THOUGHT", f"response: {preview(response)}", turn_id=turn_id, kind="response",
                   outcome=outcome, steps=state.get("steps", 0), tool_calls=state.get("tool_calls_done", 0))
        _update_now(state, rt, outcome)
        rt.log("STEP_END", f"turn {turn_id} {outcome}", turn_id=turn_id, outcome=outcome)
    log.info("turn %s finished: %s after %d LLM calls", turn_id, outcome, state.get("steps", 0))
    return {"outcome": outcome, "final_response": response}


def _outcome(state: AgentState, rt: Runtime) -> str:
    if state.get("outcome"):
        return state["outcome"]
    if state.get("retries", 0) > rt.config.engine.max_retries:
        return "error"
    return "done"


def _failure_text(state: AgentState, outcome: str) -> str:
    last = (state.get("errors") or ["unknown error"])[-1]
    reason = "the step limit was reached" if outcome == "step_limit" else "errors persisted after retries"
    return (f"I could not finish: {reason}. Last error: {last}. NOW.md lists what to do next; "
            "run again with --resume (or say 'continue') after fixing the cause.")


def _turn_messages(state: AgentState, response: str, outcome: str) -> list[dict[str, Any]]:
    """The turn as stored in the conversation: a failed turn ends with the failure text."""
    messages = list(state["messages"])
    if outcome not in ("done", "blocked") or not messages or messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": response})
    return messages


def _update_now(state: AgentState, rt: Runtime, outcome: str) -> None:
    now = rt.manager.now_state()
    if outcome == "done" and is_status(state.get("task") or ""):
        rt.manager.update_now(run_id=rt.run_id)  # a question about NOW leaves it as it was
        return
    if outcome == "done":
        # Re-setting the objective redacts secrets learnt during the turn.
        rt.manager.update_now(state="done", objective=now.objective, current_step="Finished the last request",
                              blockers=[], resume_hint="Waiting for the next request", run_id=rt.run_id)
        return
    if outcome == "blocked":
        # The objective stays: a run with a model picks it up with --resume.
        reason = (state.get("errors") or ["the backend cannot carry out the task"])[-1]
        rt.manager.update_now(
            state="blocked", objective=now.objective, current_step="Blocked: the backend cannot do this task",
            blockers=[preview(reason, 300)],
            resume_hint=f"run with a model: agentos run --agent {rt.manager.agent_name} --resume",
            run_id=rt.run_id,
        )
        return
    last = (state.get("errors") or ["unknown error"])[-1]
    rt.manager.update_now(
        state="error",
        objective=now.objective,
        current_step="Error encountered - recovery needed",
        blockers=[preview(last, 300)],
        next_steps=list(dict.fromkeys([*RECOVERY_STEPS, *now.next_steps]))[:8],
        resume_hint=f"After fixing the cause run: agentos run --agent {rt.manager.agent_name} --resume",
        run_id=rt.run_id,
    )
