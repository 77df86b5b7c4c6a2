"""Where a memory space's files live: ``<agents home>/spaces/<name>/``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import UnknownSpaceError, ValidationError, shown
from core.paths import AGENT_NAME_PATTERN, agents_home

SPACES_DIR = "spaces"


def validate_space_name(name: object) -> str:
    """Return ``name`` if it is a valid space name (the agent-name rules), else raise ValidationError."""
    if not isinstance(name, str) or not AGENT_NAME_PATTERN.fullmatch(name):
        raise ValidationError(
            f"invalid space name {shown(name)}: use 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit (e.g. 'research')"
        )
    return name


def spaces_dir(home: Path | None = None) -> Path:
    """The folder of every space of the agents home ``home`` (default: the agents home)."""
    return (home or agents_home()) / SPACES_DIR


def list_spaces(home: Path | None = None) -> list[str]:
    """The names of the spaces that exist (those with a members file), sorted."""
    folder = spaces_dir(home)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir()
                  if AGENT_NAME_PATTERN.fullmatch(p.name) and (p / "members.yaml").is_file())


@dataclass(frozen=True)
class SpacePaths:
    """The files of one space."""

    name: str
    home: Path
    """The agents home the space belongs to."""

    @classmethod
    def for_space(cls, name: str, home: Path | None = None) -> "SpacePaths":
        return cls(validate_space_name(name), home or agents_home())

    @property
    def root(self) -> Path:
        return self.home / SPACES_DIR / self.name

    @property
    def journal(self) -> Path:
        return self.root / "LOG.md"

    @property
    def members_file(self) -> Path:
        return self.root / "members.yaml"

    @property
    def index_file(self) -> Path:
        return self.root / "index.db"

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    @property
    def quarantine_dir(self) -> Path:
        return self.root / "quarantine"

    def exists(self) -> bool:
        return self.members_file.is_file()

    def require(self) -> "SpacePaths":
        """These paths, if the space exists; else UnknownSpaceError naming the spaces there are."""
        if not self.exists():
            found = list_spaces(self.home)
            known = f"spaces: {', '.join(found)}" if found else "there are no spaces yet"
            raise UnknownSpaceError(f"no memory space named {self.name!r} in {self.home} ({known}); create "
                                    f"it with: agentos space create {self.name} --member AGENT")
        return self
