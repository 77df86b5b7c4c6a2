"""load_memory: log the user's intent, mark NOW active, and inject the memory context."""

from __future__ import annotations

import logging
from typing import Any

from core.engine.nodes.runtime import Runtime, is_status, keeps_objective, preview
from core.engine.task_input import mask_credentials
from core.engine.state import AgentState

log = logging.getLogger(__name__)

FINISHED = ("done", "idle")
"""NOW statuses of an objective with nothing left to do (or none)."""


def load_memory(state: AgentState, rt: Runtime) -> dict[str, Any]:
    """Start the turn: USER_FEEDBACK and NOW once per turn (a re-run finds them logged)."""
    turn_id = state["turn_id"]
    task = state["task"]
    masked = mask_credentials(task)
    if state.get("auto_log_enabled", True) and rt.find_logged("USER_FEEDBACK", "turn_id", turn_id) is None:
        rt.log("USER_FEEDBACK", masked, turn_id=turn_id, session=state["session_id"])
        if keeps_objective(task):
            # "continue" and "status" are about the objective in NOW: they must not replace it; "status"
            # only reads it, and a finished one is not reopened (there is nothing to continue): the run
            # is recorded.
            if is_status(task) or rt.manager.now_state().status in FINISHED:
                rt.manager.update_now(run_id=rt.run_id)
            else:
                rt.manager.update_now(state="active", current_step=f"Handling '{_objective(masked)}'",
                                      run_id=rt.run_id)
        else:
            rt.manager.update_now(state="active", objective=_objective(masked),
                                  current_step="Working on the user's request", run_id=rt.run_id)
    log.info("turn %s of agent %s: %s", turn_id, state["agent_name"], _objective(masked))
    # The planner rebuilds the memory context before every LLM call and puts it in the state.
    return {"messages": [{"role": "user", "content": task}]}


def _objective(text: str) -> str:
    return preview(" ".join(text.split()), 300)
