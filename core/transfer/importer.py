"""``import_agent``: restore an agent archive into an agents home, atomically, trusting only its data.

The archive is checked in full first (manifest, member names, every sha256, the home's
``transfer`` limits): a bad archive is an error and nothing is written. What is taken from it
follows :mod:`core.transfer.trust`: the data as is, memory.db rebuilt with this version's schema,
code and configuration only with the flags that name them. The agent is unpacked into a staging
folder inside the home, renamed if asked (``--as``), opened with this home's configuration, its
indexes rebuilt from its files and re-embedded (unless its vectors are trusted and fit), and only
then renamed into place, so a failed or interrupted import leaves no half agent. Replacing an agent
(``force``) is refused while any process has it open.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import logging
import os
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from core.config import Config, load_home_config, merge
from core.errors import AgentInUseError, CorruptionError, NotFoundError, StorageError, ValidationError
from core.durable import IN_USE, fault_points, fsync_dir, replacing
from core.memory.files import now_file, reading
from core.memory.storage import archived_db, require_sqlite, staged_copy
from core.memory.upkeep import rebuild_all
from core.memory import MemoryManager
from core.paths import agents_home, validate_agent_name
from core.transfer.export import counts
from core.transfer.manifest import MANIFEST, Manifest, check_member_name, verify
from core.transfer.trust import CONFIG_FILE, DATABASE, Trust, config_text, kind_of, split_config, taken
from core.transfer.vectors import copy_vectors

log = logging.getLogger(__name__)

Progress = Callable[[int], None]
"""Called with the number of memories just embedded."""
_ARCHIVED_DB = "memory/.archived-memory.db"
_ARCHIVED_CONFIG = "config/.archived-config.yaml"
_ARCHIVED_VECTORS = "memory/.archived-lancedb"
_IMPORTING = ".importing"


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
    counts: dict[str, int] = field(default_factory=dict)
    """What the imported agent holds (counted here, not taken from the manifest)."""
    left_out: tuple[str, ...] = ()
    """What was not taken from the archive and why, one line each (the flag that takes it, if any)."""


def import_agent(file: str | Path, *, as_name: str | None = None, force: bool = False,
                 home: Path | None = None,
                 trust: Trust = Trust(), progress: Progress | None = None) -> ImportResult:
    """Restore the agent archive ``file`` into ``home`` (default: the agents home).

    Args:
        as_name: the name it gets here (default: its name in the archive).
        force: replace an existing agent of that name (refused while a process has it open).
        trust: what to take besides the data: skills, the whole config, the vectors (see
            :mod:`core.transfer.trust`).
        progress: called with the memories embedded when the cold store is rebuilt.

    Raises:
        NotFoundError: ``file`` does not exist.
        CorruptionError: the archive is damaged or not an agent archive; nothing was written.
        ArchiveTooLargeError: the archive is over one of the home's ``transfer`` limits; nothing was written.
        ValidationError: the agent exists (and not ``force``) or the name is invalid; nothing was written.
        AgentInUseError: ``force`` and a process has the agent open; nothing was changed.
    """
    home = (home or agents_home()).absolute()
    home_config = load_home_config(home)  # this home's settings: the archive chooses none of them
    require_sqlite(home_config.storage, "import")
    source = Path(file)
    if not source.is_file():
        raise NotFoundError(f"no archive at {source}")
    manifest = verify(source, home_config.transfer)
    name = validate_agent_name(as_name or manifest.agent)
    target = home / name
    if target.exists() and not force:
        raise ValidationError(f"agent {name!r} already exists in {home}: import it --as another name, "
                              "or add --force to replace it")
    if force and (target / "memory").is_dir():
        with replacing(target / "memory" / IN_USE, f"agent {name!r}", create=False):
            pass  # refused now, not after the work: the install checks again
    _check_room(home, manifest, trust)
    _remove_killed_imports(home)
    staging = home / f".import-{name}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        with _staging(staging):
            staged = staging / name
            left_out = _unpack(source, staged, manifest, home_config, trust)
            config, dropped = _configure(staged, home_config, trust)
            schema = archived_db.rebuild_database(staged / _ARCHIVED_DB, staged / DATABASE)
            (staged / _ARCHIVED_DB).unlink()
            left_out += dropped + ([f"memory.db: {_listed(schema)} (memory.db is rebuilt with this version's "
                                    "schema)"] if schema else [])
            if name != manifest.agent:
                _rename(staged, manifest.agent, name)
            reason, memories = _index(staged, staging, name, manifest, config, trust, progress)
            held = counts(staged)
            _install(staged, target)  # the agent it replaced, if any, is now in the staging folder
    except OSError as exc:
        raise StorageError(f"cannot import into {home}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ImportResult(name, target, manifest.data, reason, memories, held, tuple(left_out))


@contextmanager
def _staging(staging: Path) -> Iterator[None]:
    """Create the staging folder, locked for as long as the import runs (so that an import killed midway is
    told from one that runs): made under another name, locked, then renamed to ``staging``."""
    making = staging.with_name(staging.name.replace(".import-", ".importing-", 1))
    making.mkdir(parents=True)
    with replacing(making / _IMPORTING, "an import"):
        making.rename(staging)
        yield


def _remove_killed_imports(home: Path) -> None:
    """Delete the staging folders of imports killed midway (no process holds their lock); they may hold a
    whole agent (the one a killed import replaced)."""
    for folder in sorted(home.glob(".import-*.tmp")) if home.is_dir() else ():
        try:
            with replacing(folder / _IMPORTING, "an import", create=False):
                shutil.rmtree(folder, ignore_errors=True)
        except AgentInUseError:
            continue  # another import is running


def _check_room(home: Path, manifest: Manifest, trust: Trust) -> None:
    """Refuse before writing when the disk cannot hold the files taken (memory.db twice: the archive's and
    the rebuilt one)."""
    needed = sum(entry["size"] * (2 if member.endswith(DATABASE) else 1) for member,
                 entry in manifest.files.items()
                 if taken(kind_of(_relative(member)), trust))
    folder = home
    while not folder.exists():
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise StorageError(f"importing needs about {needed // 2**20 + 1} MiB in {home}, and {free // 2**20} "
                           "MiB are free: make room, then retry; nothing was written")


def _relative(member: str) -> str:
    return PurePosixPath(*PurePosixPath(member).parts[1:]).as_posix()


def _unpack(source: Path, staged: Path, manifest: Manifest, config: Config, trust: Trust) -> list[str]:
    """Write the files of the (verified) archive that are taken into ``staged``; return what was left out."""
    skipped: dict[str, list[str]] = {}
    with reading(source, config.transfer) as archive:
        members = iter(archive)
        next(members)  # manifest.json
        archive.expect(sum(entry["size"] for entry in manifest.files.values()))
        for member in members:
            check_member_name(member, source)
            relative = _relative(member.name)
            kind = kind_of(relative)
            expected = manifest.files.get(member.name)
            if member.isdir() or member.name == MANIFEST:
                continue
            if expected is None or member.size != expected["size"]:
                raise CorruptionError(f"{source} changed while it was imported: import it again")
            if not taken(kind, trust):
                skipped.setdefault(kind, []).append(relative)
                continue
            relative = {DATABASE: _ARCHIVED_DB, CONFIG_FILE: _ARCHIVED_CONFIG}.get(relative, relative)
            if kind == "vectors":
                relative = _ARCHIVED_VECTORS + relative[len("memory/lancedb"):]
            _write(archive.open(member), staged / relative, expected["sha256"], source)
    if not (staged / _ARCHIVED_DB).is_file():
        raise CorruptionError(f"{source} holds no memory/memory.db")
    return _skipped_lines(skipped)


def _write(stream: Any, destination: Path, sha256: str, source: Path) -> None:
    """Copy one member to ``destination``, checking its sha256 again (the archive may have changed since)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with destination.open("xb") as out:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != sha256:
        raise CorruptionError(f"{source} changed while it was imported: import it again")


