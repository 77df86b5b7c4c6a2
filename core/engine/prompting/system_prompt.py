"""The system prompt, rebuilt before every LLM call from the files that hold the agent's state.

Order: SYSTEM.md (the agent's ``config/SYSTEM.md`` replaces the built-in one) → AGENT.md / soul → standing directives → constraints → user
profile → NOW.md → LOG.md since NOW's ``log_seq`` and its tail → facts (secrets
redacted). Identity and rules first, so they frame the memory that follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.engine import prompts
from core.errors import StorageError
from core.memory.context import fit_lines, fit_newest, more_facts_note, render_entry, render_fact, render_now
from core.memory.secrets.forgotten import visible_entries
from core.memory.tokens import estimate_tokens
from core.memory_manager import MemoryManager
from core.paths import AgentPaths

TAIL_ENTRIES = 12
"""LOG.md entries always shown, besides those written since NOW."""
SINCE_ENTRIES = 60
"""Most entries shown from those written since NOW."""
MAX_FILE_CHARS = 12_000


@dataclass(frozen=True)
class Identity:
    """Who the agent is and whom it serves, from its files and its provider."""

    soul: str = ""
    """Soul text from the provider's profile store (if any), shown after AGENT.md."""
    constraints: tuple[str, ...] = ()
    """Hard rules of the user for this agent."""
    profile: str = ""
    """Notes about the user."""


@dataclass(frozen=True)
class PromptExtras:
    """Turn-specific sections: recovery after errors, resuming after a kill."""

    errors: tuple[str, ...] = ()
    resumed: bool = False
    notes: tuple[str, ...] = field(default=())


def build_system_prompt(
    manager: MemoryManager, identity: Identity, extras: PromptExtras, memory_tokens: int
) -> tuple[str, str]:
    """Return ``(system_prompt, memory_context)``; the memory part fits ``memory_tokens``."""
    paths = manager.paths
    redactor = manager.facts.redactor()
    parts = [base_instructions(paths)]
    parts += _identity_sections(paths, identity)
    memory = redactor(memory_context(manager, memory_tokens))
    parts.append(memory)
    if extras.resumed:
        parts.append(prompts.load("RESUME"))
    if extras.errors:
        errors = "\n".join(f"- {line}" for line in extras.errors[-5:])
        parts.append(prompts.load("RECOVERY") + "\n\nErrors so far:\n" + errors)
    parts += list(extras.notes)
    return redactor("\n\n".join(p for p in parts if p)), memory


def base_instructions(paths: AgentPaths) -> str:
    """The agent's ``config/SYSTEM.md`` when it has one (it replaces the built-in instructions), else the built-in."""
    own = _read(paths.config_dir / "SYSTEM.md")
    return own if own.strip() else prompts.load("SYSTEM")


def _identity_sections(paths: AgentPaths, identity: Identity) -> list[str]:
    sections = []
    agent_md = _read(paths.config_dir / "AGENT.md")
    if agent_md:
        sections.append(f"# Your identity (AGENT.md)\n\n{agent_md}")
    soul = identity.soul or _read(paths.config_dir / "SOUL.md")
    if soul:
        sections.append(f"# Your soul\n\n{soul}")
    directives = [(p.stem, _read(p)) for p in sorted(paths.directives_dir.glob("*.md"))]
    directives = [(name, text) for name, text in directives if text]
    if directives:
        sections.append("# Standing directives\n\n" + "\n\n".join(f"## {n}\n{t}" for n, t in directives))
    if identity.constraints:
        sections.append("# Constraints (always obey)\n\n" + "\n".join(f"- {c}" for c in identity.constraints))
    profile = identity.profile or _read(paths.config_dir / "USER.md")
    if profile:
        sections.append(f"# About the user\n\n{profile}")
    return sections


def memory_context(manager: MemoryManager, max_tokens: int) -> str:
    """NOW.md, the LOG.md entries since NOW was written plus the tail, and the facts, within ``max_tokens``
    (the caller redacts the secrets and forgotten values; the entries a FORGET named are left out here)."""
    now = manager.now_state()
    entries = visible_entries(manager.db, manager.log.tail(TAIL_ENTRIES + SINCE_ENTRIES))
    since = [e for e in entries if e.seq > now.log_seq][-SINCE_ENTRIES:]
    tail = [e for e in entries if e.seq <= now.log_seq][-TAIL_ENTRIES:]
    head = ["# Memory", "", "## NOW (NOW.md: current objective and plan)", *render_now(now)]
    budget = max_tokens - estimate_tokens("\n".join(head))
    facts = [render_fact(f) for f in manager.facts.list()]
    fact_lines = fit_lines(facts, max(0, int(budget * 0.3)))
    budget -= estimate_tokens("\n".join(fact_lines)) + 30
    since_lines = fit_newest([render_entry(e) for e in since], int(budget * 0.75))
    budget -= estimate_tokens("\n".join(since_lines))
    tail_lines = fit_newest([render_entry(e) for e in tail], budget)
    parts = head + ["", f"## Log since NOW was written (LOG.md after #{now.log_seq})"]
    parts += since_lines or ["(nothing since)"]
    parts += ["", "## Earlier activity (LOG.md tail)", *(tail_lines or ["(none)"])]
    parts += ["", "## Facts (secrets hidden: call get_fact)", *(fact_lines or ["(none saved)"])]
    if len(fact_lines) < len(facts):
        parts.append(more_facts_note(len(facts) - len(fact_lines)))
    return "\n".join(parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()[:MAX_FILE_CHARS]
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read {path}: {exc}; fix or remove the file") from exc
