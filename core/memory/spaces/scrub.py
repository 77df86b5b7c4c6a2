"""Scrubbing a member's secret out of a space: the journal and the index, as an agent's own tiers are
scrubbed.

A publish that holds a member's secret is refused (:mod:`core.memory.spaces.secrets`), but a value published
before its owner saved it as a secret is in the space already. The owner's scrub
(:mod:`core.memory.upkeep.scrub`: when the secret is saved, and at every open while it is queued) scrubs
every space the agent is a member of or has published to, with the steps of a purge
(:mod:`core.memory.spaces.purge`):

1. ``.scrubbing`` is written in the space's folder, naming the agent whose secret it is (never a value): from
   here on, whoever opens the space finishes the scrub, with the secrets of every member and of that agent;
2. under the space's lock, each journal line that holds a value is rewritten with the same seq, time and type,
   the value replaced by ``[REDACTED]`` (matched as the agent's own redactor matches it) and a new checksum,
   and the journal is replaced atomically (a temp file, fsync, rename); a SYSTEM entry records which entries
   were rewritten (their seqs and the agent, never a value); quarantined tails are rewritten the same way;
3. the index: every indexed memory whose text no longer matches its journal line is indexed again (its vector
   computed anew), then the index is rewritten as a purge leaves it (``index.db``: ``secure_delete``, its
   full-text index merged, ``VACUUM``, its write-ahead log truncated; on PostgreSQL the table vacuumed and its
   full-text index rebuilt); copies of a damaged index moved aside earlier are deleted;
4. ``.scrubbing`` is removed.

Every step can run again: a scrub killed anywhere is finished by the next open of the space (and the agent's
own scrub stays queued until every space is done, so it runs again too).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from core.errors import CorruptionError, InvalidAgentNameError, StorageError
from core.durable import atomic_write, fsync_dir, remove_stale_temp_files
from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import utc_timestamp
from core.memory.secrets.redaction import Redactor, rewrite_lines
from core.memory.spaces import members as members_file
from core.memory.spaces.paths import SpacePaths, list_spaces
from core.memory.spaces.secrets import members_redactor
from core.paths import validate_agent_name

log = logging.getLogger(__name__)

PENDING = ".scrubbing"


def pending(space: Any) -> bool:
    """Whether a scrub of ``space`` was started and has not finished."""
    return (space.paths.root / PENDING).exists()


def scrub(space: Any, redactor: Redactor, by: str | None = None) -> list[int]:
    """Take every value ``redactor`` hides out of ``space``'s journal and index (see the module); ``by`` is
    the agent whose secret it is. Return the seqs of the journal entries rewritten now."""
    marker = space.paths.root / PENDING
    with space.lock.hold():
        data = space.paths.journal.read_bytes()
        new, entries = rewrite_lines(data, redactor)
        tails = _quarantined(space.paths, redactor)
        if new == data and not tails and not marker.exists():
            return []  # the files hold none of the values, nor does the index (which follows the journal)
        atomic_write(marker, json.dumps({"by": by, "started_at": utc_timestamp()}).encode("utf-8") + b"\n")
        remove_stale_temp_files(space.paths.journal)  # a journal rewrite killed before its rename
        scrubbed = [e.seq for e in entries]
        if new != data:
            atomic_write(space.paths.journal, new)
            space.journal.append("SYSTEM", f"scrubbed a member's secret from {len(scrubbed)} entries",
                                 {"scrubbed": scrubbed, "by": by})
        for path, rewritten in tails.items():
            atomic_write(path, rewritten)
        index = space.index()
        index.sync()
        index.refresh()
        done = index.scrub()
        for copy in sorted(space.paths.root.glob("index.db.damaged-*")):
            copy.unlink()
        if done:
            marker.unlink()
        fsync_dir(space.paths.root)
    if not done:
        log.warning("space %s: the scrub could not truncate the index's log (a reader holds it); the next "
                    "open of the space finishes it", space.name)
    return scrubbed


def finish(space: Any) -> list[int]:
    """Finish a scrub that was killed: with the secrets of every member and of the agent ``.scrubbing``
    names."""
    owner = _owner(space)
    agents = [*space.members().access, *([owner] if owner else [])]
    return scrub(space, members_redactor(space.paths.home, agents), owner)


def _owner(space: Any) -> str | None:
    """The agent ``.scrubbing`` names, None when it names none (or not a valid name)."""
    try:
        by = json.loads((space.paths.root / PENDING).read_text(encoding="utf-8")).get("by")
        return validate_agent_name(by) if isinstance(by, str) else None
    except (OSError, ValueError, AttributeError, InvalidAgentNameError) as exc:
        # a torn or edited mark: the members' secrets still count
        log.warning("space %s: cannot read whose scrub %s was (%s)", space.name, PENDING, exc)
        return None


def _quarantined(paths: SpacePaths, redactor: Redactor) -> dict[Path, bytes]:
    """The torn journal tails a repair moved aside that hold a value, each with its bytes rewritten."""
    found = {}
    for path in sorted(paths.quarantine_dir.glob("*.md")):
        data = path.read_bytes()
        new, _ = rewrite_lines(data, redactor)
        if new != data:
            found[path] = new
    return found


def spaces_of_author(agent: str, home: Path) -> list[str]:
    """The spaces of ``home`` that ``agent`` is a member of or has published to (a former member's memories
    stay in a space): where its secrets are scrubbed."""
    found = []
    for name in list_spaces(home):
        paths = SpacePaths.for_space(name, home)
        try:
            if members_file.read(paths).of(agent) is not None:
                found.append(name)
                continue
        except CorruptionError:
            pass  # its members are unknown: its journal still says who published
        try:
            data = paths.journal.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StorageError(f"cannot read {paths.journal} to scrub a secret from it: {exc}") from exc
        entries = scan_bytes(data, paths.journal).entries
        if any(e.type == "PUBLISH" and e.metadata.get("author") == agent for e in entries):
            found.append(name)
    return found