def _skipped_lines(skipped: dict[str, list[str]]) -> list[str]:
    """What was not unpacked, one line a kind, with the flag that takes it."""
    lines = []
    for kind, flag, what in (("skills", "--trust-skills", "code the engine would run"),
                             ("system", "--trust-config", "it replaces the built-in instructions")):
        if skipped.get(kind):
            lines.append(f"{_listed(skipped[kind])} ({what}: {flag} takes it)")
    if skipped.get("other"):
        lines.append(f"{_listed(skipped['other'])} (not part of an agent's memory: never imported)")
    return lines


def _listed(paths: list[str]) -> str:
    shown = [_printable(p) for p in paths[:5]]  # names from the archive: no terminal escapes in the output
    return ", ".join(shown) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _printable(text: str) -> str:
    """``text`` (from an archive) as one line of plain characters, at most 200 of them."""
    return "".join(c if c.isprintable() else "?" for c in text[:200])


def _configure(staged: Path, home_config: Config, trust: Trust) -> tuple[Config, list[str]]:
    """Write the agent's config.yaml (the archive's options it may bring) and return the config to open it
    with:
    this home's, with those options over it."""
    archived = staged / _ARCHIVED_CONFIG
    if not archived.is_file():
        return home_config, []
    kept, left_out = split_config(archived.read_bytes(), trust)
    config = merge(home_config, kept, source="config/config.yaml in the archive")
    if config.storage.resolved()[0] != "sqlite":
        raise ValidationError("the archive's config.yaml keeps the agent's memory on PostgreSQL (storage): "
                              "an import restores memory.db; import it without --trust-config")
    if trust.config:
        archived.replace(staged / CONFIG_FILE)
    else:
        (staged / CONFIG_FILE).write_text(config_text(kept, left_out), encoding="utf-8")
        archived.unlink()
    lines = [f"config.yaml options {', '.join(left_out)} (this home's settings apply: --trust-config takes "
             "them)"]
    return config, lines if left_out else []


