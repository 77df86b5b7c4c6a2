"""The secret values of a space's members, read without writing to their memories.

A publish is refused when its content holds any of them: what one member keeps secret must not
reach the others through a space. Each member's memory is read where it lives (memory.db, read-only,
or its PostgreSQL schema in a read-only transaction); a member without a memory yet has no secrets.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from core.config import load_config
from core.errors import SecretContentError, StorageError
from core.memory.storage.backend import schema_name
from core.memory.storage.dialect import POSTGRES
from core.memory.storage.facts import MIN_REDACTED_CHARS
from core.paths import AgentPaths

_SECRETS = "SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= ?"
BUSY_TIMEOUT_S = 30.0


def member_secrets(home: Path, agents: Iterable[str]) -> list[str]:
    """Every secret value of ``agents``' facts, longest first."""
    found: set[str] = set()
    for agent in agents:
        found.update(_secrets_of(AgentPaths.for_agent(agent, home)))
    return sorted(found, key=len, reverse=True)


def refuse_secrets(space: str, content: str, metadata: Any, secrets: list[str]) -> None:
    """SecretContentError if ``content`` or ``metadata`` holds any of ``secrets`` (the value is never named)."""
    text = content + "\n" + json.dumps(metadata, ensure_ascii=False)
    if any(secret in text for secret in secrets):
        raise SecretContentError(
            f"refused: the content holds the value of a secret fact of a member of the space {space!r}; "
            "nothing was stored. Publish it without the secret (refer to the secret by its fact key)")


def _secrets_of(paths: AgentPaths) -> list[str]:
    if not paths.root.is_dir():
        return []
    storage = load_config(paths).storage
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
        conn = sqlite3.connect(paths.db_file.absolute().as_uri() + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {paths.db_file} to read its secrets: {exc}") from exc
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'user_facts'").fetchone():
            return []
        return [row[0] for row in conn.execute(_SECRETS, (MIN_REDACTED_CHARS,))]
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read the secrets of {paths.db_file}: {exc}; a publish is refused until "
                           "they can be checked") from exc
    finally:
        conn.close()
