"""A space to one archive and back: ``agentos export --space`` / ``agentos import --space``.

The archive (``.tar.gz``) holds the journal, the members file and ``space.json`` (the format, the
space's name, the number of entries and the sha256 of each file). The journal goes out with the secret
values of every member masked (each line that held one rewritten with a new checksum, as a scrub does).
The index is not carried: the importing home rebuilds it from the journal, with its own embedder. An
import checks everything first (checksums, every journal line), writes the space into a temp folder
beside its place and renames it there, so a killed import leaves no half space.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

from core.errors import CorruptionError, StorageError, ValidationError
from core.memory.files.fsutil import atomic_write, fsync_dir
from core.memory.files.log_file import scan_bytes
from core.memory.secrets.redaction import rewrite_lines
from core.memory.spaces.paths import SpacePaths, validate_space_name
from core.memory.spaces.residence import keep_residence
from core.memory.spaces.space import Space

FORMAT = "agentos-space/1"
FILES = ("LOG.md", "members.yaml")


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
                 home: Path | None = None) -> dict:
    """Restore the space archive ``file`` (as ``as_name``); return its manifest.

    Raises:
        CorruptionError: the archive is damaged or is not a space archive; nothing is written.
        ValidationError: a space of that name exists (``force`` replaces it).
    """
    manifest, data = _read(Path(file))
    name = validate_space_name(as_name or manifest["space"])
    paths = SpacePaths.for_space(name, home)
    if paths.root.exists() and not force:
        raise ValidationError(f"the space {name!r} exists already: import it --as another name, or --force")
    staged = paths.root.with_name(f".{name}.importing")
    shutil.rmtree(staged, ignore_errors=True)  # left by an import that was killed
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
        raise StorageError(f"cannot write the space {name!r} into {paths.root}: {exc}") from exc
    with Space(name, home) as space:
        space.rebuild_index()
    return {**manifest, "space": name}


def _read(file: Path) -> tuple[dict, dict[str, bytes]]:
    try:
        with tarfile.open(file, mode="r:gz") as tar:
            found = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise CorruptionError(f"cannot read the space archive {file}: {exc}") from exc
    try:
        manifest = json.loads(found.get("space.json", b""))
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(manifest.get("sha256"), dict):
        raise CorruptionError(f"{file} is not a space archive (agentos export --space writes them)")
    data = {f: found.get(f, b"") for f in FILES}
    for member, content in data.items():
        if hashlib.sha256(content).hexdigest() != manifest["sha256"].get(member):
            raise CorruptionError(f"{member} in {file} does not match its checksum: the archive is damaged")
    if scan_bytes(data["LOG.md"], file).bad_lines:
        raise CorruptionError(f"the journal in {file} has damaged lines: the archive is damaged")
    return manifest, data
