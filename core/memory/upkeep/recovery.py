"""Opening an agent whose files were damaged: the files are the truth, memory.db and NOW.md are rebuilt from
them.

- **memory.db** missing, empty, not an SQLite file, damaged, or fresh while LOG.md has a
  history: the bad file (and its ``-wal``/``-shm``) is moved to ``memory/quarantine/`` and a
  new database is rebuilt from LOG.md and the archives: the log index, the compaction
  history (the cold store re-indexes in the background), the facts (from LOG.md's FACT
  entries) and the notes (from the cold store). What is kept only in memory.db cannot be
  rebuilt and is reported: secret facts' values, conversations, profiles, souls, constraints
  and LangGraph store items.

A NOW.md unreadable or missing is rewritten from LOG.md (:mod:`core.memory.upkeep.now`).
Every repair of memory.db is logged as a WARNING, recorded as a SYSTEM entry in LOG.md and
returned, so a caller can show it.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Iterator

from core.errors import AgentOSError, CorruptionError
from core.memory.files import now_file
from core.durable import remove_stale_temp_files, storage_error
from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import LogEntry, utc_timestamp
from core.memory.files.now_file import NowState
from core.memory.recall import log_index
from core.memory.recall.sources import content_key
from core.memory.recall.store import TABLE
from core.memory.storage.sqlite import damage_marker
from core.memory.upkeep import now
from core.memory.upkeep.rebuild import rebuild_history
from core.memory.upkeep.tiers import Tiers

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
EMPTY = "empty (0 bytes)"
NOT_REBUILT = ("conversations, profiles, souls, constraints and LangGraph store items (kept only in "
               "memory.db: a damaged file's can be salvaged with `sqlite3 <file> .recover`)")
NOT_REBUILT_POSTGRES = ("conversations, profiles, souls, constraints and LangGraph store items (kept only in "
                        "the schema: restore them from a backup of it)")


def database_damage(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a memory.db (missing, empty, not SQLite), or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise storage_error(exc, f"cannot read {path}") from exc
    if not head:
        return EMPTY
    if head != SQLITE_HEADER:
        return "not an SQLite database"
    return None


def open_files(tiers: Tiers) -> tuple[list[Path], list[str]]:
    """Open LOG.md, memory.db and NOW.md, creating them for a new agent and repairing damaged ones; return
    the files created and the repairs made (each also logged as a WARNING)."""
    paths, created = tiers.paths, []
    if tiers.log.ensure_exists():
        created.append(paths.log_file)
    else:
        tiers.log.repair()  # CRLF line ends, a stripped final newline, a torn tail
    fresh = tiers.db.kind == "sqlite" and not paths.db_file.exists()
    repairs = open_database(tiers)  # creates memory.db, or rebuilds a lost one
    if fresh:
        created.append(paths.db_file)
    tiers.catch_up()
    # Archives and the compactor's staged LOG.md are written under the compaction lock only.
    stale = tiers.compactor.sweep()
    with tiers.lock.hold():
        for path in (paths.now_file, paths.log_file):
            stale += remove_stale_temp_files(path)
        for path in stale:
            log.warning("removed %s, left by a writer that was killed", path)
        if not paths.now_file.exists() and not tiers.has_history():
            now_file.write(paths.now_file, NowState(agent=tiers.agent_name, updated_at=utc_timestamp()))
            created.append(paths.now_file)
        now.current_now(tiers)  # recovers a missing or unreadable NOW.md, or one behind LOG.md
    return created, repairs


def open_database(tiers: Tiers) -> list[str]:
    """Open memory.db, rebuilding it from the files if it is lost or damaged; return what was repaired.

    Under the agent's lock: of two processes opening a damaged agent, one repairs it and the
    other then finds it sound.
    """
    with tiers.lock.hold():
        return _open_database(tiers)


def _open_database(tiers: Tiers) -> list[str]:
    path = tiers.paths.db_file
    history = tiers.has_history()
    if tiers.db.kind != "sqlite":  # a PostgreSQL schema: no file of ours to find damaged
        if not (history and _recreated(tiers)):
            return []
        return rebuild_database(tiers, f"the PostgreSQL schema {tiers.db.schema} is new and empty although "
                                "LOG.md has a history (it was dropped, or the agent's memory.db was never "
                                "copied into it with `agentos copy-to-postgres`)", [])
    damage = database_damage(path)
    marker = damage_marker(path)
    if marker.exists():  # SQLite reported a damaged page while the agent was in use
        damage = "damaged (" + marker.read_text(encoding="utf-8", errors="replace").strip() + ")"
    if damage is None or (damage in ("missing", EMPTY) and not history):
        try:
            tiers.db.conn  # creates and migrates it
        except CorruptionError as exc:
            damage = f"unreadable ({exc.__cause__ or exc})"
        else:
            if not (history and _recreated(tiers)):
                return []
            return rebuild_database(tiers, "memory.db is a new, empty database although LOG.md has a history "
                                    "(it was deleted or replaced)", [])
    moved = [] if damage == "missing" else _set_aside(tiers, path)
    return rebuild_database(tiers, f"memory.db was {damage}", moved)


def _recreated(tiers: Tiers) -> bool:
    """True when memory.db indexes nothing and was created after the agent's first entry."""
    conn = tiers.db.conn
    if conn.execute("SELECT 1 FROM log_metadata LIMIT 1").fetchone() is not None:
        return False
    created = conn.execute("SELECT min(applied_at) FROM _migrations").fetchone()[0]
    first = next(iter(_all_entries(tiers, [(p.stem, p) for p in tiers.archives()[:1]])), None)
    return first is not None and created is not None and created > first.ts


