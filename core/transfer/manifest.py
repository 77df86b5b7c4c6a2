"""The manifest of an agent archive, and checking an archive against it before anything is written.

An archive is a gzip-compressed tar holding ``manifest.json`` first, then the
agent's files under ``agent/``. The manifest records the format version, the
agent, the embedder that built the vectors (if any), counts, and the sha256 and
size of every member.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from core.errors import CorruptionError, ValidationError
from core.paths import validate_agent_name

FORMAT = "agentos-agent"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ROOT = "agent"
"""Every file of the agent is stored under this folder of the archive."""
_CHUNK = 1 << 20


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


def sha256_of(stream: BinaryIO) -> tuple[str, int]:
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
        data = json.loads(raw)
        if data.get("format") != FORMAT:
            raise CorruptionError(f"{where} is not an AgentOS agent archive (format {data.get('format')!r})")
        if data.get("format_version") != FORMAT_VERSION:
            raise CorruptionError(f"{where} has archive format version {data.get('format_version')!r}; this AgentOS "
                                  f"reads version {FORMAT_VERSION}: upgrade AgentOS to import it")
        manifest = Manifest(data["agent"], data["embedder"], bool(data["with_vectors"]),
                            bool(data["include_secrets"]), dict(data["counts"]), dict(data["files"]), data)
        validate_agent_name(manifest.agent)
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise CorruptionError(f"{where}: its manifest.json is unreadable: {exc}") from exc
    return manifest


def verify(path: Path) -> Manifest:
    """Read the archive at ``path`` once, checking every member against the manifest; write nothing.

    Raises:
        CorruptionError: not a gzip tar, a member that is not a plain file or folder under ``agent/``,
            a path escaping the archive, a member missing, extra or different from its sha256.
    """
    try:
        with tarfile.open(path, "r:gz") as archive:
            first = archive.next()
            if first is None or first.name != MANIFEST or not first.isfile():
                raise CorruptionError(f"{path}: manifest.json must be the archive's first member")
            manifest = parse_manifest(archive.extractfile(first).read(), path)
            seen: set[str] = set()
            for member in archive:
                if member is first:
                    continue
                check_member_name(member, path)
                if member.isdir():
                    continue
                expected = manifest.files.get(member.name)
                if expected is None:
                    raise CorruptionError(f"{path}: {member.name} is not listed in the manifest")
                digest, size = sha256_of(archive.extractfile(member))
                if digest != expected["sha256"] or size != expected["size"]:
                    raise CorruptionError(f"{path}: {member.name} does not match its sha256 in the manifest "
                                          "(the archive is damaged)")
                seen.add(member.name)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise CorruptionError(f"{path} is not a readable agent archive (.tar.gz): {exc}") from exc
    missing = sorted(set(manifest.files) - seen)
    if missing:
        raise CorruptionError(f"{path}: {len(missing)} file(s) of the manifest are missing, e.g. {missing[0]}")
    return manifest


def check_member_name(member: tarfile.TarInfo, where: Path) -> None:
    """Refuse links, devices and any path outside ``agent/``."""
    parts = PurePosixPath(member.name).parts
    if not (member.isfile() or member.isdir()):
        raise CorruptionError(f"{where}: {member.name} is not a plain file or folder")
    if not parts or parts[0] != ROOT or ".." in parts or member.name.startswith("/"):
        raise CorruptionError(f"{where}: member {member.name!r} lies outside {ROOT}/")
