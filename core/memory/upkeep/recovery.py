"""Opening an agent whose files were damaged: the files are the truth, memory.db and NOW.md are rebuilt from them.

- **memory.db** missing, empty, not an SQLite file, damaged, or fresh while LOG.md has a
  history: the bad file (and its ``-wal``/``-shm``) is moved to ``memory/quarantine/`` and a
  new database is rebuilt from LOG.md and the archives: the log index, the compaction
  history (the cold store re-indexes in the background), the facts (from LOG.md's FACT
  entries) and the notes (from the cold store). What is kept only in memory.db cannot be
  rebuilt and is reported: secret facts' values, conversations, profiles, souls, constraints
  and LangGraph store items.
- **NOW.md** unreadable (a bad front matter) or missing: rewritten from LOG.md's newest
  NOW_UPDATE entry, which records the whole NOW state; the bad file goes to quarantine.

Every repair is logged as a WARNING, recorded as a SYSTEM entry in LOG.md and returned,
so a caller can show it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from core.errors import AgentOSError, CorruptionError, StorageError
from core.memory.upkeep import log_index
from core.memory.files import now_file
from core.memory.files import now_record
from core.memory.storage.sqlite import Database, damage_marker
from core.memory.files.fsutil import atomic_write, storage_error
from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import LogEntry, utc_timestamp
from core.memory.files.now_file import NowState

if TYPE_CHECKING:
    from core.memory_manager import MemoryManager

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
EMPTY = "empty (0 bytes)"
NOT_REBUILT = ("conversations, profiles, souls, constraints and LangGraph store items (kept only in memory.db: "
               "a damaged file's can be salvaged with `sqlite3 <file> .recover`)")
NOT_REBUILT_POSTGRES = ("conversations, profiles, souls, constraints and LangGraph store items (kept only in the "
                        "schema: restore them from a backup of it)")


def archives(manager: "MemoryManager") -> list[Path]:
    """The agent's archives, oldest first (by their first seq).

    An archive whose entries LOG.md still holds was written by a compaction killed before its
    swap: it is not history yet (the next compaction reuses it), so it is left out.
    """
    first = manager.log.first_entry()
    start = first.seq if first is not None else float("inf")
    found = [p for p in manager.paths.archive_dir.glob("LOG-*.md") if _seqs(p) and _seqs(p)[1] < start]
    return sorted(found, key=lambda p: _seqs(p)[0])


def _seqs(path: Path) -> tuple[int, int] | None:
    """The first and last seq in an archive's name ``LOG-<first>-<last>``, or None for another name."""
    parts = path.stem.split("-")
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return None


def has_history(manager: "MemoryManager") -> bool:
    """True when LOG.md or an archive holds entries: the agent is not new."""
    return manager.log.last_seq() > 0 or bool(archives(manager))


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


def open_database(manager: "MemoryManager") -> list[str]:
    """Open memory.db, rebuilding it from the files if it is lost or damaged; return what was repaired.

    Under the agent's lock: of two processes opening a damaged agent, one repairs it and the
    other then finds it sound.
    """
    with manager.lock.hold():
        return _open_database(manager)


def _open_database(manager: "MemoryManager") -> list[str]:
    path = manager.paths.db_file
    history = has_history(manager)
    if not isinstance(manager.db, Database):  # a PostgreSQL schema: no file of ours to find damaged
        if not (history and _recreated(manager)):
            return []
        return rebuild_database(manager, f"the PostgreSQL schema {manager.db.schema} is new and empty although "
                                "LOG.md has a history (it was dropped, or the agent's memory.db was never copied "
                                "into it with `agentos copy-to-postgres`)", [])
    damage = database_damage(path)
    marker = damage_marker(path)
    if marker.exists():  # SQLite reported a damaged page while the agent was in use
        damage = "damaged (" + marker.read_text(encoding="utf-8", errors="replace").strip() + ")"
    if damage is None or (damage in ("missing", EMPTY) and not history):
        try:
            manager.db.conn  # creates and migrates it
        except CorruptionError as exc:
            damage = f"unreadable ({exc.__cause__ or exc})"
        else:
            if not (history and _recreated(manager)):
                return []
            return rebuild_database(manager, "memory.db is a new, empty database although LOG.md has a history "
                                    "(it was deleted or replaced)", [])
    moved = [] if damage == "missing" else _set_aside(manager, path)
    return rebuild_database(manager, f"memory.db was {damage}", moved)


