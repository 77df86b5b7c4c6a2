"""Where an agent's files live.

The agents home is ``$AGENTOS_HOME`` or ``./agents``; each agent is a folder
``<home>/<name>/`` whose layout is described by :class:`AgentPaths`. Nothing
here touches the disk except :meth:`AgentPaths.ensure_memory_dirs`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import InvalidAgentNameError

AGENT_NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def agents_home() -> Path:
    """Return the agents home: ``$AGENTOS_HOME`` if set, else ``./agents``."""
    return Path(os.environ.get("AGENTOS_HOME") or "agents").absolute()


def validate_agent_name(name: object) -> str:
    """Return ``name`` if it is a valid agent name, else raise InvalidAgentNameError."""
    if not isinstance(name, str) or not AGENT_NAME_PATTERN.fullmatch(name):
        raise InvalidAgentNameError(
            f"invalid agent name {name!r}: use 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit (e.g. 'finn')"
        )
    return name


@dataclass(frozen=True)
class AgentPaths:
    """The files and folders of one agent."""

    name: str
    """The validated agent name."""
    root: Path
    """``<home>/<name>``."""

    @classmethod
    def for_agent(cls, name: str, home: Path | None = None) -> "AgentPaths":
        """Validate ``name`` and locate its folder under ``home`` (default: the agents home)."""
        validate_agent_name(name)
        return cls(name=name, root=(home or agents_home()) / name)

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    @property
    def now_file(self) -> Path:
        return self.memory_dir / "NOW.md"

    @property
    def log_file(self) -> Path:
        return self.memory_dir / "LOG.md"

    @property
    def db_file(self) -> Path:
        return self.memory_dir / "memory.db"

    @property
    def lock_file(self) -> Path:
        return self.memory_dir / ".lock"

    @property
    def archive_dir(self) -> Path:
        return self.memory_dir / "archive"

    @property
    def quarantine_dir(self) -> Path:
        return self.memory_dir / "quarantine"

    @property
    def lancedb_dir(self) -> Path:
        return self.memory_dir / "lancedb"

    @property
    def checkpoints_file(self) -> Path:
        return self.memory_dir / "checkpoints.db"

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def directives_dir(self) -> Path:
        return self.root / "directives"

    @property
    def workspace_dir(self) -> Path:
        return self.root / "workspace"

    def ensure_memory_dirs(self) -> list[Path]:
        """Create the memory folders that are missing; return the ones created."""
        return self.ensure_dirs(self.memory_dir, self.archive_dir, self.quarantine_dir)

    @staticmethod
    def ensure_dirs(*folders: Path) -> list[Path]:
        """Create the ``folders`` that are missing, in order; return the ones created."""
        created = []
        for folder in folders:
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True)
                created.append(folder)
        return created
