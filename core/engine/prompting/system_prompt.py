"""The two rebuilt parts of every planner prompt, read before every LLM call from the files that hold the
agent's state, ordered from the most stable to the most volatile so that the model server's prompt cache
(Ollama keeps the previous prompt's KV cache and re-evaluates only from the first token that differs)
covers most of each prompt:

- the **system prompt**: SYSTEM.md (the agent's ``config/SYSTEM.md`` replaces the built-in one) →
  AGENT.md / soul → standing directives → constraints → user profile. It changes only when those
  files or the provider's profile change.
- the **memory message**: facts (secrets redacted) → NOW.md → LOG.md since NOW's ``log_seq`` and its
  tail → the turn's notes (resuming, recovering from errors). It changes every step, so the engine
  sends it as the last message, a user-side one after the conversation and this turn's messages:
  Ollama gathers every system message, wherever it stands, at the top of the rendered prompt, where a
  changing one would void the cache for everything after it. The user's request of the turn is in the
  conversation; NOW's objective and the log entries that only repeat it point to it instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.engine import prompts
from core.errors import StorageError
from core.engine.prompting.memory_message import memory_context
from core.memory import MemoryManager
from core.paths import AgentPaths

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
    request: str = ""
    """This turn's request as logged (credentials masked): the memory points to it rather than repeat it."""
    earlier_requests: tuple[str, ...] = ()
    """User messages of earlier turns that the prompt's conversation shows: the log entries that repeat
    one point to it."""
    log_until: int = 0
    """The last LOG.md entry the memory shows (0: the newest): at a run's later steps, the one that was newest
    at its first; the conversation shows the run's own steps."""


@dataclass(frozen=True)
class PromptParts:
    """The rebuilt parts of one planner prompt, secrets redacted."""

    system: str
    """Instructions and identity: the stable system message."""
    memory_message: str
    """The memory context and the turn's notes: the volatile message sent last."""
    memory: str
    """The memory context alone (NOW.md, the LOG.md entries, the facts)."""


def build_system_prompt(
    manager: MemoryManager, identity: Identity, extras: PromptExtras, memory_tokens: int
) -> PromptParts:
    """The system prompt and the memory message; the memory context fits ``memory_tokens``."""
    paths = manager.paths
    redactor = manager.facts.redactor()
    system = [base_instructions(paths), *_identity_sections(paths, identity)]
    memory = redactor(memory_context(manager, memory_tokens, extras.request, extras.earlier_requests,
                                     extras.log_until))
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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()[:MAX_FILE_CHARS]
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read {path}: {exc}; fix or remove the file") from exc
