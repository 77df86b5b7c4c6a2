"""What reflection reads: the entries recorded since its last pass, and the batches a model reads them in.

Three sources, in this order: LOG.md and its archives after the high-water mark (``reflect_marks``), then
the conversation messages and stored notes queued by triggers (``reflect_pending``). An entry is read
(:class:`Item`) or deliberately skipped: bookkeeping (run and step markers, NOW updates, summaries, facts,
forgets, system notes), the engine's copy of its own reply (the conversation holds the reply itself), a
message whose text LOG.md already holds, whatever a FORGET named, a damaged archive's entries. Secrets
and forgotten values are hidden from what the model reads (:func:`core.memory.secrets.forgotten.derivable`).

A batch (:class:`Batch`) is as many items as the model's window holds beside the prompt, the known facts
and room for the reply (at most ``reflect.batch_entries``); an entry longer than that is read in parts.
Each batch knows how far it takes the mark: LOG.md's mark moves past an entry once every part of it and
every entry before it was read, skipped or quarantined.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import StorageError
from core.llm import ContextWindow
from core.memory.files.log_file import LogFile, scan_bytes
from core.memory.files.log_format import LogEntry
from core.memory.recall.sources import SPEAKER_KEYS
from core.memory.secrets.forgotten import derivable, forgotten_ids
from core.memory.secrets.redaction import redactor_of
from core.memory.storage import Database

READ_TYPES = {"USER_FEEDBACK": "user", "THOUGHT": "assistant (thought)", "TOOL_USE": "tool use"}
"""LOG.md entry types that say what someone said or did, and who it is in the prompt."""
MAX_ITEMS = 400
"""Most entries one step of a pass reads from its sources (a pass goes on until none is left)."""
REPLY_SHARE = 4
"""A reply may take a quarter of the window (between :data:`MIN_REPLY_TOKENS` and
:data:`MAX_REPLY_TOKENS`)."""
MIN_REPLY_TOKENS, MAX_REPLY_TOKENS = 512, 4096
MIN_ROOM_CHARS = 600


@dataclass(frozen=True)
class Item:
    """One entry (or one part of a long one) as the model reads it."""

    id: str
    """``log:<seq>``, ``msg:<id>`` or ``note:<hex>``: what learned memories cite."""
    ts: str
    """When it was said (UTC ISO-8601): what relative times in it are read against."""
    speaker: str
    text: str
    part: tuple[int, int] = (1, 1)
    """(this part, of how many) for an entry read in parts."""

    @property
    def seq(self) -> int | None:
        """The LOG.md seq of a LOG.md entry (None for a message or a note)."""
        return int(self.id[4:]) if self.id.startswith("log:") else None

    @property
    def last_part(self) -> bool:
        return self.part[0] == self.part[1]

    def line(self, number: int) -> str:
        """The item as the prompt shows it: ``[3] 2026-11-20 14:03 user: text``."""
        part = f" (part {self.part[0]} of {self.part[1]})" if self.part[1] > 1 else ""
        return f"[{number}] {self.ts[:16].replace('T', ' ')} {self.speaker}{part}: {self.text}"


@dataclass
class Pending:
    """What one step of a pass found to read, in order, and what it skips."""

    items: list[Item] = field(default_factory=list)
    skipped_queue: list[str] = field(default_factory=list)
    """Queued messages and notes skipped (their queue rows go with the first commit)."""
    log_upto: int | None = None
    """LOG.md's mark once every entry read here is done (None: LOG.md had nothing new)."""
    more: bool = False
    """The sources hold more than this step read."""


@dataclass
class Batch:
    """Items read in one model call, and how far their commit takes the marks."""

    items: list[Item]
    log_upto: int | None = None
    """LOG.md's mark after this batch (None: it does not move)."""
    done_queue: list[str] = field(default_factory=list)
    """Queued messages and notes whose last part is in this batch (their queue rows go with it)."""

    @property
    def ids(self) -> list[str]:
        return list(dict.fromkeys(item.id for item in self.items))


def log_mark(db: Database) -> int:
    """The last LOG.md seq reflection is done with."""
    row = db.conn.execute("SELECT mark FROM reflect_marks WHERE source = 'log'").fetchone()
    return int(row[0]) if row else 0