def _set_aside(tiers: Tiers, path: Path) -> list[Path]:
    """Move memory.db and its -wal/-shm files into quarantine; return where they went."""
    tiers.db.close()
    stamp = utc_timestamp().replace(":", "")
    moved = []
    for suffix in ("", "-wal", "-shm", ".damaged"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            target = tiers.paths.quarantine_dir / f"{path.name}{suffix}.{stamp}"
            try:
                tiers.paths.quarantine_dir.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
            except OSError as exc:
                raise storage_error(exc, f"cannot move the damaged {source} to {target}") from exc
            moved.append(target)
    return moved


def rebuild_database(tiers: Tiers, reason: str, moved: list[Path]) -> list[str]:
    """Rebuild memory.db from LOG.md, the archives and the cold store; report what was and was not."""
    sources = [(p.stem, p) for p in tiers.archives()]
    rows = log_index.rebuild(tiers.db, tiers.log, sources, apply=True)
    compactions = rebuild_history(tiers)
    facts = tiers.db.conn.execute("SELECT count(*) FROM user_facts").fetchone()[0]
    notes = _restore_notes(tiers)
    lost = _lost_secrets(tiers, sources)
    where = f"; the damaged file is at {', '.join(str(p) for p in moved)}" if moved else ""
    lines = [
        f"{reason}{where}",
        f"rebuilt from LOG.md and {len(sources)} archive(s): {rows} log index rows, {compactions} "
        f"compaction(s), {facts} fact(s), {notes} note(s)",
        "not rebuilt: " + (NOT_REBUILT if tiers.db.kind == "sqlite" else NOT_REBUILT_POSTGRES)
        + (f"; the values of the secret fact(s) {', '.join(lost)}: save them again" if lost else ""),
    ]
    for line in lines:
        log.warning("agent %s: %s", tiers.agent_name, line)
    tiers.append("SYSTEM", "memory.db rebuilt: " + "; ".join(lines), {"kind": "recovery"})
    return lines


def _restore_notes(tiers: Tiers) -> int:
    """Put the notes the cold store holds back into memory.db (each row keeps its memory as JSON); a note
    forgotten (by a FORGET entry already replayed) stays out. Recall indexes them again."""
    if not (tiers.paths.lancedb_dir / f"{TABLE}.lance").is_dir():
        return 0
    try:
        rows = tiers.cold.store().rows_of("note:")
    except AgentOSError as exc:
        log.warning("notes could not be read back from the cold store (%s): they are not restored", exc)
        return 0
    restored = 0
    with tiers.db.transaction() as conn:
        forgotten = {r[0] for r in conn.execute("SELECT id FROM recall_forgotten")}
        for row in rows:
            note = json.loads(row["memory"] or "{}")
            if row["id"] in forgotten or not isinstance(note.get("text"), str):
                continue
            meta = json.dumps(note.get("metadata") or {}, ensure_ascii=False, sort_keys=True)
            restored += conn.execute(
                "INSERT OR IGNORE INTO cold_notes (id, kind, text, metadata, created_at, occurred_at, "
                "expires_at, content_key, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row["id"].partition(":")[2], row["kind"], note["text"], meta, note.get("created_at"),
                 note.get("occurred_at"), note.get("expires_at"),
                 content_key(row["kind"], note["text"], meta, note.get("occurred_at")),
                 note.get("created_at")),
            ).rowcount
    return restored


def _lost_secrets(tiers: Tiers, sources: list[tuple[str, Path]]) -> list[str]:
    """Keys whose last FACT record is a secret's (its value is never logged)."""
    last: dict[str, dict] = {}
    for entry in _all_entries(tiers, sources):
        record = entry.metadata.get("fact") if entry.type == "FACT" else None
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            last[record["key"]] = record
    return sorted(k for k, r in last.items() if r.get("category") == "secret" and "value" not in r)


def _all_entries(tiers: Tiers, sources: list[tuple[str, Path]]) -> Iterator[LogEntry]:
    for _, path in sources:
        yield from scan_bytes(path.read_bytes(), path).entries
    yield from tiers.log.scan().entries
