"""A space to one archive and back: ``agentos export --space`` / ``agentos import --space``.

The archive (``.tar.gz``) holds ``space.json`` first (the format, the space's name, the number of
entries and the sha256 of each file), then the journal and the members file. The journal goes out with
the secret values of every member masked (each line that held one rewritten with a new checksum, as a
scrub does). The index is not carried: the importing home rebuilds it from the journal, with its own
embedder. An import reads the archive as a stream within the home's ``transfer`` limits
(``space.json`` is checked before any other member is read, and each member's size before its data),
checks everything (checksums, every journal line, the members file), writes the space into a temp
folder beside its place and renames it there, so a killed import leaves no half space.

The members file decides which agents read the space (their recall searches it) and publish to it,
so an archive that names agents of this home is imported only with ``trust_members``
(``agentos import --space --trust-members``).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

from core.config import TransferConfig, load_home_config
from core.errors import CorruptionError, NotFoundError, StorageError, ValidationError
from core.memory.files.archive_reading import reading
from core.durable import IN_USE, atomic_write, fsync_dir, load_json, replacing
from core.memory.files.log_file import scan_bytes
from core.memory.secrets.redaction import rewrite_lines
from core.memory.spaces.members import ACCESS
from core.memory.spaces.paths import SpacePaths, validate_space_name
from core.memory.spaces.residence import keep_residence
from core.memory.spaces.space import Space
from core.paths import AGENT_NAME_PATTERN, agents_home, list_agents

FORMAT = "agentos-space/1"
FILES = ("LOG.md", "members.yaml")
_MAX_MANIFEST_BYTES = 1024 * 1024
_MAX_MEMBERS_BYTES = 1024 * 1024


def export_space(name: str, file: str | Path, home: Path | None = None) -> dict:
    """Write the space ``name`` to the archive ``file``; return its manifest."""
    with Space(name, home) as space, space.lock.hold():  # the journal and the members of one moment
        data = {f: (space.paths.root / f).read_bytes() for f in FILES}
        data["LOG.md"], _ = rewrite_lines(data["LOG.md"], space.redactor())
    entries = scan_bytes(data["LOG.md"], f"space {name}").entries
    manifest = {"format": FORMAT, "space": name, "entries": len(entries),
                "sha256": {f: hashlib.sha256(b).hexdigest() for f, b in data.items()}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member, content in [("space.json", json.dumps(manifest, indent=2).encode()), *data.items()]:
            info = tarfile.TarInfo(member)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    atomic_write(Path(file), buffer.getvalue())
    return manifest


def import_space(file: str | Path, *, as_name: str | None = None, force: bool = False,
                 home: Path | None = None, trust_members: bool = False) -> dict:
    """Restore the space archive ``file`` (as ``as_name``); return its manifest.

    Args:
        trust_members: let the agents of this home that the archive's members file names read (and
            publish to) the space; without it such an archive is refused.

    Raises:
        NotFoundError: ``file`` does not exist.
        CorruptionError: the archive is damaged or is not a space archive; nothing is written.
        ArchiveTooLargeError: the archive is over one of the home's ``transfer`` limits; nothing is written.
        ValidationError: a space of that name exists (``force`` replaces it), or the archive names agents of
            this home as members and not ``trust_members``.
        AgentInUseError: ``force`` and a process has the space open; nothing was changed.
    """
    home = home or agents_home()
    source = Path(file)
    if not source.is_file():
        raise NotFoundError(f"no archive at {source}")
    manifest, data = _read(source, load_home_config(home).transfer)
    name = validate_space_name(as_name or manifest["space"])
    paths = SpacePaths.for_space(name, home)
    if paths.root.exists() and not force:
        raise ValidationError(f"the space {name!r} exists already: import it --as another name, or --force")
    data["members.yaml"] = _members(data["members.yaml"], name, home, trust_members, source)
    staged = paths.root.with_name(f".{name}.importing")
    shutil.rmtree(staged, ignore_errors=True)  # left by an import that was killed
    # A space that a process has open (a member's recall, agentos mcp) is not replaced under it: refused with
    # nothing changed; held until the new one is in its place, so none opens the old one meanwhile.
    with replacing(paths.root / IN_USE, f"space {name!r}", create=False):
        try:
            staged.mkdir(parents=True)
            for member, content in data.items():
                atomic_write(staged / member, content)
            replaced = paths.root.with_name(f".{name}.replaced")
            if force and paths.root.exists():
                keep_residence(paths.root, staged)  # the index stays where this home keeps it
                shutil.rmtree(replaced, ignore_errors=True)
                paths.root.replace(replaced)  # aside, not deleted, until the new space is in its place
            staged.replace(paths.root)
            fsync_dir(paths.root.parent)
            shutil.rmtree(replaced, ignore_errors=True)
        except OSError as exc:
            shutil.rmtree(staged, ignore_errors=True)
            raise StorageError(f"cannot write the space {name!r} into {paths.root}: {exc}") from exc
    with Space(name, home) as space:
        space.rebuild_index()
    return {**manifest, "space": name, "entries": len(scan_bytes(data["LOG.md"], file).entries)}


def _read(file: Path, limits: TransferConfig) -> tuple[dict, dict[str, bytes]]:
    """The manifest and files of a space archive, read in one stream: ``space.json`` first, then each file
    whose header is within the limits."""
    found: dict[str, bytes] = {}
    with reading(file, limits) as archive:
        members = iter(archive)
        first = next(members, None)
        if first is None or first.name != "space.json" or not first.isfile():
            raise CorruptionError(f"{file} is not a space archive (agentos export --space writes them)")
        try:
            manifest = load_json(archive.read(first, _MAX_MANIFEST_BYTES))
        except ValueError:
            manifest = None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
                or not isinstance(manifest.get("sha256"), dict):
            raise CorruptionError(f"{file} is not a space archive (agentos export --space writes them)")
        for member in members:
            if member.name not in FILES or member.name in found or not member.isfile():
                raise CorruptionError(f"{file}: {member.name[:200]!r} is not a file of a space archive")
            archive.expect(member.size)
            found[member.name] = archive.read(member, limits.max_unpacked_bytes)
    data = {f: found.get(f, b"") for f in FILES}
    for member, content in data.items():
        if hashlib.sha256(content).hexdigest() != manifest["sha256"].get(member):
            raise CorruptionError(f"{member} in {file} does not match its checksum: the archive is damaged")
    if scan_bytes(data["LOG.md"], file).bad_lines:
        raise CorruptionError(f"the journal in {file} has damaged lines: the archive is damaged")
    return manifest, data


def _members(raw: bytes, name: str, home: Path, trust: bool, file: Path) -> bytes:
    """The members file of the imported space (renamed ``name``), once checked; refused when it names agents
    of this home and ``trust`` is not given."""
    import yaml  # here: a process that reads no space does not import PyYAML

    if len(raw) > _MAX_MEMBERS_BYTES:
        raise CorruptionError(f"members.yaml in {file} holds {len(raw)} bytes: the archive is damaged")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise CorruptionError(f"members.yaml in {file} is not valid YAML: the archive is damaged") from exc
    access = data.get("members") if isinstance(data, dict) else None
    if not isinstance(access, dict) or not access or not all(
            isinstance(a, str) and AGENT_NAME_PATTERN.fullmatch(a) and m in ACCESS for a,
            m in access.items()):
        raise CorruptionError(f"members.yaml in {file} must map each member agent to read-write or "
                              "read-only: the archive is damaged")
    local = [f"{agent} ({access[agent]})" for agent in list_agents(home) if agent in access]
    if local and not trust:
        raise ValidationError(f"the space's archive makes agents of this home members: {', '.join(local)}; "
                              "their recall would search it (and read-write ones publish to it): add "
                              "--trust-members to accept, or import it into another home; nothing was "
                              "written")
    return yaml.safe_dump({"space": name, "members": dict(access)}, sort_keys=False).encode("utf-8")
