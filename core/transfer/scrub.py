"""Removing secrets from a staged copy of an agent before it is archived.

The secret facts are deleted from the memory.db snapshot, and their values are
replaced by ``[REDACTED]`` in every text column of every table (so tables added
later are covered, recall's ``recall_docs`` included) and every full-text index
is rebuilt from its redacted content (``recall_fts``, the conversations'), in
NOW.md, in LOG.md and its archives, and in the other text files. LOG lines are re-encoded with their new CRC, and each archive's new
sha256 is written where it is recorded (the SUMMARY entry that points to it and
``compaction_history``), in seq order, so the copy stays self-consistent.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

from core.memory.facts import REDACTED, redact
from core.memory.fsutil import atomic_write
from core.memory.log_file import parse_or_none
from core.memory.log_format import encode_entry, is_header
from core.memory.rebuild import archive_first_seq

TEXT_SUFFIXES = {".md", ".json", ".yaml", ".yml", ".txt"}
_FTS5 = re.compile(r"\bUSING\s+fts5\s*\(", re.IGNORECASE)


def secret_values(db_file: Path) -> list[str]:
    """The values of the secret facts in a memory.db, longest first (those redaction replaces)."""
    with sqlite3.connect(db_file) as conn:
        rows = conn.execute("SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= 3").fetchall()
    return sorted({row[0] for row in rows}, key=len, reverse=True)


def scrub_database(db_file: Path, secrets: list[str]) -> None:
    """Delete the secret facts and redact their values everywhere in the snapshot, then VACUUM it."""
    conn = sqlite3.connect(db_file, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("DELETE FROM user_facts WHERE category = 'secret'")
        for table, columns in _text_columns(conn):
            for column in columns:
                for secret in secrets:
                    conn.execute(f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                                 f'WHERE instr("{column}", ?) > 0', (secret, REDACTED, secret))
        for fts in _fts_tables(conn):
            conn.execute(f'INSERT INTO "{fts}" ("{fts}") VALUES (\'rebuild\')')
        conn.execute("COMMIT")
        conn.execute("VACUUM")  # deleted values must not linger in free pages
    finally:
        conn.close()


def scrub_log_files(memory_dir: Path, db_file: Path, secrets: list[str]) -> int:
    """Redact the secrets in the archives (oldest first) and LOG.md; return the files changed."""
    archives = sorted((memory_dir / "archive").glob("LOG-*.md"), key=archive_first_seq)
    new_hashes: dict[str, str] = {}
    changed = 0
    for path in [*archives, memory_dir / "LOG.md"]:
        if not path.is_file():
            continue
        data = path.read_bytes()
        scrubbed = _scrub_log_bytes(data, secrets, new_hashes)
        if scrubbed != data:
            atomic_write(path, scrubbed)
            changed += 1
            if path.parent.name == "archive":
                new_hashes[f"archive/{path.name}"] = hashlib.sha256(scrubbed).hexdigest()
    if new_hashes:
        with sqlite3.connect(db_file) as conn:
            conn.executemany("UPDATE compaction_history SET archive_sha256 = ? WHERE archive_id = ?",
                             [(digest, Path(name).stem) for name, digest in new_hashes.items()])
    return changed


def scrub_text_file(path: Path, secrets: list[str]) -> bool:
    """Redact the secrets in one UTF-8 text file; return True if it changed."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    scrubbed = redact(text, secrets)
    if scrubbed == text:
        return False
    atomic_write(path, scrubbed.encode("utf-8", errors="surrogateescape"))
    return True


def _scrub_log_bytes(data: bytes, secrets: list[str], new_hashes: dict[str, str]) -> bytes:
    lines = data.split(b"\n")
    for i, raw in enumerate(lines):
        if not raw or (i == 0 and is_header(raw)):
            continue
        entry = parse_or_none(raw)
        if entry is None:  # a damaged line stays as it is: the reader skips it anyway
            continue
        meta = redact(entry.metadata, secrets)
        archive = meta.get("archive") if entry.type == "SUMMARY" else None
        if archive in new_hashes:
            meta = {**meta, "sha256": new_hashes[archive]}
        content = redact(entry.content, secrets)
        if content != entry.content or meta != entry.metadata:
            lines[i] = encode_entry(entry.seq, entry.ts, entry.type, content, meta or None).rstrip(b"\n")
    return b"\n".join(lines)


def _text_columns(conn: sqlite3.Connection) -> list[tuple[str, list[str]]]:
    """Every ordinary table (FTS and its shadow tables excluded) with its text columns."""
    fts = _fts_tables(conn)
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' "
        "AND name NOT LIKE 'sqlite_%'")]
    result = []
    for table in tables:
        if any(table.startswith(f"{name}_") for name in fts):
            continue
        columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')
                   if row[2].upper() in ("TEXT", "") or "CHAR" in row[2].upper()]
        result.append((table, columns))
    return result


def _fts_tables(conn: sqlite3.Connection) -> list[str]:
    """The FTS5 tables (``recall_fts``, ``ctx_messages_fts``, ...), not their ``fts5vocab`` views."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
    return [name for name, sql in rows if _FTS5.search(sql)]
