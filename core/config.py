"""Configuration: frozen dataclasses with documented defaults, read from YAML.

Two files are merged over the defaults, later ones winning key by key: ``$AGENTOS_HOME/config.yaml`` (every
agent) and ``<agent>/config/config.yaml`` (one agent). Unknown sections or keys are errors that list the valid
ones; a retired key is ignored with a warning that says why.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigError, shown
from core.durable import load_yaml, os_error_number, storage_error, yaml_error_line
from core.paths import AgentPaths, agents_home

__all__ = [
    "DSN_VARIABLE", "MAX_CONFIG_BYTES", "RANGES", "REFLECT_ENABLED", "RETIRED", "STORAGE_BACKENDS",
    "ColdConfig", "Config", "EngineConfig", "LLMConfig", "MemoryConfig", "ProviderConfig", "ReflectConfig",
    "SessionCompactionConfig", "StorageConfig", "TransferConfig", "config_files", "load_config",
    "load_home_config", "merge",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryConfig:
    """Hot and warm tiers."""

    max_entry_bytes: int = 64 * 1024
    """Largest LOG.md entry content, in UTF-8 bytes; larger entries are refused."""
    lock_timeout_s: float = 30.0
    """How long a write waits for the agent's lock before failing."""
    compact_log_bytes: int = 50 * 1024
    """LOG.md is compacted into the cold tier once it is larger than this."""
    compact_log_entries: int = 100
    """... or once this many entries were appended since the last SUMMARY."""
    auto_compact: bool = True
    """Compact LOG.md automatically when an append crosses a threshold."""
    compact_summary_tokens: int = 500
    """Target length of the SUMMARY entry that replaces compacted entries."""
    compact_summarizer: str = "llm"
    """``llm`` (the configured LLM backend; the deterministic summary when none answers) or
    ``deterministic``."""
    compact_timeout_s: float = 120.0
    """Longest wait for one summarizer call of LOG.md compaction; then that piece is summarised
    deterministically."""
    compact_deadline_s: float = 900.0
    """Longest time one LOG.md compaction spends asking the model; what is left is summarised
    deterministically."""
    context_tokens: int = 2000
    """Default token budget of ``format_context_for_prompt``."""


@dataclass(frozen=True)
class ColdConfig:
    """Cold tier: LanceDB and its embedder."""

    embedder: str = "minilm"
    """``minilm`` (offline all-MiniLM-L6-v2, its dense layers in int8), ``minilm-float32`` (the same model in
    float, exactly sentence-transformers' vectors, 1.6 times slower) or ``ollama:<model>`` (e.g.
    ``ollama:nomic-embed-text``); ``fake`` (hashed words, no model) is for tests."""
    optimize_every: int = 50
    """Compact LanceDB's small fragments after this many writes (in a background thread)."""
    min_score: float = 0.15
    """Default ``min_score`` of ``recall_memory``: results less likely than this to be relevant are left out,
    except those scoring at least a share of a best result that passes it (``Tuning.relative_floor``)."""
    vector_wait_s: float = 10.0
    """How long a recall waits for memories stored just before it to get their vectors (words find them at
    once)."""
    pending_vectors: str = "flag"
    """What a recall does with the memories still without a vector after ``vector_wait_s``: ``flag`` ranks
    by what there is (meaning where a vector exists, words elsewhere) and says so in its result; ``words``
    ranks every memory by words alone and says so (the same ranking whichever vectors are done)."""
    max_memory_bytes: int = 1024 * 1024
    """The largest memory ``store_memory`` keeps (UTF-8 bytes); kept whole, its vectors cover it in chunks."""
    ann_min_rows: int = 5000
    """Memories from which the table gets an approximate vector index (IVF_FLAT, cosine), built (and
    retrained) by the background optimize step, ``agentos rebuild-index`` and ``ColdStore.optimize()``, never
    during a search; rows added since are searched exactly until the next optimize. Smaller tables, a failed
    build: exact. 0:
    off."""


@dataclass(frozen=True)
class ProviderConfig:
    """Conversation-memory provider."""

    name: str = "lcm"
    """``lcm`` (lossless summary DAG) or ``simple`` (sliding window)."""
    fresh_tail: int = 20
    """Most recent messages always sent verbatim."""
    context_threshold: float = 1.0
    """Fraction of the history budget that triggers compaction at a run's first call (1: when it no longer
    fits)."""
    leaf_chunk_size: int = 10
    """Fewest messages summarised into one leaf summary."""
    leaf_chunk_max_tokens: int = 20_000
    """Most source tokens summarised into one leaf summary."""
    max_rounds: int = 10
    """Most leaf+condensed rounds of one full compaction."""
    deadline_s: float = 300.0
    """A compaction stops starting new summaries after this many seconds."""
    summarizer_timeout_s: float = 120.0
    """Longest wait for one summary; a late answer fails the compaction and is discarded."""
    leaf_target_tokens: int = 1200
    """Longest leaf summary asked for (else a third of its source)."""
    condensed_target_tokens: int = 2000
    """Longest condensed summary asked for (else a third of its source)."""


