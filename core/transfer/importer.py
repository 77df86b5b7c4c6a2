"""``import_agent``: restore an agent archive into an agents home, atomically.

The archive is checked in full first (manifest, member names, every sha256):
a bad archive is an error and nothing is written. The agent is then unpacked
into a staging folder inside the home, renamed if asked (``--as``), re-embedded
when the archive has no vectors or was built by another embedder than the one
configured here, and only then renamed into place, so a failed or interrupted
import leaves no half agent.
"""

from __future__ import annotations

import logging
import shutil
import tarfile
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from core.errors import CorruptionError, NotFoundError, StorageError, ValidationError
from core.memory.files import now_file
from core.memory.recall import TABLE
from core.memory.upkeep import rebuild_all
from core.config import load_config
from core.memory.storage import require_sqlite, staged_copy
from core.memory_manager import MemoryManager
from core.paths import agents_home, validate_agent_name
from core.transfer.manifest import Manifest, check_member_name, verify

log = logging.getLogger(__name__)

Progress = Callable[[int], None]
"""Called with the number of memories just embedded."""


@dataclass(frozen=True)
class ImportResult:
    """What :func:`import_agent` restored."""

    agent: str
    root: Path
    manifest: dict[str, Any]
    reembedded: str
    """Why the cold store was rebuilt here (empty when the archive's vectors were kept)."""
    memories: int
    """Memories embedded here (0 when the archive's vectors were kept)."""


def import_agent(file: str | Path, *, as_name: str | None = None, force: bool = False, home: Path | None = None,
                 progress: Progress | None = None) -> ImportResult:
    """Restore the agent archive ``file`` into ``home`` (default: the agents home).

    Args:
        as_name: the name it gets here (default: its name in the archive).
        force: replace an existing agent of that name.
        progress: called with the memories embedded when the cold store is rebuilt.

    Raises:
        NotFoundError: ``file`` does not exist.
        CorruptionError: the archive is damaged or not an agent archive; nothing was written.
        ValidationError: the agent exists (and not ``force``) or the name is invalid; nothing was written.
    """
    require_sqlite(load_config().storage, "import")
    source = Path(file)
    if not source.is_file():
        raise NotFoundError(f"no archive at {source}")
    manifest = verify(source)
    name = validate_agent_name(as_name or manifest.agent)
    home = (home or agents_home()).absolute()
    target = home / name
    if target.exists() and not force:
        raise ValidationError(f"agent {name!r} already exists in {home}: import it --as another name, "
                              "or add --force to replace it")
    staging = home / f".import-{name}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        staging.mkdir(parents=True)
        staged = staging / name
        _unpack(source, staged)
        if name != manifest.agent:
            _rename(staged, manifest.agent, name)
        reason, memories = _index(staged, staging, name, manifest, progress)
        _install(staged, target)
    except OSError as exc:
        raise StorageError(f"cannot import into {home}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ImportResult(name, target, manifest.data, reason, memories)


def _unpack(source: Path, staged: Path) -> None:
    """Extract the (already verified) members under ``agent/`` into ``staged``."""
    with tarfile.open(source, "r:gz") as archive:
        for member in archive:
            if member.name == "manifest.json":
                continue
            check_member_name(member, source)
            relative = Path(*Path(member.name).parts[1:])
            destination = staged / relative
            if member.isdir():
                destination.mkdir(parents=True, exist_ok=True)
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            with archive.extractfile(member) as stream, destination.open("wb") as out:
                shutil.copyfileobj(stream, out)
    if not (staged / "memory" / "memory.db").is_file():
        raise CorruptionError(f"{source} holds no memory/memory.db")


def _rename(staged: Path, old: str, new: str) -> None:
    """Give the staged agent its new name: NOW.md's agent, the conversations' agent and session ids."""
    now_path = staged / "memory" / "NOW.md"
    if now_path.is_file():
        now_file.write(now_path, replace(now_file.read(now_path, old), agent=new))
    staged_copy.rename_agent(staged / "memory" / "memory.db", old, new)
    sessions = staged / "memory" / "sessions"
    for handoff in sessions.glob(f"{old}_*") if sessions.is_dir() else ():
        handoff.rename(handoff.with_name(new + handoff.name[len(old):]))


def _index(staged: Path, staging: Path, name: str, manifest: Manifest, progress: Progress | None) -> tuple[str, int]:
    """Open the staged memory (migrating it), and rebuild the cold store when its vectors cannot be used."""
    with MemoryManager(name, home=staging) as manager:
        here = manager.config.cold.embedder
        if not manifest.with_vectors:
            reason = "the archive has no vectors"
        elif manifest.embedder != here:
            reason = f"the archive's vectors come from {manifest.embedder}, this home embeds with {here}"
        elif not (manager.paths.lancedb_dir / f"{TABLE}.lance").is_dir():
            reason = "the archive's vectors come from an earlier version of AgentOS"
        else:
            manager.rebuild_log_index()  # the index of LOG.md follows the files as exported
            manager.cold.sync()  # recall's docs follow a renamed agent's conversations
            manager.cold.store().optimize()  # builds the vector index of a large store
            return "", 0
        log.info("re-embedding %s: %s", name, reason)
        result = rebuild_all(manager.tiers, progress=progress)
        return reason, result.memories


def _install(staged: Path, target: Path) -> None:
    """Rename the staged agent into place; a replaced agent is removed only after the new one is in."""
    old = target.with_name(f".replaced-{target.name}-{uuid.uuid4().hex[:8]}.tmp") if target.exists() else None
    if old is not None:
        target.rename(old)
    try:
        staged.rename(target)
    except OSError:
        if old is not None:
            old.rename(target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
