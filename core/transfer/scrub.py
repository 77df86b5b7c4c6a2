"""Removing secrets and forgotten values from a staged copy of an agent before it is archived.

The secret facts are deleted from the memory.db snapshot (unless the export includes secrets), and
their values, and those of forgotten facts (which no export carries, purged or not), are
replaced by ``[REDACTED]`` (matched as :mod:`core.memory.secrets.redaction` matches them) in
every text column of every table, keys and ids included (so tables added later are covered, recall's
``recall_docs`` with its full-text index rebuilt included), in NOW.md,
in LOG.md and its archives, and in the other text files, with the scrub's own
functions (:mod:`core.memory.upkeep.scrub`): LOG lines are re-encoded with their new CRC,
and each archive's new sha256 is written where it is recorded (the SUMMARY entry
that points to it and ``compaction_history``), in seq order, so the copy stays
self-consistent.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from contextlib import closing

from core.memory.secrets import forgotten_values, redactor_for, rewrite_lines
from core.memory.upkeep import archive_first_seq, scrub_tables
from core.memory.storage import redact, staged_copy
from core.durable import atomic_write

TEXT_SUFFIXES = {".md", ".json", ".yaml", ".yml", ".txt"}


def values_to_remove(db_file: Path, include_secrets: bool) -> tuple[list[str], list[str]]:
    """The values a copy must not carry: ``(secret values, unless included; forgotten values)``."""
    with closing(staged_copy.connect(db_file)) as conn:
        forgotten = forgotten_values(conn)
    return ([] if include_secrets else staged_copy.secret_values(db_file)), forgotten


def scrub_database(db_file: Path, secrets: list[str], forgotten: list[str], delete_secrets: bool) -> None:
    """Delete the secret facts (if asked) and redact the values everywhere in the snapshot, keys and ids
    included, then VACUUM it."""
    conn = staged_copy.connect(db_file, autocommit=True)
    try:
        if delete_secrets:
            staged_copy.delete_secret_facts(conn)
        redactor = redactor_for(sorted({*secrets, *forgotten}, key=len, reverse=True))
        if redactor:
            scrub_tables.scrub_database(conn, redactor)
            with conn:
                staged_copy.redact_identifiers(conn, redactor.text)
                staged_copy.hide_forgotten_values(conn, forgotten)
        conn.execute("VACUUM")  # deleted values must not linger in free pages
    finally:
        conn.close()


def scrub_log_files(memory_dir: Path, db_file: Path, secrets: list[str]) -> int:
    """Redact the secrets in the archives (oldest first) and LOG.md; return the files changed."""
    redactor = redactor_for(secrets)
    archives = sorted((memory_dir / "archive").glob("LOG-*.md"), key=archive_first_seq)
    shas: dict[str, str] = {}
    rewritten: dict[str, str] = {}
    for path in [*archives, memory_dir / "LOG.md"]:
        if not path.is_file():
            continue
        data = path.read_bytes()
        scrubbed, _ = rewrite_lines(data, redactor, shas)
        if path.parent.name == "archive":
            shas[path.stem] = hashlib.sha256(scrubbed).hexdigest()
        if scrubbed != data:
            atomic_write(path, scrubbed)
            rewritten[path.stem] = shas.get(path.stem, "")
    archived = [(digest, name) for name, digest in rewritten.items() if digest]
    if archived:
        staged_copy.set_archive_sha256(db_file, archived)
    return len(rewritten)


def scrub_text_file(path: Path, secrets: list[str]) -> bool:
    """Redact the secrets in one UTF-8 text file; return True if it changed."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    scrubbed = redact(text, secrets)
    if scrubbed == text:
        return False
    atomic_write(path, scrubbed.encode("utf-8", errors="surrogateescape"))
    return True