@dataclass(frozen=True)
class LLMConfig:
    """LLM backend."""

    backend: str = "auto"
    """``auto`` (Ollama, else an OpenAI-compatible server, else offline with a warning), ``ollama``,
    ``openai`` (llama.cpp's llama-server, LM Studio, vLLM, ...) or ``offline``."""
    model: str = "llama3.1"
    """The chat model, as the server names it."""
    host: str = ""
    """The server's address; empty means ``$OLLAMA_HOST`` or ``http://127.0.0.1:11434`` for Ollama,
    ``$OPENAI_BASE_URL`` or ``http://127.0.0.1:8080/v1`` for an OpenAI-compatible server."""
    timeout_s: float = 120.0
    """Seconds to wait for one model reply."""
    num_ctx: int = 16384
    """Most tokens of one request; the window is the smaller of this and the model's own length."""
    keep_alive: str = "5m"
    """How long Ollama keeps the model loaded after a call (sent with every call)."""
    max_reply_tokens: int = 2048
    """Most tokens of one reply (sent with every call: Ollama's ``num_predict``, the OpenAI API's
    ``max_tokens``); the servers' own default lets a model write until the window is full."""


@dataclass(frozen=True)
class EngineConfig:
    """The engine loop."""

    max_steps: int = 25
    """Most planner calls in one run."""
    max_retries: int = 3
    """Most recovery attempts after errors in one run."""
    context_budget: int = 0
    """Token budget of the conversation assembled for each LLM call; 0 derives it from the model's window."""
    memory_tokens: int = 0
    """Token budget of the memory context (NOW, LOG, facts) in the system prompt; 0 derives it from the
    window."""


@dataclass(frozen=True)
class SessionCompactionConfig:
    """Session compaction (``/compact`` and automatic)."""

    max_tokens: int = 80_000
    """Compact a session before a turn once it holds more tokens than this; 0 means this default, -1
    disables."""
    keep_tail: int = 20
    """Recent messages kept verbatim by a handoff compaction."""


@dataclass(frozen=True)
class StorageConfig:
    """Where memory.db's tables live: the agent's SQLite file, or a shared PostgreSQL server."""

    backend: str = "sqlite"
    """``sqlite`` (``memory/memory.db`` in the agent's folder) or ``postgres``; ``$AGENTOS_DSN`` selects
    postgres."""
    dsn: str = ""
    """PostgreSQL connection string (``postgresql://user@host/db``); empty means ``$AGENTOS_DSN``."""
    schema_prefix: str = "agentos_"
    """Each agent's tables live in the PostgreSQL schema ``<prefix><agent>``."""
    pool_max: int = 10
    """Most connections one process opens to the server for one agent."""
    pool_timeout_s: float = 30.0
    """Longest wait for a free connection before the operation fails."""
    connect_timeout_s: float = 5.0
    """Longest wait for the server to answer a new connection."""
    statement_timeout_s: float = 30.0
    """Longest a statement (a lock wait included) may run before the server cancels it."""

    def resolved(self) -> tuple[str, str]:
        """``(backend, dsn)`` in effect: ``$AGENTOS_DSN`` selects postgres and is its default DSN.

        Raises:
            ConfigError: an unknown backend, or postgres with no DSN.
        """
        from_env = os.environ.get(DSN_VARIABLE, "").strip()
        if self.backend not in STORAGE_BACKENDS:
            raise ConfigError(
                f"unknown storage.backend {self.backend!r}; use one of: {', '.join(STORAGE_BACKENDS)}"
            )
        if self.backend == "sqlite" and not from_env:
            return "sqlite", ""
        dsn = self.dsn.strip() or from_env
        if not dsn:
            raise ConfigError("storage.backend is postgres but no DSN is set: set storage.dsn or "
                              f"${DSN_VARIABLE}")
        return "postgres", dsn


@dataclass(frozen=True)
class TransferConfig:
    """What ``agentos import`` accepts from an archive (read from the importing home's config.yaml only)."""

    max_unpacked_bytes: int = 8 * 1024**3
    """The most bytes an archive may unpack to (its files together); a larger one is refused before anything
    is written."""
    max_members: int = 100_000
    """The most files and folders an archive may hold."""
    max_ratio: int = 200
    """An archive that unpacks to more than 64 MiB may unpack to at most this many times its own size
    (a decompression bomb unpacks to thousands of times its size; an agent's files to a few)."""