def pending(db: Database, log: LogFile, archive_dir: Path, limit: int = MAX_ITEMS) -> Pending:
    """Up to ``limit`` entries to read: LOG.md's (archives first) after the mark, then the queue's."""
    found = Pending()
    entries, found.more = _log_entries(db, log, archive_dir, log_mark(db), limit)
    if entries:
        found.log_upto = entries[-1].seq
        visible = {e.seq: e for e in derivable(db.conn, entries)}
        for entry in entries:
            shown = visible.get(entry.seq)
            if shown is not None and _read(shown):
                found.items.append(Item(f"log:{entry.seq}", entry.ts, READ_TYPES[entry.type],
                                        shown.content.strip()))
    if not found.more:
        _queued(db, found, limit - len(entries))
    return found


def _read(entry: LogEntry) -> bool:
    """Whether a LOG.md entry is read (not bookkeeping, not the engine's copy of its reply, not empty)."""
    if entry.type not in READ_TYPES or not entry.content.strip():
        return False
    return not (entry.type == "THOUGHT" and entry.metadata.get("kind") == "response")


def _log_entries(db: Database, log: LogFile, archive_dir: Path, mark: int,
                 limit: int) -> tuple[list[LogEntry], bool]:
    """The entries after ``mark``, oldest first, at most ``limit`` (and whether more are left): from the
    archives that hold some (a damaged one's are skipped: they cannot be read), then from LOG.md."""
    entries: list[LogEntry] = []
    rows = db.conn.execute("SELECT archive_id, last_seq, index_error FROM compaction_history WHERE "
                           "last_seq > ? ORDER BY first_seq", (mark,)).fetchall()
    for row in rows:
        path = archive_dir / f"{row['archive_id']}.md"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            if row["index_error"]:
                continue  # set aside as damaged, and reported so: its summary is all there is
            raise StorageError(f"archive {path} is missing: reflection waits for it (restore it, or run "
                               "agentos rebuild-index)") from None
        except OSError as exc:
            raise StorageError(f"cannot read archive {path}: {exc}") from exc
        entries += [e for e in scan_bytes(data, path).entries if e.seq > mark]
        if len(entries) >= limit:
            return entries[:limit], True
    newest: list[LogEntry] = []
    after = max([mark, *(e.seq for e in entries)])
    for entry in log.newest_first():
        if entry.seq <= after:
            break
        newest.append(entry)
    entries += newest[::-1]
    return entries[:limit], len(entries) > limit


def _queued(db: Database, found: Pending, limit: int) -> None:
    """The queued messages and notes, oldest first: read, or skipped with their reason."""
    if limit <= 0:
        found.more = True
        return
    conn = db.conn
    queued = [r[0] for r in conn.execute("SELECT item FROM reflect_pending ORDER BY queued_at, item LIMIT ?",
                                         (limit + 1,))]
    found.more = found.more or len(queued) > limit
    queued = queued[:limit]
    gone = forgotten_ids(conn, queued)
    redact = redactor_of(conn)
    for item in queued:
        row = None if item in gone else _source_row(conn, item)
        if row is None:
            found.skipped_queue.append(item)
            continue
        text, speaker, ts = row
        text = redact.text(text).strip()
        if not text or _logged(conn, text):
            found.skipped_queue.append(item)
        else:
            found.items.append(Item(item, ts, speaker, text))


def _source_row(conn: Any, item: str) -> tuple[str, str, str] | None:
    """``(text, speaker, ts)`` of a queued message or note; None once it is gone (or not one to read)."""
    kind, _, key = item.partition(":")
    if kind == "msg" and key.isdigit():
        row = conn.execute("SELECT role, content, created_at FROM ctx_messages WHERE id = ?",
                           (int(key),)).fetchone()
        if row is None or row["role"] not in ("user", "assistant"):
            return None
        return row["content"], row["role"], row["created_at"]
    if kind == "note":
        row = conn.execute("SELECT text, metadata, created_at, occurred_at FROM cold_notes WHERE id = ? "
                           "AND kind = 'note'", (key,)).fetchone()
        if row is None:
            return None
        return row["text"], _speaker(row["metadata"]), row["occurred_at"] or row["created_at"]
    return None


def _speaker(metadata: str) -> str:
    """Who said a note, as its metadata names them (``note`` when it does not)."""
    try:
        data = json.loads(metadata or "{}")
    except ValueError:
        return "note"
    for key in SPEAKER_KEYS:
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[:40]
    return "note"


