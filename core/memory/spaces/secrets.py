"""The secret values of a space's members, read without writing to their memories.

What one member keeps secret must not reach the others through a space: a publish is refused when its
content or metadata holds any of them, and every answer of a space (recall, the inspector, an export) is
masked with them. Both match as an agent's own tiers do (:mod:`core.memory.secrets.redaction`: case,
full-width and compatibility forms, zero-width characters, any run of whitespace, metadata keys and values
before they are escaped as JSON). Each member's memory is read where it lives (memory.db, read-only, or its
PostgreSQL schema in a read-only transaction); a member without a memory yet has no secrets.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterable

from core.config import Config, load_config, load_home_config
from core.errors import SecretContentError, StorageError
from core.memory.secrets.redaction import Redactor, redactor_for
from core.memory.storage.backend import schema_name
from core.memory.storage.dialect import POSTGRES
from core.memory.storage.facts import MIN_REDACTED_CHARS
from core.paths import AgentPaths

_SECRETS = "SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= ?"
BUSY_TIMEOUT_S = 30.0


def member_secrets(home: Path, agents: Iterable[str], config: Config | None = None) -> list[str]:
    """Every secret value of ``agents``' facts, longest first (``config``: the home's, if it is read
    already)."""
    home_config = config or load_home_config(home)
    found: set[str] = set()
    for agent in agents:
        found.update(_secrets_of(AgentPaths.for_agent(agent, home), home_config))
    return sorted(found, key=len, reverse=True)


def members_redactor(home: Path, agents: Iterable[str], also: Iterable[str] = (),
                     config: Config | None = None) -> Redactor:
    """What hides every secret value of ``agents`` (and the values ``also``), however it is written."""
    return redactor_for([*member_secrets(home, agents, config), *also])


def refuse_secrets(space: str, content: str, metadata: Any, redactor: Redactor) -> None:
    """SecretContentError if ``content`` or ``metadata`` (its keys and values) holds a value that ``redactor``
    hides (the value is never named)."""
    if redactor.holds(content) or redactor.holds(metadata):
        raise SecretContentError(
            f"refused: the content holds the value of a secret fact of a member of the space {space!r}; "
            "nothing was stored. Publish it without the secret (refer to the secret by its fact key)")


def _secrets_of(paths: AgentPaths, home_config: Config) -> list[str]:
    if not paths.root.is_dir():
        return []
    # The agent's own config.yaml, where it has one, may keep its memory elsewhere than the home's.
    storage = (load_config(paths) if (paths.config_dir / "config.yaml").is_file() else home_config).storage
    backend, dsn = storage.resolved()
    if backend == "postgres":
        from core.memory.storage.postgres.database import snapshot

        with snapshot(dsn, schema_name(paths.name, storage), storage) as conn:
            if "user_facts" not in {row[0] for row in conn.execute(POSTGRES.tables)}:
                return []  # the member's schema is not created yet
            return [row[0] for row in conn.execute(_SECRETS, (MIN_REDACTED_CHARS,))]
    if not paths.db_file.is_file():
        return []
    try:
        conn = sqlite3.connect(paths.db_file.absolute().as_uri() + "?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {paths.db_file} to read its secrets: {exc}") from exc
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'user_facts'").fetchone():
            return []
        return [row[0] for row in conn.execute(_SECRETS, (MIN_REDACTED_CHARS,))]
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read the secrets of {paths.db_file}: {exc}; the spaces of {paths.name} "
                           "refuse to publish or answer until they can be checked: repair or restore that "
                           "memory.db") from exc
    finally:
        conn.close()
