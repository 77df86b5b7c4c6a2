"""``members.yaml``: who may read a space and who may also publish to it.

    space: research
    members:
      researcher: read-write
      writer: read-only

Written only by atomic replace under the space's lock, so a reader sees the old or the new list, and a
process keeps the list it read until the file's identity (inode, size, modification time) changes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from core.errors import CorruptionError, PermissionDeniedError, StorageError, ValidationError, shown
from core.durable import atomic_write, load_yaml
from core.memory.spaces.paths import SpacePaths
from core.paths import validate_agent_name

READ_WRITE, READ_ONLY = "read-write", "read-only"
ACCESS = (READ_WRITE, READ_ONLY)
_read: dict[str, tuple[tuple[int, int, int, int], "Members"]] = {}
_read_guard = threading.Lock()


@dataclass(frozen=True)
class Members:
    """The members of one space and their access."""

    space: str
    access: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "access", MappingProxyType(dict(sorted(self.access.items()))))

    def of(self, agent: str) -> str | None:
        return self.access.get(agent)

    def require_reader(self, agent: str) -> None:
        """PermissionDeniedError unless ``agent`` is a member."""
        if agent not in self.access:
            raise PermissionDeniedError(
                f"agent {agent!r} is not a member of the space {self.space!r}; a member can add it with: "
                f"agentos space add-member {self.space} {agent}")

    def require_writer(self, agent: str) -> None:
        """PermissionDeniedError unless ``agent`` is a read-write member."""
        self.require_reader(agent)
        if self.access[agent] != READ_WRITE:
            raise PermissionDeniedError(
                f"agent {agent!r} may only read the space {self.space!r}; to let it publish: "
                f"agentos space add-member {self.space} {agent}")

    def with_member(self, agent: str, access: str) -> "Members":
        validate_agent_name(agent)
        if access not in ACCESS:
            raise ValidationError(f"access must be {' or '.join(ACCESS)}, got {shown(access)}")
        return Members(self.space, {**self.access, agent: access})

    def without(self, agent: str) -> "Members":
        if agent not in self.access:
            raise ValidationError(f"agent {agent!r} is not a member of the space {self.space!r}; members: "
                                  f"{', '.join(self.access) or 'none'}")
        if len(self.access) == 1:
            raise ValidationError(f"{agent!r} is the last member of the space {self.space!r}: a space keeps "
                                  "at least one member")
        return Members(self.space, {a: m for a, m in self.access.items() if a != agent})


def read(paths: SpacePaths) -> Members:
    """The members file of the space at ``paths`` (which must exist).

    Parsed again only when the file was replaced: every change is an atomic replace, which gives it a new
    inode, so an unchanged identity is an unchanged list (in this process or any other).
    """
    paths.require()
    key = str(paths.members_file)
    try:
        stat = os.stat(key)
    except OSError:
        stat = None
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns) if stat is not None else None
    with _read_guard:
        known = _read.get(key)
    if known is not None and known[0] == identity:
        return known[1]
    members = _parse(paths)
    if identity is not None:
        with _read_guard:
            _read[key] = (identity, members)
    return members


def _parse(paths: SpacePaths) -> Members:
    import yaml  # here: a process that reads no space does not import PyYAML

    try:
        data = load_yaml(paths.members_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read {paths.members_file}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise CorruptionError(f"{paths.members_file} is not valid YAML ({exc}); restore it from a "
                              "backup") from exc
    access = data.get("members") if isinstance(data, dict) else None
    if not isinstance(access, dict) or not all(isinstance(a, str) and m in ACCESS for a, m in access.items()):
        raise CorruptionError(f"{paths.members_file} must map each member agent to read-write or read-only; "
                              "fix it by hand or restore it from a backup")
    return Members(paths.name, access)


def write(paths: SpacePaths, members: Members) -> None:
    """Replace the members file atomically (the caller holds the space's lock)."""
    import yaml  # here: a process that reads no space does not import PyYAML

    text = yaml.safe_dump({"space": paths.name, "members": dict(members.access)}, sort_keys=False)
    atomic_write(paths.members_file, text.encode("utf-8"))
