"""The rebuilt parts of every planner prompt, read before every LLM call from the files that hold the
agent's state, ordered from the most stable to the most volatile so that the model server's prompt cache
(it keeps the previous prompt's KV cache and evaluates only from the first token that differs) covers most
of each prompt:

- the **system prompt**: SYSTEM.md (the agent's ``config/SYSTEM.md`` replaces the built-in one) →
  AGENT.md / soul → standing directives → constraints → user profile. It changes only when those
  files or the provider's profile change.
- the **memory message**: the learned profile → LOG.md's tail and the entries since NOW's ``log_seq`` →
  NOW.md → the facts (secrets redacted). A user-side message after the earlier turns: Ollama gathers every
  system message, wherever it stands, at the top of the rendered prompt, where a changing one would void
  the cache for everything after it.
- the **notes** of this call (resuming, recovering from errors), right before the turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.engine import prompts
from core.errors import StorageError
from core.engine.prompting.memory_message import MemoryView, memory_view
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
    memory: str
    """The memory message: NOW.md, the LOG.md entries, the facts."""
    note: str
    """This call's notes (resuming, recovering from errors; "" when none), sent right before the turn."""
    view: MemoryView
    """What the memory says (unredacted), to tell whether a later memory says something else."""


def build_system_prompt(
    manager: MemoryManager, identity: Identity, extras: PromptExtras, memory_tokens: int
) -> PromptParts:
    """The system prompt, the memory message (its memory context fits ``memory_tokens``) and the turn's
    notes."""
    paths = manager.paths
    redactor = manager.facts.redactor()
    system = [base_instructions(paths), *_identity_sections(paths, identity)]
    view = memory_view(manager, memory_tokens, extras.request, extras.earlier_requests, extras.log_until)
    notes = []
    if extras.resumed:
        notes.append(prompts.load("RESUME"))
    if extras.errors:
        errors = "\n".join(f"- {line}" for line in extras.errors[-5:])
        notes.append(prompts.load("RECOVERY") + "\n\nErrors so far:\n" + errors)
    notes += list(extras.notes)
    return PromptParts(redactor("\n\n".join(p for p in system if p)), redactor(view.text),
                       redactor("\n\n".join(p for p in notes if p)), view)


def base_instructions(paths: AgentPaths) -> str:
    """The agent's ``config/SYSTEM.md`` when it has one (it replaces the built-in instructions), else the
    built-in."""
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
