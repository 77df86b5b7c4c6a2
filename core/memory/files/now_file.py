"""NOW.md: the hot tier, YAML front matter plus a short Markdown body.

    ---
    schema: agentos.now/1
    agent: finn
    version: 7            # +1 on every write
    updated_at: 2026-01-31T12:00:00.123Z
    run_id: null
    status: active        # idle|active|blocked|error|interrupted|done
    objective: Research Python asyncio
    current_step: Reading the docs
    log_seq: 42           # the last LOG.md entry when this was written
    ---
    # NOW: finn
    ## Objective / ## Plan (- [x] / - [ ]) / ## Blockers / ## Resume hint

The file is only ever replaced atomically under the agent's lock.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.errors import CorruptionError, ValidationError, shown
from core.durable import StagedFile, load_yaml, storage_error
from core.memory.files.log_format import check_text

SCHEMA = "agentos.now/1"
STATUSES = ("idle", "active", "blocked", "error", "interrupted", "done")
MAX_NOW_BYTES = 16 * 1024
MAX_SEQ = 2**63 - 1
"""The highest seq memory.db can index (SQLite's largest integer)."""
KEEP_DONE_STEPS = 10

_PLAN_ITEM = re.compile(r"^- \[( |x|X)\] (.*)$")

# A string YAML reads back as the same string when written plain (unquoted): ASCII words and
# punctuation that YAML gives no meaning, not a bool/null word (checked apart), no ": " or " #".
_PLAIN_SAFE = re.compile(r"[A-Za-z][A-Za-z0-9_.,()/+-]*(?: [A-Za-z0-9_.,()/+-]+)*", re.ASCII)
_YAML_WORDS = {"yes", "no", "true", "false", "on", "off", "null", "y", "n"}
# Characters YAML reads as line breaks or refuses as unprintable, which JSON leaves raw.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


@dataclass(frozen=True)
class PlanStep:
    """One line of the plan checklist."""

    text: str
    done: bool = False


@dataclass(frozen=True)
class NowState:
    """The parsed content of NOW.md."""

    agent: str
    version: int = 0
    """Number of writes so far; 0 before the first."""
    updated_at: str = ""
    run_id: str | None = None
    """The run that last wrote it, if any."""
    status: str = "idle"
    """Lifecycle state, one of ``STATUSES``."""
    objective: str = ""
    current_step: str = ""
    log_seq: int = 0
    """The last LOG.md entry when NOW.md was written; "continue" reads the log after it."""
    plan: tuple[PlanStep, ...] = ()
    blockers: tuple[str, ...] = ()
    resume_hint: str = ""

    @property
    def next_steps(self) -> list[str]:
        """The plan steps not yet done."""
        return [step.text for step in self.plan if not step.done]

    @property
    def done_steps(self) -> list[str]:
        """The plan steps already done."""
        return [step.text for step in self.plan if step.done]

    def as_dict(self) -> dict[str, Any]:
        """Front matter fields plus the body's parts, as plain data."""
        return {
            "schema": SCHEMA,
            "agent": self.agent,
            "version": self.version,
            "updated_at": self.updated_at,
            "run_id": self.run_id,
            "status": self.status,
            "objective": self.objective,
            "current_step": self.current_step,
            "log_seq": self.log_seq,
            "plan": [{"text": s.text, "done": s.done} for s in self.plan],
            "next_steps": self.next_steps,
            "blockers": list(self.blockers),
            "resume_hint": self.resume_hint,
        }


def render(state: NowState) -> str:
    """Return the text of NOW.md for ``state``."""
    front = {
        "schema": SCHEMA,
        "agent": state.agent,
        "version": state.version,
        "updated_at": state.updated_at,
        "run_id": state.run_id,
        "status": state.status,
        "objective": state.objective,
        "current_step": state.current_step,
        "log_seq": state.log_seq,
    }
    lines = ["---", _dump_front(front), "---"]
    lines += [f"# NOW: {state.agent}", "", "## Objective", state.objective or "(none)", "", "## Plan"]
    lines += [f"- [{'x' if s.done else ' '}] {s.text}" for s in state.plan] or ["(no plan yet)"]
    lines += ["", "## Blockers"]
    lines += [f"- {b}" for b in state.blockers] or ["(none)"]
    lines += ["", "## Resume hint", state.resume_hint or "(none)", ""]
    return "\n".join(lines)


def _dump_front(front: dict[str, Any]) -> str:
    """The front matter as YAML, one ``key: value`` line each (faster than yaml.dump, same data)."""
    return "\n".join(f"{key}: {_yaml_scalar(value)}" for key, value in front.items())


def _yaml_scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValidationError(f"NOW.md fields are text or integers, got {type(value).__name__}")
    if isinstance(value, int):
        return str(value)
    if _PLAIN_SAFE.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    # A JSON string is a valid YAML double-quoted scalar with the same escapes.
    quoted = json.dumps(value, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def body_of(text: str) -> str:
    """The Markdown body of NOW.md text (what follows the front matter)."""
    return text.split("\n---\n", 1)[1] if text.startswith("---\n") and "\n---\n" in text else ""


def document(state: NowState, text: str) -> dict[str, Any]:
    """``state`` as plain data plus the ``body`` of its NOW.md ``text``."""
    data = state.as_dict()
    data["body"] = body_of(text)
    return data


def parse(text: str, agent: str) -> NowState:
    """Parse NOW.md text; raise CorruptionError if the front matter is unreadable."""
    if not text.startswith("---\n"):
        raise CorruptionError("NOW.md has no YAML front matter")
    import yaml  # its errors only; a process that reads no NOW.md does not import PyYAML

    try:
        front_text, body = text[4:].split("\n---\n", 1)
        front = load_yaml(front_text) or {}
    except (ValueError, yaml.YAMLError) as exc:
        raise CorruptionError(f"NOW.md front matter is unreadable: {exc}") from exc
    if not isinstance(front, dict):
        raise CorruptionError("NOW.md front matter is not a mapping")
    if "\x00" in text or any("\x00" in value for value in front.values() if isinstance(value, str)):
        # never written by AgentOS (every field is checked text): one edited in would stop every update
        raise CorruptionError("NOW.md holds a NUL character, which no field of it may hold")
    sections = _sections(body)
    plan = []
    for line in sections.get("Plan", []):
        match = _PLAN_ITEM.match(line)
        if match:
            plan.append(PlanStep(match.group(2), match.group(1) != " "))
    blockers = tuple(line[2:] for line in sections.get("Blockers", []) if line.startswith("- "))
    hint = "\n".join(sections.get("Resume hint", [])).strip()
    run_id = front.get("run_id")
    return NowState(
        agent=_text(front, "agent") or agent,
        version=_count(front, "version"),
        updated_at=_text(front, "updated_at"),
        run_id=None if run_id is None else _text(front, "run_id"),
        status=_status(front),
        objective=_text(front, "objective"),
        current_step=_text(front, "current_step"),
        log_seq=_count(front, "log_seq"),
        plan=tuple(plan),
        blockers=blockers,
        resume_hint="" if hint == "(none)" else hint,
    )


def _count(front: dict, name: str) -> int:
    value = front.get(name) or 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEQ:
        raise CorruptionError(f"NOW.md front matter: {name} must be a whole number, got {shown(value)}")
    return value


def _text(front: dict, name: str) -> str:
    value = front.get(name)
    if value is None:
        return ""
    if isinstance(value, (dict, list, set)):
        raise CorruptionError(f"NOW.md front matter: {name} must be text, got {shown(value)}")
    return str(value)  # YAML may read an unquoted time or number: its text is what was meant


def _status(front: dict) -> str:
    status = _text(front, "status") or "idle"
    if status not in STATUSES:
        raise CorruptionError(f"NOW.md front matter: status must be one of {', '.join(STATUSES)}, got "
                              f"{shown(status)}")
    return status


_SECTIONS = ("Objective", "Plan", "Blockers", "Resume hint")


def _sections(body: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    expected = list(_SECTIONS)
    for line in body.splitlines():
        heading = line[3:].strip() if line.startswith("## ") else None
        if expected and heading == expected[0]:
            # The headings come once each, in this order: any other "## ..." line is text
            # (an objective or resume hint that looks like a heading).
            expected.pop(0)
            current = heading
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line)
    return sections


def load(path: Path, agent: str) -> tuple[NowState, str]:
    """Read NOW.md once: its state and text (the initial state and "" if it does not exist yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return NowState(agent=agent), ""
    except UnicodeDecodeError as exc:
        raise CorruptionError(f"NOW.md is not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise storage_error(exc, f"cannot read {path}") from exc
    return _parse_cached(text, agent), text


_last_parsed: tuple[str, str, NowState] | None = None


def _parse_cached(text: str, agent: str) -> NowState:
    """Parse ``text``, reusing the last result when the file has not changed (NowState is frozen)."""
    global _last_parsed
    cached = _last_parsed
    if cached is not None and cached[0] == agent and cached[1] == text:
        return cached[2]
    state = parse(text, agent)
    _last_parsed = (agent, text, state)
    return state


def read(path: Path, agent: str) -> NowState:
    """Read NOW.md, or return the initial state if it does not exist yet."""
    return load(path, agent)[0]


def encode(state: NowState) -> bytes:
    """The bytes of NOW.md for ``state``; raise ValidationError if it would be oversize."""
    data = render(state).encode("utf-8")
    if len(data) > MAX_NOW_BYTES:
        raise ValidationError(
            f"NOW.md would be {len(data)} bytes (limit {MAX_NOW_BYTES}); keep the objective and "
            "plan short and log details to LOG.md instead"
        )
    return data


def write(path: Path, state: NowState) -> str:
    """Atomically replace NOW.md with ``state`` (the caller holds the agent's lock); return its text."""
    staged, text = stage(path, state)
    staged.install()
    return text


def stage(path: Path, state: NowState, *, start_flush: bool = False) -> tuple[StagedFile, str]:
    """NOW.md's next version in a temp file, with its text; ``install()`` puts it in place."""
    global _last_parsed
    data = encode(state)
    staged = StagedFile(path, data, start_flush=start_flush)
    text = data.decode("utf-8")
    _last_parsed = (state.agent, text, state)  # the next read of this text needs no parse
    return staged, text


def advance(
    state: NowState,
    *,
    status: str | None = None,
    objective: str | None = None,
    current_step: str | None = None,
    next_steps: list[str] | None = None,
    done_steps: list[str] | None = None,
    blockers: list[str] | None = None,
    resume_hint: str | None = None,
    run_id: str | None = ...,  # type: ignore[assignment]
) -> NowState:
    """Return ``state`` with the given fields changed (validated; ``None`` keeps a field).

    ``next_steps`` replaces the open plan steps; ``done_steps`` ticks steps off
    (adding them as done if they were not in the plan). Only the last few done
    steps are kept, the log has the rest.
    """
    if status is not None and status not in STATUSES:
        raise ValidationError(f"unknown NOW status {status!r}; valid: {', '.join(STATUSES)}")
    changes: dict[str, Any] = {}
    for name, value in (("objective", objective), ("current_step", current_step),
                        ("resume_hint", resume_hint)):
        if value is not None:
            changes[name] = _one_line(check_text(value, name), name)
    if changes.get("resume_hint") == "(none)":
        changes["resume_hint"] = ""  # the body writes an empty hint as "(none)": both read back as ""
    if status is not None:
        changes["status"] = status
    if run_id is not ...:
        changes["run_id"] = None if run_id is None else _one_line(check_text(run_id, "run_id"), "run_id")
    if blockers is not None:
        changes["blockers"] = tuple(_one_line(check_text(b, "blocker"),
                                              "blocker") for b in _as_list(blockers, "blockers"))
    if next_steps is not None or done_steps is not None:
        changes["plan"] = _new_plan(state.plan, next_steps, done_steps)
    return replace(state, **changes)


def _new_plan(
    plan: tuple[PlanStep, ...], next_steps: list[str] | None, done_steps: list[str] | None
) -> tuple[PlanStep, ...]:
    done = [s.text for s in plan if s.done]
    open_steps = [s.text for s in plan if not s.done]
    if next_steps is not None:
        open_steps = [_one_line(check_text(s, "step"), "step") for s in _as_list(next_steps, "next_steps")]
    for text in _as_list(done_steps or [], "done_steps"):
        text = _one_line(check_text(text, "step"), "step")
        if text in open_steps:
            open_steps.remove(text)
        if text not in done:
            done.append(text)
    done = done[-KEEP_DONE_STEPS:]
    return tuple([PlanStep(t, True) for t in done] + [PlanStep(t, False) for t in open_steps])


def _as_list(value: object, name: str) -> list:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValidationError(f"{name} must be a list of strings")
    return list(value)


def _one_line(text: str, name: str) -> str:
    """NOW.md keeps each field on one line so the body stays parseable."""
    flat = " ".join(text.split())
    if len(flat) > 2000:
        raise ValidationError(f"{name} is {len(flat)} characters; keep it under 2000")
    return flat
