"""What an import takes from an archive: its data, never code or configuration you did not choose.

An archive may come from anyone, so each of its files is one of:

- **data, restored as is**: NOW.md, LOG.md and its archives, the handoff summaries, the agent's identity
  (``config/AGENT.md``, ``SOUL.md``, ``USER.md``) and standing directives (``directives/*.md``), which
  the model reads like any memory;
- **rebuilt, not trusted**: memory.db (a new database of this version's schema with the archive's rows,
  :mod:`core.memory.storage.archived_db`), and the vectors (embedded again here);
- **taken only with the flag that names it**: ``skills/`` (code the engine runs: ``--trust-skills``);
  ``config/SYSTEM.md`` (it replaces the built-in instructions) and the keys of ``config/config.yaml``
  that choose a server, a model or where data goes (``--trust-config``); the vectors (``--trust-vectors``);
- **left out**: everything else (an engine checkpoint, a storage marker, a lock file...).

From ``config/config.yaml`` only the keys of :data:`PORTABLE` (how the agent remembers and works: sizes,
thresholds, budgets) are kept without ``--trust-config``; :data:`HOME_ONLY` are this home's to choose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from core.config import Config, merge
from core.errors import ConfigError, CorruptionError

PORTABLE: dict[str, tuple[str, ...]] = {
    "memory": ("max_entry_bytes", "lock_timeout_s", "compact_log_bytes", "compact_log_entries",
               "auto_compact",
               "compact_summary_tokens", "compact_summarizer", "compact_timeout_s", "compact_deadline_s",
               "context_tokens"),
    "cold": ("optimize_every", "min_score", "vector_wait_s", "pending_vectors", "max_memory_bytes",
             "ann_min_rows"),
    "provider": ("name", "fresh_tail", "context_threshold", "leaf_chunk_size", "leaf_chunk_max_tokens",
                 "max_rounds",
                 "deadline_s", "summarizer_timeout_s", "leaf_target_tokens", "condensed_target_tokens"),
    "engine": ("max_steps", "max_retries", "context_budget", "memory_tokens"),
    "compaction": ("max_tokens", "keep_tail"),
    "reflect": ("enabled", "interval_s", "batch_entries", "timeout_s", "retry_after_s", "profile_lines"),
}
"""The options an archive's config.yaml brings along: they tune the agent, and point nowhere."""
HOME_ONLY: dict[str, tuple[str, ...]] = {
    "llm": ("backend", "model", "host", "timeout_s", "num_ctx", "keep_alive", "max_reply_tokens"),
    "cold": ("embedder",),
    "storage": ("backend", "dsn", "schema_prefix", "pool_max", "pool_timeout_s", "connect_timeout_s",
                "statement_timeout_s"),
    "transfer": ("max_unpacked_bytes", "max_members", "max_ratio"),
    "reflect": ("model",),
}
"""The options only this home sets (unless ``--trust-config``): the model and its server, the embedder
(a server too, for ``ollama:``), the model reflection asks, the database and its server, and the import
limits."""

MAX_CONFIG_BYTES = 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}"
DATA = re.compile(rf"memory/(NOW\.md|LOG\.md|archive/LOG-\d{{1,19}}-\d{{1,19}}\.md|sessions/{_NAME}\.json)"
                  rf"|config/(AGENT|SOUL|USER)\.md|directives/{_NAME}\.md")
"""The files restored as they are (paths under the archive's ``agent/``)."""
DATABASE, CONFIG_FILE, SYSTEM_PROMPT = "memory/memory.db", "config/config.yaml", "config/SYSTEM.md"
SKILLS, VECTORS = re.compile(r"skills/.+"), re.compile(r"memory/lancedb/memories\.lance/.+")


@dataclass(frozen=True)
class Trust:
    """What the user chose to take from an archive besides its data (each off by default)."""

    skills: bool = False
    """``skills/``: Python the engine imports and runs."""
    config: bool = False
    """``config/config.yaml`` whole and ``config/SYSTEM.md``."""
    vectors: bool = False
    """The cold store's vectors (else every memory is embedded again here)."""


def kind_of(relative: str) -> str:
    """What a file of the archive is (its path under ``agent/``): ``data``, ``database``, ``config``,
    ``system``, ``skills``, ``vectors`` or ``other``."""
    if DATA.fullmatch(relative):
        return "data"
    if relative in (DATABASE, CONFIG_FILE, SYSTEM_PROMPT):
        return {DATABASE: "database", CONFIG_FILE: "config", SYSTEM_PROMPT: "system"}[relative]
    if SKILLS.fullmatch(relative):
        return "skills"
    if VECTORS.fullmatch(relative):
        return "vectors"
    return "other"


def taken(kind: str, trust: Trust) -> bool:
    """Whether a file of ``kind`` is unpacked (config.yaml always is: what of it is kept is decided by
    keys)."""
    return kind in ("data", "database", "config") or (kind == "skills" and trust.skills) \
        or (kind == "system" and trust.config) or (kind == "vectors" and trust.vectors)


def split_config(raw: bytes, trust: Trust) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The part of an archive's config.yaml that is kept, and the options left out (``section.key``).

    Raises:
        CorruptionError: not a YAML mapping of sections, a value that is not a plain value, or an option
            this AgentOS refuses; nothing was written.
    """
    where = "config/config.yaml in the archive"
    if len(raw) > MAX_CONFIG_BYTES:
        raise CorruptionError(f"{where} holds {len(raw)} bytes, more than a config file ({MAX_CONFIG_BYTES})")
    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise CorruptionError(f"{where} is not valid YAML: {' '.join(str(exc).split())[:300]}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise CorruptionError(f"{where} is not a mapping of sections to options")
    kept: dict[str, dict[str, Any]] = {}
    left_out = []
    for section, options in data.items():
        for key, value in options.items():
            # shown in a comment and a message: one plain line
            name = _SAFE.sub("?", f"{section}.{key}")[:100]
            if not isinstance(value, (bool, int, float, str)):
                raise CorruptionError(f"{where}: {name[:200]} must be a plain value (a number, text or "
                                      "true/false)")
            if trust.config or key in PORTABLE.get(str(section), ()):
                kept.setdefault(section, {})[key] = value
            else:
                left_out.append(name)
    try:
        merge(Config(), kept, source=where)
    except ConfigError as exc:
        raise CorruptionError(str(exc)) from exc
    return kept, left_out


def config_text(kept: dict[str, dict[str, Any]], left_out: list[str]) -> str:
    """The agent's new config.yaml: the kept options, and a note of those left out."""
    note = ["# Imported from an archive (agentos import)."]
    if left_out:
        note.append("# Left out (this home's settings apply; agentos import --trust-config takes them): "
                    f"{', '.join(left_out)}")
    body = yaml.safe_dump(kept, sort_keys=False, allow_unicode=True) if kept else ""
    return "\n".join(note) + "\n" + body
