"""Where an agent's files live.

The agents home is ``$AGENTOS_HOME``, else ``./agents`` when that folder exists
in the working folder, else the per-user data folder (``platformdirs``); each
agent is a folder ``<home>/<name>/`` whose layout is described by
:class:`AgentPaths`. Nothing here writes to the disk except
:meth:`AgentPaths.ensure_memory_dirs` and :meth:`AgentPaths.ensure_dirs`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import InvalidAgentNameError, StorageError, UnknownAgentError, shown
from core.durable import storage_error

__all__ = [
    "AGENT_NAME_PATTERN", "HOME_VARIABLE", "LOCAL_HOME", "RESERVED_NAMES", "AgentPaths", "agents_home",
    "existing_agent", "home_and_source", "list_agents", "validate_agent_name",
]

AGENT_NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
HOME_VARIABLE = "AGENTOS_HOME"
RESERVED_NAMES = frozenset({"spaces"})
"""Folders of the agents home that are not agents: ``spaces/`` holds the shared memory spaces."""
LOCAL_HOME = "agents"
"""The agents folder of a checkout, used when it exists in the working folder."""


def agents_home() -> Path:
    """The agents home: ``$AGENTOS_HOME``, else ``./agents`` if it exists, else the per-user data folder."""
    return home_and_source()[0]


def home_and_source() -> tuple[Path, str]:
    """The agents home and why it was chosen (for ``agentos status``)."""
    configured = os.environ.get(HOME_VARIABLE)
    if configured:
        return Path(configured).expanduser().absolute(), f"${HOME_VARIABLE}"
    local = Path(LOCAL_HOME)
    if local.is_dir():
        return local.absolute(), f"./{LOCAL_HOME} in the working folder"
    # here: a home set by $AGENTOS_HOME or found in the working folder does not pay for it
    import platformdirs

    user_data = Path(platformdirs.user_data_dir("agentos", appauthor=False)) / LOCAL_HOME
    return user_data, "the per-user data folder"


def list_agents(home: Path | None = None) -> list[str]:
    """The names of the agents in ``home`` (default: the agents home), sorted."""
    home = home or agents_home()
    if not home.is_dir():
        return []
    return sorted(p.name for p in home.iterdir()
                  if p.is_dir() and AGENT_NAME_PATTERN.fullmatch(p.name) and p.name not in RESERVED_NAMES)


def existing_agent(name: str, home: Path | None = None) -> "AgentPaths":
    """The paths of agent ``name``, which must already exist; nothing is created.

    Raises:
        InvalidAgentNameError: the name is not valid.
        UnknownAgentError: there is no such agent (the message lists the agents and how to create one).
    """
    paths = AgentPaths.for_agent(name, home)
    if not paths.root.is_dir():
        found = list_agents(paths.root.parent)
        known = f"agents there: {', '.join(found)}" if found else "there are no agents there yet"
        raise UnknownAgentError(
            f"no agent named {name!r} in {paths.root.parent} ({known}); create it with: agentos init --agent "
            f"{name}"
        )
    return paths


def validate_agent_name(name: object) -> str:
    """Return ``name`` if it is a valid agent name, else raise InvalidAgentNameError."""
    if not isinstance(name, str) or not AGENT_NAME_PATTERN.fullmatch(name):
        raise InvalidAgentNameError(
            f"invalid agent name {shown(name)}: use 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit (e.g. 'finn')"
        )
    if name in RESERVED_NAMES:
        raise InvalidAgentNameError(f"{name!r} is the folder of the agents home that holds the shared memory "
                                    "spaces: choose another agent name")
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
        """Create the ``folders`` that are missing, in order; return the ones created.

        Raises:
            StorageError: a folder cannot be created (a file is in its place, no permission, a full disk).
        """
        created = []
        for folder in folders:
            if folder.is_dir():
                continue
            if folder.exists() or folder.is_symlink():
                raise StorageError(f"{folder} is a file, not a folder: move it away (the agent keeps "
                                   f"{folder.name}/ there), then retry")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise storage_error(exc, f"cannot create the folder {folder}") from exc
            created.append(folder)
        return created