@dataclass(frozen=True)
class ReflectConfig:
    """Reflection: facts, events and changes learned in the background from what the agent recorded."""

    enabled: str = "auto"
    """``auto`` (on when the agent's backend is a model server, off for the offline backend), ``true`` (with
    the offline backend: its rule-based reader of explicit statements) or ``false``."""
    model: str = ""
    """The model to reflect with, on the configured server (empty: the agent's own). A model of its own keeps
    the agent's prompt cache: a server that keeps one cache a model re-reads the next turn's whole prompt
    after a call of another prompt to the same model."""
    interval_s: float = 600.0
    """While a session lasts, reflect this often on what is new (it also reflects when a run ends and after a
    LOG.md compaction)."""
    batch_entries: int = 40
    """Most entries read in one model call (fewer when the model's window holds fewer)."""
    timeout_s: float = 120.0
    """Longest wait for one model reply; a longer one counts as a failed reply (asked again, then split)."""
    retry_after_s: float = 300.0
    """A quarantined entry is tried again after this long, then twice as long after each failure (a day at
    most)."""
    profile_lines: int = 12
    """Most lines of the learned profile the engine shows the model."""


REFLECT_ENABLED = ("auto", "true", "false")


DSN_VARIABLE = "AGENTOS_DSN"
STORAGE_BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True)
class Config:
    """Every option, grouped by concern."""

    memory: MemoryConfig = field(default_factory=MemoryConfig)
    cold: ColdConfig = field(default_factory=ColdConfig)
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    compaction: SessionCompactionConfig = field(default_factory=SessionCompactionConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    transfer: TransferConfig = field(default_factory=TransferConfig)
    reflect: ReflectConfig = field(default_factory=ReflectConfig)


_DAY_S = 86_400.0
RANGES: dict[str, tuple[float, float]] = {
    "memory.max_entry_bytes": (64, 16 * 1024 * 1024), "memory.lock_timeout_s": (0, _DAY_S),
    "memory.compact_log_bytes": (1024, 2**30), "memory.compact_log_entries": (2, 10_000_000),
    "memory.compact_summary_tokens": (16, 100_000), "memory.compact_timeout_s": (0, _DAY_S),
    "memory.compact_deadline_s": (0, 7 * _DAY_S), "memory.context_tokens": (16, 10_000_000),
    "cold.optimize_every": (1, 1_000_000), "cold.min_score": (0, 1), "cold.vector_wait_s": (0, 3600),
    "cold.max_memory_bytes": (64, 256 * 1024 * 1024), "cold.ann_min_rows": (0, 10**9),
    "provider.fresh_tail": (0, 100_000), "provider.context_threshold": (0, 1),
    "provider.leaf_chunk_size": (1, 100_000), "provider.leaf_chunk_max_tokens": (16, 10_000_000),
    "provider.max_rounds": (1, 10_000), "provider.deadline_s": (0, 7 * _DAY_S),
    "provider.summarizer_timeout_s": (0, _DAY_S), "provider.leaf_target_tokens": (16, 1_000_000),
    "provider.condensed_target_tokens": (16, 1_000_000), "llm.timeout_s": (0, _DAY_S),
    "llm.num_ctx": (512, 2**24), "llm.max_reply_tokens": (16, 2**24),
    "engine.max_steps": (1, 10_000), "engine.max_retries": (0, 1000), "engine.context_budget": (0, 10**8),
    "engine.memory_tokens": (0, 10**8), "compaction.max_tokens": (1, 10**8),
    "compaction.keep_tail": (0, 100_000),
    "storage.pool_max": (1, 1000), "storage.pool_timeout_s": (0, 3600),
    "storage.connect_timeout_s": (0, 3600),
    "storage.statement_timeout_s": (0, _DAY_S), "transfer.max_unpacked_bytes": (1, 10**15),
    "transfer.max_members": (1, 10**9), "transfer.max_ratio": (1, 10**6),
    "reflect.interval_s": (0, 7 * _DAY_S),
    "reflect.batch_entries": (1, 10_000), "reflect.timeout_s": (0, _DAY_S),
    "reflect.retry_after_s": (0, _DAY_S),
    "reflect.profile_lines": (0, 1000),
}
"""Every numeric option's allowed values, lowest to highest: an int from the lowest, a float above it (a
time of 0 s or a share of 0 would stop everything); both ends are generous bounds of what makes sense."""
_MAY_BE_NEGATIVE = {"compaction.max_tokens"}  # -1 has a documented meaning (disables)
_ZERO_MEANS_DEFAULT = {"compaction.max_tokens"}  # 0 stands for the default (seed 002)
RETIRED = {"cold.chunk_tokens": "recall indexes every memory whole, not archive chunks"}
"""Options of earlier versions that are ignored (with a warning), so old config files still load."""


def config_files(paths: AgentPaths | None = None) -> list[Path]:
    """The config files read for an agent (or for all agents), lowest precedence first: the agents
    home's (the agent's own home when ``paths`` names one) and the agent's."""
    files = [(paths.root.parent if paths is not None else agents_home()) / "config.yaml"]
    if paths is not None:
        files.append(paths.config_dir / "config.yaml")
    return files


def load_config(paths: AgentPaths | None = None) -> Config:
    """Read the config files that exist and merge them over the defaults."""
    config = Config()
    for path in config_files(paths):
        if path.is_file():
            config = merge(config, _read_yaml(path), source=str(path))
    return config


def load_home_config(home: Path) -> Config:
    """The config of the agents home ``home`` itself (its ``config.yaml`` over the defaults): what a
    shared memory space, which belongs to no agent, is configured by."""
    config = Config()
    path = home / "config.yaml"
    if path.is_file():
        config = merge(config, _read_yaml(path), source=str(path))
    return config


def merge(config: Config, data: dict[str, Any], source: str = "config") -> Config:
    """Return ``config`` with the sections and keys of ``data`` replaced."""
    sections = {f.name: f for f in dataclasses.fields(Config)}
    changes = {}
    for section, values in data.items():
        if section not in sections:
            raise ConfigError(f"{source}: unknown section {section!r}; valid: {', '.join(sections)}")
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: section {section!r} must be a mapping")
        current = getattr(config, section)
        changes[section] = _merge_section(current, values, source, section)
    return dataclasses.replace(config, **changes)


def _merge_section(current: Any, values: dict[str, Any], source: str, section: str) -> Any:
    where = f"{source}: {section}"
    fields = {f.name: f for f in dataclasses.fields(current)}
    updates = {}
    for key, value in values.items():
        if f"{section}.{key}" in RETIRED:
            log.warning("%s.%s is no longer used (%s): remove it", where, key, RETIRED[f"{section}.{key}"])
            continue
        if key not in fields:
            raise ConfigError(f"{where}: unknown option {key!r}; valid: {', '.join(fields)}")
        expected = type(getattr(current, key))
        name = f"{section}.{key}"
        if name == "reflect.enabled":
            value = _reflect_enabled(value, where)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{where}.{key} must be {expected.__name__}, got {shown(value)}")
        if expected in (int, float) and not (name in _MAY_BE_NEGATIVE and value == -1):
            if value == 0 and name in _ZERO_MEANS_DEFAULT:
                value = getattr(type(current)(), key)
            _check_range(f"{where}.{key}", name, value)
        updates[key] = value
    return dataclasses.replace(current, **updates)


def _check_range(where: str, name: str, value: float) -> None:
    """ConfigError unless ``value`` is finite and in ``RANGES[name]``; the message names the range."""
    low, high = RANGES[name]
    if isinstance(value, int):
        if not low <= value <= high:
            special = " (or 0 for the default, -1 to disable)" if name in _MAY_BE_NEGATIVE else ""
            raise ConfigError(f"{where} must be a whole number from {low:,} to {high:,}{special}, got "
                              f"{shown(value)}")
        return
    above = name in _ABOVE_LOWEST
    if not (math.isfinite(value) and (low < value if above else low <= value) and value <= high):
        bounds = f"above {low:g} and at most {high:g}" if above else f"from {low:g} to {high:g}"
        raise ConfigError(f"{where} must be a number {bounds}, got {shown(value)}")


_ABOVE_LOWEST = {n for n in RANGES if n.endswith(("timeout_s", "deadline_s"))} | {
    "provider.context_threshold",
    "reflect.interval_s",
}
"""Float options whose lowest value is excluded: a timeout of 0 s or a threshold of 0 would stop
everything."""

MAX_CONFIG_BYTES = 1024 * 1024  # the largest config file read (AgentOS's own are a few hundred bytes)


def _reflect_enabled(value: Any, where: str) -> str:
    """``reflect.enabled`` as text: YAML reads ``true``/``false`` (and ``on``/``off``) as booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value not in REFLECT_ENABLED:
        raise ConfigError(f"{where}.enabled must be one of {', '.join(REFLECT_ENABLED)}, got {shown(value)}")
    return value


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml  # here: a process without a config.yaml does not pay for PyYAML's import

    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB: not a config file of "
                              "AgentOS's; fix it or remove it")
        data = load_yaml(raw.decode("utf-8"))
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(yaml_error_line(path, exc)) from exc
    except OSError as exc:
        # the process's lack, not the file's
        if os_error_number(exc) in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
            raise storage_error(exc, f"cannot read config {path}") from exc
        raise ConfigError(f"cannot read config {path}: {' '.join(str(exc).split())}") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {' '.join(str(exc).split())}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data
