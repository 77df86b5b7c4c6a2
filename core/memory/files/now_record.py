"""NOW.md's state as LOG.md's NOW_UPDATE entries record it: all of it, so NOW.md can be rebuilt from
LOG.md."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.errors import CorruptionError
from core.memory.files.now_file import STATUSES, NowState, PlanStep


def update_record(state: NowState) -> dict[str, Any]:
    """The metadata of the NOW_UPDATE entry that records ``state``: all of it, so NOW.md can be rebuilt from
    LOG.md."""
    return {"status": state.status, "objective": state.objective, "next_steps": state.next_steps,
            "version": state.version, "current_step": state.current_step, "done_steps": state.done_steps,
            "blockers": list(state.blockers), "resume_hint": state.resume_hint, "now_run_id": state.run_id}


def from_update(meta: dict[str, Any], seq: int, ts: str, fallback: NowState) -> NowState:
    """NOW as the NOW_UPDATE entry ``seq`` recorded it (fields it lacks are taken from ``fallback``).

    Raises:
        CorruptionError: the entry's record is not a NOW state.
    """
    def texts(name: str, default: list[str]) -> list[str]:
        value = meta.get(name, default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CorruptionError(f"NOW_UPDATE entry {seq}: {name} is not a list of text")
        return value

    version = meta.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise CorruptionError(f"NOW_UPDATE entry {seq} records no version")
    status = meta.get("status", fallback.status)
    run_id = meta.get("now_run_id", fallback.run_id)
    plan = [PlanStep(t, True) for t in texts("done_steps", fallback.done_steps)]
    plan += [PlanStep(t, False) for t in texts("next_steps", fallback.next_steps)]
    return replace(
        fallback, version=version, updated_at=ts, log_seq=seq,
        status=status if status in STATUSES else fallback.status,
        objective=str(meta.get("objective", fallback.objective)),
        current_step=str(meta.get("current_step", fallback.current_step)),
        run_id=run_id if isinstance(run_id, str) or run_id is None else fallback.run_id,
        plan=tuple(plan), blockers=tuple(texts("blockers", list(fallback.blockers))),
        resume_hint=str(meta.get("resume_hint", fallback.resume_hint)),
    )
