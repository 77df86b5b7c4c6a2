"""tools: run the model's tool calls, log each with its arguments and outcome, feed results back.

A call is identified by ``<turn>:<step>:<index>``. Before running a call the
node looks for its TOOL_USE entry in LOG.md: a finished call with side effects
is not run again after a kill, its logged result is reused.
"""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

from core.errors import ToolArgumentError, UnknownSkillError
from core.engine.nodes.runtime import Runtime, preview, to_json
from core.engine.state import AgentState

log = logging.getLogger(__name__)


def tools(state: AgentState, rt: Runtime) -> dict[str, Any]:
    """Run every pending tool call in order; failures become error results the model can act on."""
    messages = list(state["messages"])
    errors = list(state.get("errors", []))
    retries = state.get("retries", 0)
    done = state.get("tool_calls_done", 0)
    done_before = rt.logged("TOOL_USE", "call_id")  # calls a killed run already finished
    for call in state.get("pending_tool_calls", []):
        content, failure = _run_once(call, state, rt, done_before.get(call["id"]))
        messages.append({"role": "tool", "content": content, "tool_name": call["name"]})
        done += 1
        if failure:
            errors.append(failure)
            retries += 1
    return {"messages": messages, "pending_tool_calls": [], "errors": errors, "retries": retries,
            "tool_calls_done": done}


def _run_once(
    call: dict[str, Any], state: AgentState, rt: Runtime, logged: dict[str, Any] | None
) -> tuple[str, str]:
    """Return ``(result_text, failure_line)``; ``failure_line`` is empty on success."""
    if logged is not None and not rt.toolbox.is_read_only(call["name"]):
        log.info("tool call %s already done before a restart; reusing its logged result", call["id"])
        meta = logged["metadata"]
        return meta.get("result", ""), meta.get("failure", "")
    try:
        result = rt.toolbox.call(call["name"], call["arguments"])
    except (ToolArgumentError, UnknownSkillError) as exc:
        # The model's mistake: tell it precisely, no traceback needed.
        failure = f"{call['name']}: {exc}"
        text = to_json({"error": str(exc), "hint": "fix the arguments and call again"})
        _record(call, state, rt, text, "error", failure)
        return text, failure
    except Exception as exc:  # noqa: BLE001 - self-annealing: any tool failure is logged, set in NOW and shown to the model
        failure = f"{call['name']} raised {type(exc).__name__}: {exc}"
        rt.log("ERROR", failure, turn_id=state["turn_id"], call_id=call["id"],
               traceback=traceback.format_exc())
        rt.manager.update_now(
            state="error",
            current_step=f"Recovering: tool {call['name']} failed",
            blockers=[failure[:300]],
            resume_hint="Read the ERROR entry in LOG.md, then retry the step another way",
        )
        text = to_json({"error": failure,
                        "hint": "the tool failed; try another way or explain what is blocked"})
        _record(call, state, rt, text, "error", failure)
        return text, failure
    text = to_json(result)
    _record(call, state, rt, text, "ok", "")
    return text, ""


def _record(call: dict[str, Any], state: AgentState, rt: Runtime, text: str, outcome: str,
            failure: str) -> None:
    # Logged even when auto-logging is off: the entry is what keeps a resumed turn from redoing the call.
    arguments = json.dumps(call["arguments"], ensure_ascii=False, default=str)
    rt.log("TOOL_USE", f"{call['name']}({preview(arguments, 300)}) -> {outcome}",
           turn_id=state["turn_id"], call_id=call["id"], tool=call["name"], arguments=call["arguments"],
           outcome=outcome, result=preview(text), failure=failure)
