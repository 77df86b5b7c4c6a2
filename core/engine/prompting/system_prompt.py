"""The two rebuilt parts of every planner prompt, read before every LLM call from the files that hold the
agent's state, ordered from the most stable to the most volatile so that the model server's prompt cache
(Ollama keeps the previous prompt's KV cache and re-evaluates only from the first token that differs)
covers most of each prompt:

- the **system prompt**: SYSTEM.md (the agent's ``config/SYSTEM.md`` replaces the built-in one) →
  AGENT.md / soul → standing directives → constraints → user profile. It changes only when those
  files or the provider's profile change.
- the **memory message**: NOW.md → LOG.md since NOW's ``log_seq`` and its tail → facts (secrets
  redacted) → the turn's notes (resuming, recovering from errors). It changes every step, so the
  engine sends it as a user-side message right before the newest turn, after the tool definitions
  and the older conversation: Ollama gathers every system message, wherever it stands, at the top of
  the rendered prompt, where a changing one would void the cache for everything after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.engine import prompts
from core.errors import StorageError
from core.memory.context import fit_lines, fit_newest, more_facts_note, render_entry, render_fact, render_now
from core.memory.secrets import visible_entries
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


@dataclass(frozen=True)
class PromptParts:
    """The rebuilt parts of one planner prompt, secrets redacted."""

    system: str
    """Instructions and identity: the stable system message."""
    memory_message: str
    """The memory context and the turn's notes: the volatile message sent before the newest turn."""
    memory: str
    """The memory context alone (NOW.md, the LOG.md entries, the facts)."""


def build_system_prompt(
    manager: MemoryManager, identity: Identity, extras: PromptExtras, memory_tokens: int
) -> PromptParts:
    """The system prompt and the memory message; the memory context fits ``memory_tokens``."""
    paths = manager.paths
    redactor = manager.facts.redactor()
    system = [base_instructions(paths), *_identity_sections(paths, identity)]
    memory = redactor(memory_context(manager, memory_tokens))
    volatile = [memory]
    if extras.resumed:
        volatile.append(prompts.load("RESUME"))
    if extras.errors:
        errors = "\n".join(f"- {line}" for line in extras.errors[-5:])
        volatile.append(prompts.load("RECOVERY") + "\n\nErrors so far:\n" + errors)
    volatile += list(extras.notes)
    return PromptParts(redactor("\n\n".join(p for p in system if p)),
                       redactor("\n\n".join(p for p in volatile if p)), memory)


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
    """The facts, NOW.md, and the LOG.md entries since NOW was written plus the tail, within ``max_tokens``
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
    # The facts change least often, the log every step: in this order a prompt shares more of its
    # beginning with the previous one (the server's prompt cache).
    parts = ["# Memory", "", "## Facts (secrets hidden: call get_fact)", *(fact_lines or ["(none saved)"])]
    if len(fact_lines) < len(facts):
        parts.append(more_facts_note(len(facts) - len(fact_lines)))
    parts += ["", *head[2:]]
    parts += ["", f"## Log since NOW was written (LOG.md after #{now.log_seq})"]
    parts += since_lines or ["(nothing since)"]
    parts += ["", "## Earlier activity (LOG.md tail)", *(tail_lines or ["(none)"])]
    return "\n".join(parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()[:MAX_FILE_CHARS]
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read {path}: {exc}; fix or remove the file") from exc