def _recreated(manager: "MemoryManager") -> bool:
    """True when memory.db indexes nothing and was created after the agent's first entry."""
    conn = manager.db.conn
    if conn.execute("SELECT 1 FROM log_metadata LIMIT 1").fetchone() is not None:
        return False
    created = conn.execute("SELECT min(applied_at) FROM _migrations").fetchone()[0]
    first = next(iter(_all_entries(manager, [(p.stem, p) for p in archives(manager)[:1]])), None)
    return first is not None and created is not None and created > first.ts


def _set_aside(manager: "MemoryManager", path: Path) -> list[Path]:
    """Move memory.db and its -wal/-shm files into quarantine; return where they went."""
    manager.db.close()
    stamp = utc_timestamp().replace(":", "")
    moved = []
    for suffix in ("", "-wal", "-shm", ".damaged"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            target = manager.paths.quarantine_dir / f"{path.name}{suffix}.{stamp}"
            try:
                manager.paths.quarantine_dir.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
            except OSError as exc:
                raise storage_error(exc, f"cannot move the damaged {source} to {target}") from exc
            moved.append(target)
    return moved


def rebuild_database(manager: "MemoryManager", reason: str, moved: list[Path]) -> list[str]:
    """Rebuild memory.db from LOG.md, the archives and the cold store; report what was and was not."""
    from core.memory.upkeep.rebuild import rebuild_history  # rebuild imports the cold tier

    sources = [(p.stem, p) for p in archives(manager)]
    rows = log_index.rebuild(manager.db, manager.log, sources, apply=True)
    compactions = rebuild_history(manager)
    facts = manager.db.conn.execute("SELECT count(*) FROM user_facts").fetchone()[0]
    notes = _restore_notes(manager)
    lost = _lost_secrets(manager, sources)
    where = f"; the damaged file is at {', '.join(str(p) for p in moved)}" if moved else ""
    lines = [
        f"{reason}{where}",
        f"rebuilt from LOG.md and {len(sources)} archive(s): {rows} log index rows, {compactions} compaction(s), "
        f"{facts} fact(s), {notes} note(s)",
        "not rebuilt: " + (NOT_REBUILT if isinstance(manager.db, Database) else NOT_REBUILT_POSTGRES)
        + (f"; the values of the secret fact(s) {', '.join(lost)}: save them again" if lost else ""),
    ]
    for line in lines:
        log.warning("agent %s: %s", manager.agent_name, line)
    manager.append_system("SYSTEM", "memory.db rebuilt: " + "; ".join(lines), {"kind": "recovery"})
    return lines


def _restore_notes(manager: "MemoryManager") -> int:
    """Put the notes the cold store holds back into memory.db (each row keeps its memory as JSON); a note
    forgotten (by a FORGET entry already replayed) stays out. Recall indexes them again."""
    from core.memory.recall.store import TABLE
    from core.memory.recall.sources import content_key

    if not (manager.paths.lancedb_dir / f"{TABLE}.lance").is_dir():
        return 0
    try:
        rows = manager.cold.store().rows_of("note:")
    except AgentOSError as exc:
        log.warning("notes could not be read back from the cold store (%s): they are not restored", exc)
        return 0
    restored = 0
    with manager.db.transaction() as conn:
        forgotten = {r[0] for r in conn.execute("SELECT id FROM recall_forgotten")}
        for row in rows:
            note = json.loads(row["memory"] or "{}")
            if row["id"] in forgotten or not isinstance(note.get("text"), str):
                continue
            meta = json.dumps(note.get("metadata") or {}, ensure_ascii=False, sort_keys=True)
            restored += conn.execute(
                "INSERT OR IGNORE INTO cold_notes (id, kind, text, metadata, created_at, occurred_at, expires_at,"
                " content_key, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row["id"].partition(":")[2], row["kind"], note["text"], meta, note.get("created_at"),
                 note.get("occurred_at"), note.get("expires_at"),
                 content_key(row["kind"], note["text"], meta, note.get("occurred_at")), note.get("created_at")),
            ).rowcount
    return restored


def _lost_secrets(manager: "MemoryManager", sources: list[tuple[str, Path]]) -> list[str]:
    """Keys whose last FACT record is a secret's (its value is never logged)."""
    last: dict[str, dict] = {}
    for entry in _all_entries(manager, sources):
        record = entry.metadata.get("fact") if entry.type == "FACT" else None
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            last[record["key"]] = record
    return sorted(k for k, r in last.items() if r.get("category") == "secret" and "value" not in r)


