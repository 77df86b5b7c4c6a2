"""``export_agent``: one portable archive of an agent (see :mod:`core.transfer.manifest` for its format).

The files are copied under the agent's lock and its compaction lock, so NOW.md,
LOG.md and the archives are taken at one moment; memory.db is copied with
SQLite's backup API (a consistent snapshot holding every table, including ones
added by later migrations). Secrets stay out unless asked for
(:mod:`core.transfer.scrub`). The archive is written to a temp file and renamed
into place, so a failed export leaves no half archive.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shlex
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from core import __version__
from core.errors import StorageError
from core.memory.recall import TABLE
from core.memory.files import scan_bytes
from core.memory.secrets import redactor_for
from core.memory.storage import require_sqlite, staged_copy
from core.memory import MemoryManager
from core.paths import AgentPaths, existing_agent
from core.transfer import scrub
from core.transfer.manifest import FORMAT, FORMAT_VERSION, MANIFEST, ROOT, sha256_of

log = logging.getLogger(__name__)

AGENT_FOLDERS = ("config", "directives", "skills")
"""The agent's own folders that travel with it (its workspace and engine checkpoints do not)."""
MEMORY_FILES = ("NOW.md", "LOG.md")
MEMORY_FOLDERS = ("archive", "sessions")

Progress = Callable[[int], None]
"""Called with the number of bytes just written to the archive."""


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_agent` wrote."""

    path: Path
    manifest: dict[str, Any]
    notice: str = ""
    """Why the vectors were left out although asked for (empty otherwise)."""
    secrets_left_out: int = 0
    """Secret facts not in the archive (always 0 with ``include_secrets``)."""


def export_agent(agent: str, file: str | Path, *, with_vectors: bool = False, include_secrets: bool = False,
                 progress: Progress | None = None) -> ExportResult:
    """Write agent ``agent`` to the archive ``file`` (a ``.tar.gz``).

    Args:
        with_vectors: include the cold store's vectors (else the importer re-embeds).
        include_secrets: keep the secret facts (else they are deleted and their values redacted everywhere).
        progress: called with the bytes written, for a progress bar.

    Raises:
        UnknownAgentError: no such agent.
        StorageError: the archive cannot be written (nothing is left at ``file``).
    """
    existing_agent(agent)  # an unknown agent is an error before anything is written
    target = Path(file).absolute()
    if target.is_dir():
        raise StorageError(f"{target} is a folder: give the archive's file name, e.g. {agent}.agentos.tar.gz")
    if not target.parent.is_dir():
        raise StorageError(f"there is no folder {target.parent} to write the archive in: create it (mkdir -p "
                           f"{shlex.quote(str(target.parent))}) or give a path in a folder that exists")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".agentos-export-", dir=target.parent))
    except OSError as exc:
        raise StorageError(f"cannot write in {target.parent}: {exc}") from exc
    try:
        root = staging / ROOT
        with MemoryManager(agent) as manager:
            embedder = manager.config.cold.embedder
            vectors = _snapshot(manager, root, with_vectors)
        notice = "" if vectors or not with_vectors else "the agent has no cold store yet: the importer embeds"
        left_out = 0 if include_secrets else staged_copy.secret_fact_count(root / "memory" / "memory.db")
        notice = _remove_values(root, vectors, include_secrets) or notice
        vectors = vectors and (root / "memory" / "lancedb").exists()
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "agent": agent,
            "agentos_version": __version__,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "embedder": embedder,
            "with_vectors": vectors, "include_secrets": include_secrets, "counts": counts(root), "files": {},
        }
        _write_archive(staging, root, manifest, target, progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(target, manifest, notice, left_out)


def _snapshot(manager: MemoryManager, root: Path, with_vectors: bool) -> bool:
    """Copy the agent's files and a memory.db snapshot into ``root``; return True if vectors were copied."""
    paths: AgentPaths = manager.paths
    require_sqlite(manager.config.storage, "export")
    memory = root / "memory"
    memory.mkdir(parents=True)
    manager.compaction.wait()
    with manager.compactor.exclusive(wait=True), manager.lock.hold():
        for name in AGENT_FOLDERS:
            if (paths.root / name).is_dir():
                shutil.copytree(paths.root / name, root / name)
        for name in MEMORY_FILES:
            shutil.copy2(paths.memory_dir / name, memory / name)
        for name in MEMORY_FOLDERS:
            if (paths.memory_dir / name).is_dir():
                shutil.copytree(paths.memory_dir / name, memory / name)
        if not (with_vectors and paths.lancedb_dir.is_dir()):
            _backup(manager, memory / "memory.db")
            return False
        # No vector is written or purged meanwhile: the docs' vector_state matches the rows copied.
        with manager.cold.store().writing():
            _backup(manager, memory / "memory.db")
            return _copy_vectors(paths.lancedb_dir, memory / "lancedb")


def _backup(manager: MemoryManager, target: Path) -> None:
    """A consistent copy of memory.db, as one self-contained file."""
    staged_copy.copy_database(manager.db.conn, target)


def _copy_vectors(source: Path, target: Path) -> bool:
    """Copy the cold store's current rows into a new cold store at ``target``; False if it has no table yet.

    Only the current version travels: older versions still hold the rows of forgotten
    memories and texts redacted since, which must not leave the agent.
    """
    import lance

    if not (source / f"{TABLE}.lance").is_dir():
        return False
    rows = lance.dataset(source / f"{TABLE}.lance").to_table()
    target.mkdir(parents=True, exist_ok=True)
    # The schema (and so the embedder it names) travels with the rows.
    lance.write_dataset(rows, target / f"{TABLE}.lance", schema=rows.schema, mode="create")
    return True


def _remove_values(root: Path, vectors: bool, include_secrets: bool) -> str:
    """Strip the secrets (unless included) and the forgotten values from the staged copy; return a notice if
    the vectors had to be dropped."""
    db_file = root / "memory" / "memory.db"
    secrets, forgotten = scrub.values_to_remove(db_file, include_secrets)
    scrub.scrub_database(db_file, secrets, forgotten, delete_secrets=not include_secrets)
    secrets = sorted({*secrets, *forgotten}, key=len, reverse=True)
    if not secrets:
        return ""
    scrub.scrub_log_files(root / "memory", db_file, secrets)
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in scrub.TEXT_SUFFIXES and "lancedb" not in path.parts \
                and path.parent.name != "archive" and path.name != "LOG.md":
            scrub.scrub_text_file(path, secrets)
    if vectors and _vectors_hold(root / "memory" / "lancedb", secrets):
        shutil.rmtree(root / "memory" / "lancedb")
        return (
            "the cold store held a secret's (or a forgotten) value, so its vectors were left out: "
            "the importer re-embeds"
        )
    return ""


def _vectors_hold(lancedb_dir: Path, secrets: list[str]) -> bool:
    """True if a text embedded in the copied cold store holds a secret value."""
    import lance

    table = lance.dataset(lancedb_dir / f"{TABLE}.lance").to_table(columns=["id", "text", "source", "memory"])
    redactor = redactor_for(secrets)
    return any(redactor.holds(text) for name in table.column_names for text in table.column(name).to_pylist())


def counts(root: Path) -> dict[str, int]:
    """What an agent folder (staged or imported) holds, for the manifest and the import check."""
    memory = root / "memory"
    archives = sorted((memory / "archive").glob("LOG-*.md"))
    entries = sum(len(scan_bytes(p.read_bytes(), p).entries) for p in [*archives, memory / "LOG.md"])
    return {"log_entries": entries, "archives": len(archives), **staged_copy.row_counts(memory / "memory.db")}


def _write_archive(staging: Path, root: Path, manifest: dict[str, Any], target: Path,
                   progress: Progress | None) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        with path.open("rb") as stream:
            digest, size = sha256_of(stream)
        manifest["files"][path.relative_to(staging).as_posix()] = {"sha256": digest, "size": size}
    partial = staging / "archive.tar.gz"
    try:
        with tarfile.open(partial, "w:gz") as archive:
            data = json.dumps(manifest, indent=1, ensure_ascii=False).encode("utf-8")
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime = len(data), int(datetime.now(timezone.utc).timestamp())
            archive.addfile(info, io.BytesIO(data))
            for path in files:
                archive.add(path, path.relative_to(staging).as_posix(), recursive=False)
                if progress:
                    progress(path.stat().st_size)
        with partial.open("rb") as stream:
            os.fsync(stream.fileno())
        os.replace(partial, target)
    except OSError as exc:
        raise StorageError(f"cannot write the archive {target}: {exc}") from exc