def _logged(conn: Any, text: str) -> bool:
    """Whether LOG.md (or an archive) holds an entry of exactly this text: the message is a copy of it."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return conn.execute("SELECT 1 FROM log_metadata WHERE content_hash = ? LIMIT 1",
                        (digest,)).fetchone() is not None


def entry_items(db: Database, log: LogFile, archive_dir: Path, item_id: str) -> list[Item]:
    """The entry ``item_id`` names as it is read now (a quarantined one, tried again); [] once it is gone,
    forgotten, or no longer one to read."""
    conn = db.conn
    if forgotten_ids(conn, [item_id]):
        return []
    if item_id.startswith("log:") and item_id[4:].isdigit():
        seq = int(item_id[4:])
        row = conn.execute("SELECT archive_id FROM log_metadata WHERE id = ?", (seq,)).fetchone()
        path = archive_dir / f"{row[0]}.md" if row is not None and row[0] else None
        try:
            entries = scan_bytes(path.read_bytes(), path).entries if path is not None else log.scan().entries
        except OSError:
            return []
        shown = [e for e in derivable(conn, [e for e in entries if e.seq == seq]) if _read(e)]
        return [Item(item_id, e.ts, READ_TYPES[e.type], e.content.strip()) for e in shown]
    row = _source_row(conn, item_id)
    text = redactor_of(conn).text(row[0]).strip() if row is not None else ""
    return [Item(item_id, row[2], row[1], text)] if row is not None and text else []


def known_facts(db: Database, chars: int) -> str:
    """The facts already known, newest first, as ``key = value`` lines within ``chars`` (secrets never)."""
    redact = redactor_of(db.conn)
    lines, size = [], 0
    for key, value in db.conn.execute("SELECT key, value FROM user_facts WHERE category <> 'secret' "
                                      "ORDER BY updated_at DESC, key LIMIT 500"):
        line = redact.text(f"{key} = {' '.join(value.split())[:200]}")
        if size + len(line) + 1 > chars:
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


# -- batches ------------------------------------------------------------------------------------------

def reply_tokens(window: ContextWindow) -> int:
    """Tokens kept for a reply: a quarter of the window, within bounds."""
    return max(MIN_REPLY_TOKENS, min(MAX_REPLY_TOKENS, window.num_ctx // REPLY_SHARE))


def room_chars(window: ContextWindow, prompt_chars: int) -> int:
    """Characters of entries that fit one call beside a prompt of ``prompt_chars`` characters."""
    margin = max(128, window.num_ctx // 32)  # the chat template's tokens around the prompt
    tokens = window.num_ctx - reply_tokens(window) - margin - window.tokens("x" * prompt_chars)
    return max(MIN_ROOM_CHARS, window.chars(tokens))


def batches(found: Pending, room: int, most: int) -> list[Batch]:
    """``found``'s items in batches of at most ``room`` characters and ``most`` items, in order, each
    with the marks its commit sets (an entry longer than ``room`` is cut into parts, never dropped)."""
    items = [part for item in found.items for part in _parts(item, room)]
    groups: list[list[Item]] = []
    size = 0
    for item in items:
        cost = len(item.line(most)) + 1
        if groups and len(groups[-1]) < most and size + cost <= room:
            groups[-1].append(item)
            size += cost
        else:
            groups.append([item])
            size = cost
    out = [Batch(group) for group in groups]
    for n, batch in enumerate(out):
        later = [i.seq for b in out[n + 1:] for i in b.items if i.seq is not None]
        if later:  # the entries before the next batch's first LOG.md entry are done
            batch.log_upto = later[0] - 1 if any(i.seq is not None for i in batch.items) else None
        else:
            batch.log_upto = found.log_upto
        batch.done_queue = [i.id for i in batch.items if i.seq is None and i.last_part]
    return out


def _parts(item: Item, room: int) -> list[Item]:
    """``item``, or its parts of at most ``room`` characters (cut at a line or a space where one is near)."""
    text, width = item.text, max(200, room - 80)
    if len(text) <= width:
        return [item]
    pieces = []
    while len(text) > width:
        cut = max(text.rfind("\n", 0, width), text.rfind(" ", 0, width))
        cut = cut if cut >= width // 2 else width
        pieces.append(text[:cut])
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return [Item(item.id, item.ts, item.speaker, piece, (n, len(pieces))) for n,
            piece in enumerate(pieces, 1)]
