"""The manifest of an agent archive, and checking an archive against it before anything is written.

An archive is a gzip-compressed tar holding ``manifest.json`` first, then the
agent's files under ``agent/``. The manifest records the format version, the
agent, the embedder that built the vectors (if any), counts, and the sha256 and
size of every member.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from core.config import TransferConfig
from core.durable import load_json
from core.memory.files import reading
from core.errors import ArchiveTooLargeError, CorruptionError, ValidationError
from core.paths import validate_agent_name

FORMAT = "agentos-agent"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ROOT = "agent"
"""Every file of the agent is stored under this folder of the archive."""
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Manifest:
    """What an archive says about itself."""

    agent: str
    embedder: str
    """The embedder named by the exporting agent's config (``cold.embedder``)."""
    with_vectors: bool
    include_secrets: bool
    counts: dict[str, int]
    files: dict[str, dict[str, Any]]
    """``{member name: {"sha256": ..., "size": ...}}`` for every file under ``agent/``."""
    data: dict[str, Any]
    """The whole manifest as read."""


def sha256_of(stream: Any) -> tuple[str, int]:
    """The sha256 and size of what ``stream`` holds."""
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def parse_manifest(raw: bytes, where: Path) -> Manifest:
    """The manifest of archive ``where``.

    Raises:
        CorruptionError: not an AgentOS archive, an unknown version, or an unreadable manifest.
    """
    try:
        data = load_json(raw)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise CorruptionError(f"{where} is not an AgentOS agent archive (format {found!r})")
        if data.get("format_version") != FORMAT_VERSION:
            raise CorruptionError(f"{where} has archive format version {data.get('format_version')!r}; this "
                                  f"AgentOS reads version {FORMAT_VERSION}: upgrade AgentOS to import it")
        manifest = Manifest(data["agent"], data["embedder"], bool(data["with_vectors"]),
                            bool(data["include_secrets"]), dict(data["counts"]), _files(data["files"]), data)
        validate_agent_name(manifest.agent)
        if not isinstance(manifest.embedder, str):
            raise TypeError(f"embedder must be text, got {type(manifest.embedder).__name__}")
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise CorruptionError(f"{where}: its manifest.json is unreadable: {exc}") from exc
    return manifest


def _files(files: Any) -> dict[str, dict[str, Any]]:
    """The manifest's ``files``, each with a sha256 (64 hex digits) and a size (a whole number of bytes)."""
    if not isinstance(files, dict):
        raise TypeError("files must be a mapping of member names")
    for name, entry in files.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("sha256"),
                                                       str) and _SHA256.fullmatch(entry["sha256"])
                and type(entry.get("size")) is int and entry["size"] >= 0):
            raise TypeError(f"the entry of {name[:200]!r} needs a sha256 and a size")
    return files


def verify(path: Path, limits: TransferConfig) -> Manifest:
    """Read the archive at ``path`` once, checking every member against the manifest; write nothing.

    The manifest comes first and announces every file's size: the sizes are checked against
    ``limits`` before any file is read, and each file's header against its announced size before
    its data is read (:mod:`core.memory.files.archive_reading`).

    Raises:
        CorruptionError: not a gzip tar, a member that is not a plain file or folder under ``agent/``,
            a path escaping the archive, a member missing, extra, repeated or different from its sha256.
        ArchiveTooLargeError: over one of the home's ``transfer`` limits.
    """
    with reading(path, limits) as archive:
        members = iter(archive)
        first = next(members, None)
        if first is None or first.name != MANIFEST or not first.isfile():
            raise CorruptionError(f"{path}: manifest.json must be the archive's first member")
        manifest = parse_manifest(archive.read(first, MAX_MANIFEST_BYTES), path)
        if len(manifest.files) > limits.max_members:
            raise ArchiveTooLargeError(f"{path} lists {len(manifest.files)} files, more than "
                                       f"transfer.max_members ({limits.max_members}) of this home; nothing "
                                       "was written")
        archive.expect(sum(entry["size"] for entry in manifest.files.values()))
        seen: set[str] = set()
        for member in members:
            check_member_name(member, path)
            if member.isdir():
                continue
            expected = manifest.files.get(member.name)
            if expected is None:
                raise CorruptionError(f"{path}: {member.name[:200]!r} is not listed in the manifest")
            if member.name in seen or member.size != expected["size"]:
                raise CorruptionError(f"{path}: {member.name[:200]!r} is not the file the manifest lists "
                                      "(the archive is damaged)")
            digest, _ = sha256_of(archive.open(member))
            if digest != expected["sha256"]:
                raise CorruptionError(f"{path}: {member.name[:200]!r} does not match its sha256 in the "
                                      "manifest (the archive is damaged)")
            seen.add(member.name)
    missing = sorted(set(manifest.files) - seen)
    if missing:
        raise CorruptionError(f"{path}: {len(missing)} file(s) of the manifest are missing, e.g. "
                              f"{missing[0][:200]!r}")
    return manifest


def check_member_name(member: tarfile.TarInfo, where: Path) -> None:
    """Refuse links, devices, any path outside ``agent/`` and a path not written plainly (``agent/./x``,
    ``agent//x``: a second name for a file, which would be unpacked twice)."""
    path = PurePosixPath(member.name)
    if not (member.isfile() or member.isdir()) or member.issparse():
        raise CorruptionError(f"{where}: {member.name[:200]!r} is not a plain file or folder")
    if not path.parts or path.parts[0] != ROOT or ".." in path.parts or member.name.startswith("/"):
        raise CorruptionError(f"{where}: member {member.name[:200]!r} lies outside {ROOT}/")
    if path.as_posix() != (member.name.rstrip("/") if member.isdir() else member.name):
        raise CorruptionError(f"{where}: member {member.name[:200]!r} is not a plain path (write it "
                              f"{path.as_posix()[:200]!r}): the archive is damaged or was altered")