def _rename(staged: Path, old: str, new: str) -> None:
    """Give the staged agent its new name: NOW.md's agent, the conversations' agent and session ids."""
    now_path = staged / "memory" / "NOW.md"
    if now_path.is_file():
        now_file.write(now_path, replace(now_file.read(now_path, old), agent=new))
    staged_copy.rename_agent(staged / DATABASE, old, new)
    sessions = staged / "memory" / "sessions"
    for handoff in sessions.glob(f"{old}_*") if sessions.is_dir() else ():
        handoff.rename(handoff.with_name(new + handoff.name[len(old):]))


def _index(staged: Path, staging: Path, name: str, manifest: Manifest, config: Config, trust: Trust,
           progress: Progress | None) -> tuple[str, int]:
    """Open the staged memory (migrating it) with ``config``; rebuild its indexes from its files, and its cold
    store unless the archive's (trusted) vectors can be used."""
    here = config.cold.embedder
    archived = staged / _ARCHIVED_VECTORS / "memories.lance"
    if not trust.vectors:
        reason = (
            "the archive's vectors are not trusted (--trust-vectors keeps them)"
            if manifest.with_vectors
            else "the archive has no vectors"
        )
    elif not manifest.with_vectors or not archived.is_dir():
        reason = "the archive has no vectors"
    elif manifest.embedder != here:
        reason = (
            f"the archive's vectors come from {_printable(manifest.embedder)}, this home embeds with {here}"
        )
    else:
        reason = copy_vectors(archived, staged / "memory" / "lancedb")
    shutil.rmtree(staged / _ARCHIVED_VECTORS, ignore_errors=True)
    with MemoryManager(name, home=staging, config=config) as manager:
        if not reason:
            manager.rebuild_log_index()  # the index of LOG.md follows the files as exported
            manager.cold.sync()  # recall's docs follow a renamed agent's conversations
            manager.cold.store().optimize()  # builds the vector index of a large store
            return "", 0
        log.info("re-embedding %s: %s", name, reason)
        result = rebuild_all(manager.tiers, progress=progress)
        return reason, result.memories


def _install(staged: Path, target: Path) -> None:
    """Put the staged agent in place in one step; a replaced agent is left in the staging folder (deleted with
    it) and is replaced only while no process has it open (the lock keeps new openers waiting meanwhile)."""
    if not target.exists():
        fault_points.reach("import.swap")
        staged.rename(target)
        fault_points.reach("import.swapped")
        fsync_dir(target.parent)
        return
    if not (target / "memory").is_dir():
        raise ValidationError(f"{target} is not an agent folder (no memory/): move it away, then retry")
    with replacing(target / "memory" / IN_USE, f"agent {target.name!r}"):
        fault_points.reach("import.swap")
        if not _exchange(staged, target):  # a system without an atomic swap: two renames
            old = staged.with_name(f"{staged.name}.replaced")
            target.rename(old)
            try:
                staged.rename(target)
            except OSError:
                old.rename(target)
                raise
        fault_points.reach("import.swapped")
        fsync_dir(target.parent)


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders atomically (Linux's ``renameat2`` with ``RENAME_EXCHANGE``): a crash leaves one or the
    other in place, never neither. False where the system cannot (then nothing was changed)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))