def _all_entries(manager: "MemoryManager", sources: list[tuple[str, Path]]) -> Iterator[LogEntry]:
    for _, path in sources:
        yield from scan_bytes(path.read_bytes(), path).entries
    yield from manager.log.scan().entries


# -- NOW.md ---------------------------------------------------------------------------


def current_now(manager: "MemoryManager") -> NowState:
    """NOW.md as the next update starts from it (the agent's lock is held): rewritten from LOG.md if it is
    unreadable or missing, brought forward if a writer was killed between its NOW_UPDATE line and the replace."""
    try:
        state = now_file.read(manager.paths.now_file, manager.agent_name)
    except CorruptionError as exc:
        return restore_now(manager, f"was unreadable ({exc})")
    if not manager.paths.now_file.exists() and has_history(manager):
        return restore_now(manager, "was missing")
    if manager.log.last_seq() == state.log_seq:
        return state  # nothing was logged after it: the common case, one stat
    newer = _newer_now_update(manager, state.log_seq)
    return state if newer is None else bring_forward(manager, state, newer)


def _newer_now_update(manager: "MemoryManager", seq: int) -> LogEntry | None:
    """A NOW_UPDATE entry after ``seq`` (NOW.md's own): asked of the index first, which is cheap."""
    try:
        log_index.reconcile(manager.db, manager.log)
        if log_index.newer_now_update(manager.db, seq) is None:
            return None
    except StorageError:
        pass  # memory.db cannot answer: LOG.md is read instead
    return newest_now_update(manager, seq)



def newest_now_update(manager: "MemoryManager", after: int = 0) -> LogEntry | None:
    """The newest NOW_UPDATE entry with a seq above ``after``, from LOG.md or else the archives."""
    for entry in manager.log.newest_first():
        if entry.seq <= after:
            return None
        if entry.type == "NOW_UPDATE":
            return entry
    for path in reversed(archives(manager)):
        for entry in reversed(scan_bytes(path.read_bytes(), path).entries):
            if entry.seq <= after:
                return None
            if entry.type == "NOW_UPDATE":
                return entry
    return None


def restore_now(manager: "MemoryManager", why: str) -> NowState:
    """Rewrite NOW.md from LOG.md's newest NOW_UPDATE (the bad file goes to quarantine); the lock is held."""
    path = manager.paths.now_file
    blank = NowState(agent=manager.agent_name, updated_at=utc_timestamp())
    entry = newest_now_update(manager)
    state = blank
    if entry is not None:
        try:
            state = now_record.from_update(entry.metadata, entry.seq, entry.ts, blank)
        except CorruptionError as exc:
            log.warning("%s; keeping only its version", exc)
            version = entry.metadata.get("version")
            state = replace(blank, version=version if isinstance(version, int) else 0, log_seq=entry.seq)
    if path.exists():
        target = manager.paths.quarantine_dir / f"NOW-{utc_timestamp().replace(':', '')}-{os.getpid()}.md"
        try:
            atomic_write(target, path.read_bytes())
        except OSError as exc:
            raise storage_error(exc, f"cannot copy the damaged {path} to {target}") from exc
        where = f"; the damaged file is at {target}"
    else:
        where = ""
    now_file.write(path, state)
    source = f"LOG.md entry {entry.seq}" if entry is not None else "nothing (no NOW_UPDATE was logged)"
    log.warning("agent %s: NOW.md %s: rewritten from %s%s", manager.agent_name, why, source, where)
    return state


def bring_forward(manager: "MemoryManager", state: NowState, entry: LogEntry) -> NowState:
    """NOW.md as the NOW_UPDATE ``entry`` recorded it, when a writer was killed before replacing it."""
    try:
        newer = now_record.from_update(entry.metadata, entry.seq, entry.ts, state)
    except CorruptionError as exc:
        log.warning("%s; only its version is taken", exc)
        version = entry.metadata.get("version")
        newer = replace(state, version=max(state.version, version if isinstance(version, int) else 0))
    if newer.version < state.version:
        return state
    try:
        now_file.write(manager.paths.now_file, newer)
    except StorageError as exc:
        log.warning("NOW.md could not be brought forward to LOG.md entry %d (%s)", entry.seq, exc)
        return newer
    log.warning("agent %s: NOW.md was behind LOG.md's NOW_UPDATE entry %d (its writer was killed before "
                "replacing it): brought forward to version %d", manager.agent_name, entry.seq, newer.version)
    return newer
