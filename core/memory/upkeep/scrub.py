"""Scrubbing a secret from everything that held it before it was saved as a secret.

Redaction at every boundary (:mod:`core.memory.secrets.redaction`) keeps a known secret out
of what is written from then on. A value written *before* its fact was saved as a
secret (the user said it first, the fact came a step later) is removed by a
scrub. Saving a secret queues its key in ``secret_scrubs`` in the same
transaction (a trigger, whatever code saved it); the scrub runs right after the
save, at every open while a row is queued, and at the end of a LOG.md
compaction, and deletes the row once the value is gone from:

- **LOG.md**: each line that holds it is rewritten with the same seq, time and
  type and a new CRC; the file is replaced atomically under the agent's lock;
- **the archives**: rewritten the same way, keeping their names (the seq range
  they hold did not change). An archive is immutable so that it can be checked,
  not so that a credential outlives its user's wish: like a database's
  excision, the rewrite is itself recorded: the new sha256 goes to
  ``compaction_history`` and to the SUMMARY entry that points at the archive
  (whose own archive changes in turn, up to LOG.md), and a SYSTEM entry lists
  each archive's sha256 before and after. The commit is crash-safe: the new
  bytes go to ``archive/.<name>.scrub``, the new sha256 is committed in
  memory.db, then the file replaces the archive; a side file whose sha256 is the
  committed one is put in place by the next run, any other is deleted;
- **NOW.md**: rewritten through :func:`core.memory.upkeep.now.update` (version + 1, a NOW_UPDATE line);
- **quarantined LOG tails** (``quarantine/*.md``) and **session handoff summaries**;
- **memory.db**: every text column of every table but a secret's own value
  (:func:`core.memory.upkeep.scrub_tables.scrub_database`), the full-text indexes rebuilt,
  freed pages zeroed, the WAL truncated; on PostgreSQL, the agent's schema the same
  way, its changed tables vacuumed and their GIN indexes rebuilt
  (:mod:`core.memory.storage.postgres.scrub`);
- **the cold store**: its rows rewritten and re-embedded, old versions deleted;
- **the memory spaces** the agent is a member of or has published to (a secret's scrub only, not a purge):
  their journals and indexes, with the steps of :mod:`core.memory.spaces.scrub`.

A **purge** (``MemoryManager.purge_forgotten``) takes the values of forgotten
facts out of the same places with the same steps; ``forget_purges`` queues it
so that a purge killed midway is finished at the next open.

A scrub never waits for a running LOG.md compaction: it does everything else
and leaves LOG.md and the archives to the end of that compaction, which runs the
scrub again. Each step is idempotent, so a scrub killed at any point is finished
by the next run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import AgentOSError, BackendError, ColdStoreError, CorruptionError, ValidationError
from core.memory.recall.store import TABLE
from core.memory.storage.protocol import Database
from core.durable import atomic_write, fsync_dir, write_all
from core.memory.files.log_format import LogEntry, utc_timestamp
from core.memory.upkeep import now
from core.memory.upkeep.archives import archive_first_seq
from core.memory.upkeep.tiers import Tiers
from core.memory.upkeep.scrub_tables import scrub_cold_store, scrub_database
from core.memory.spaces import Space
from core.memory.spaces.scrub import spaces_of_author
from core.memory.secrets.redaction import Redactor, forgotten_values, redactor_for, rewrite_lines
from core.llm import estimate_tokens

log = logging.getLogger(__name__)

SIDE_SUFFIX = ".scrub"


@dataclass
class ScrubReport:
    """What one scrub changed (counts and names only: never a value)."""

    keys: list[str] = field(default_factory=list)
    """The secret facts whose scrub was queued (a purge: the forgotten facts' keys)."""
    log_lines: int = 0
    """LOG.md lines rewritten."""
    archives: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Archives rewritten: id → (sha256 before, sha256 after)."""
    now_rewritten: bool = False
    files: list[str] = field(default_factory=list)
    """Quarantined tails and handoff summaries rewritten."""
    rows: dict[str, int] = field(default_factory=dict)
    """memory.db rows changed per ``table.column``."""
    cold_rows: int = 0
    """Cold store rows that held a secret."""
    spaces: dict[str, list[int]] = field(default_factory=dict)
    """Memory spaces whose journal held a secret: name → the seqs of the entries rewritten."""
    deferred: str = ""
    """Why the scrub is not complete yet (its queue rows stay; it runs again), or ""."""

    @property
    def changed(self) -> bool:
        return bool(self.log_lines or self.archives or self.now_rewritten or self.files or self.rows
                    or self.cold_rows or self.spaces)


def forgotten_keys(db) -> set[str]:
    """The keys of the forgotten facts whose values a purge takes out (never the values)."""
    hidden = set(forgotten_values(db))
    rows = db.conn.execute("SELECT memory_id, value FROM forgotten_values").fetchall()
    return {r[0].partition(":")[2].partition("#version=")[0] for r in rows if r[1] in hidden}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SecretScrubber:
    """Runs the scrubs of one agent's memory (see the module docstring)."""

    def __init__(self, tiers: Tiers) -> None:
        self.tiers = tiers
        self.paths = tiers.paths

    def pending(self) -> list[tuple[str, str]]:
        """The queued ``(key, queued_at)`` rows."""
        return [tuple(r) for r in self.tiers.db.conn.execute("SELECT key, queued_at FROM secret_scrubs")]

    def pending_purges(self) -> list[str]:
        """The ``queued_at`` of the purges of forgotten values that have not finished."""
        return [r[0] for r in self.tiers.db.conn.execute("SELECT queued_at FROM forget_purges")]

    def run_pending(self) -> ScrubReport | None:
        """Scrub if a secret is queued, and finish an interrupted purge (cheap queries otherwise)."""
        report = self.run() if self.pending() else None
        if self.pending_purges():
            report = self.purge()
        return report

    def catch_up(self) -> ScrubReport | None:
        """Run a queued scrub (after a save, at open, when a compaction ends); a failure is logged loudly and
        the scrub stays queued, so the write that called it is not undone by it."""
        try:
            return self.run_pending()
        except AgentOSError as exc:
            log.error("a saved secret (or a forgotten value being purged) could not be scrubbed yet from the "
                      "files that hold it (retried at the next save, compaction or open): %s", exc)
            return None

    def run(self, everything: bool = False) -> ScrubReport | None:
        """Scrub every secret from every file and index; None when nothing is queued and not
        ``everything``."""
        queued = self.pending()
        if not queued and not everything:
            return None
        report = ScrubReport(keys=sorted({key for key, _ in queued}))
        self._scrub(self.tiers.facts.redactor(forgotten=False), report,
                    "DELETE FROM secret_scrubs WHERE key = ? AND queued_at = ?", queued, spaces=True)
        if report.changed:
            self._record(report, "secret_scrub", "secret values scrubbed from ")
        if report.deferred:
            log.warning("secret scrub not complete yet (it runs again): %s", report.deferred)
        return report

    def purge(self) -> ScrubReport:
        """Remove the values of forgotten facts (those no fact holds again) from every file and index,
        archives included, with the same steps as a secret's scrub. Queued first, so a purge killed midway
        is finished at the next open; ``forgotten_values`` keeps them, to hide them from what comes later."""
        with self.tiers.db.transaction() as conn:
            if not conn.execute("SELECT 1 FROM forget_purges").fetchone():
                conn.execute("INSERT INTO forget_purges (queued_at) VALUES (?)", (utc_timestamp(),))
        queued = [(q,) for q in self.pending_purges()]
        report = ScrubReport(keys=sorted(forgotten_keys(self.tiers.db)))
        redactor = redactor_for(forgotten_values(self.tiers.db))
        if not redactor:  # nothing forgotten (or all saved again): nothing to take out
            with self.tiers.db.transaction() as conn:
                conn.executemany("DELETE FROM forget_purges WHERE queued_at = ?", queued)
            return report
        self._scrub(redactor, report, "DELETE FROM forget_purges WHERE queued_at = ?", queued)
        if report.changed:
            self._record(report, "forget_purge", "forgotten values purged from ")
        if report.deferred:
            log.warning("purge of forgotten values not complete yet (it runs again): %s", report.deferred)
        return report

    def _scrub(self, redactor: Redactor, report: ScrubReport, dequeue: str, queued: list[tuple],
               spaces: bool = False) -> None:
        """Take ``redactor``'s values out of every file and index (and the agent's ``spaces``); dequeue
        ``queued`` unless deferred."""
        tiers = self.tiers
        with tiers.compactor.exclusive(wait=False) as acquired:
            if acquired:
                self.finish_interrupted()
                self._log_files(redactor, report)
            else:
                report.deferred = (
                    "a LOG.md compaction is running: LOG.md and the archives are scrubbed when it ends"
                )
            self._now(redactor, report)
            self._other_files(redactor, report)
            report.rows, truncated = _scrub_tables(tiers.db, redactor)
            if not truncated:
                report.deferred = report.deferred or "memory.db's WAL could not be truncated"
            self._cold(redactor, report)
            if spaces and redactor:
                self._spaces(redactor, report)
            if not report.deferred and queued:
                with tiers.db.transaction() as conn:
                    conn.executemany(dequeue, queued)

    # -- LOG.md and the archives ---------------------------------------------------

    def _log_files(self, redactor: Redactor, report: ScrubReport) -> None:
        """Archives, then LOG.md (under the compaction lock the caller holds)."""
        tiers = self.tiers
        shas = self._archives(redactor, report)
        with tiers.lock.hold():
            path = self.paths.log_file
            data = path.read_bytes()
            new, entries = rewrite_lines(data, redactor, shas)
            if new != data:
                atomic_write(path, new)
                report.log_lines = len(entries)
                self._reindex(entries)

    def _archives(self, redactor: Redactor, report: ScrubReport) -> dict[str, str]:
        """Rewrite the archives holding a secret (and those after them, whose SUMMARY names a new sha256);
        return the sha256 of every archive that verified or was rewritten."""
        db = self.tiers.db
        recorded = dict(
            db.conn.execute("SELECT archive_id, archive_sha256 FROM compaction_history").fetchall()
        )
        shas: dict[str, str] = {}
        staged: list[tuple[Path, Path, list[LogEntry]]] = []
        for path in sorted(self.paths.archive_dir.glob("LOG-*.md"), key=archive_first_seq):
            data = path.read_bytes()
            if recorded.get(path.stem) and _sha(data) != recorded[path.stem]:
                log.warning("archive %s does not match its sha256: left as it is (not scrubbed)", path)
                continue
            new, entries = rewrite_lines(data, redactor, shas)
            if new != data or recorded.get(path.stem):
                # the SUMMARY naming it follows (a killed run may have left it stale)
                shas[path.stem] = _sha(new)
            if new == data:
                continue
            report.archives[path.stem] = (_sha(data), shas[path.stem])
            if path.stem not in recorded:  # not checked against memory.db (yet): replaced at once
                _replace_archive(path, new)
                self._reindex(entries)
                continue
            side = path.with_name(f".{path.name}{SIDE_SUFFIX}")
            _write_durably(side, new)
            staged.append((path, side, entries))
        if not staged:
            return shas
        fsync_dir(self.paths.archive_dir)
        with db.transaction() as conn:  # the commit point: the side files are the archives from now on
            conn.executemany("UPDATE compaction_history SET archive_sha256 = ? WHERE archive_id = ?",
                             [(shas[path.stem], path.stem) for path, _, _ in staged])
        for path, side, entries in staged:
            _install(side, path)
            self._reindex(entries)
        fsync_dir(self.paths.archive_dir)
        return shas

    def finish_interrupted(self) -> list[str]:
        """Put in place the archive rewrites a killed scrub committed; delete the side files it did not."""
        sides = sorted(self.paths.archive_dir.glob(f".LOG-*.md{SIDE_SUFFIX}"))
        if not sides:
            return []
        finished = []
        conn = self.tiers.db.conn
        for side in sides:
            target = side.with_name(side.name[1:-len(SIDE_SUFFIX)])
            row = conn.execute("SELECT archive_sha256 FROM compaction_history WHERE archive_id = ?",
                               (target.stem,)).fetchone()
            if row is not None and row[0] == _sha(side.read_bytes()):
                _install(side, target)
                finished.append(target.stem)
            else:
                side.unlink()
        fsync_dir(self.paths.archive_dir)
        if finished:
            log.warning("finished the interrupted scrub of archives %s", ", ".join(finished))
        return finished

    def _reindex(self, entries: list[LogEntry]) -> None:
        """Keep ``log_metadata``'s hashes in step with the rewritten entries."""
        if not entries:
            return
        with self.tiers.db.transaction() as conn:
            conn.executemany(
                "UPDATE log_metadata SET content_hash = ?, token_count = ? WHERE id = ?",
                [(_sha(e.content.encode("utf-8")), estimate_tokens(e.content), e.seq) for e in entries])

    # -- the other files -----------------------------------------------------------

    def _now(self, redactor: Redactor, report: ScrubReport) -> None:
        tiers = self.tiers
        try:
            text = self.paths.now_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        if redactor.holds(text):
            try:
                now.update(tiers)  # every field is redacted on the way out
            except (CorruptionError, ValidationError) as exc:
                report.deferred = report.deferred or f"NOW.md could not be rewritten: {exc}"
                return
            report.now_rewritten = True

    def _other_files(self, redactor: Redactor, report: ScrubReport) -> None:
        """Quarantined LOG tails and the handoff summaries of sessions."""
        with self.tiers.lock.hold():
            for path in sorted(self.paths.quarantine_dir.glob("*.md")):
                data = path.read_bytes()
                new, _ = rewrite_lines(data, redactor, {})
                if new != data:
                    atomic_write(path, new)
                    report.files.append(str(path.relative_to(self.paths.root)))
        for path in sorted((self.paths.memory_dir / "sessions").glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                log.warning("cannot read %s to scrub it: %s", path, exc)
                continue
            redacted = redactor(record)
            if redacted != record:
                atomic_write(path, json.dumps(redacted, ensure_ascii=False, indent=1).encode("utf-8"))
                report.files.append(str(path.relative_to(self.paths.root)))

    def _cold(self, redactor: Redactor, report: ScrubReport) -> None:
        if not (self.paths.lancedb_dir / f"{TABLE}.lance").is_dir():
            return  # never opened: nothing was indexed (and nothing heavy is loaded)
        try:
            report.cold_rows = scrub_cold_store(self.tiers.cold.store(), redactor)
        except (ColdStoreError, BackendError) as exc:
            report.deferred = report.deferred or f"the cold store could not be scrubbed: {exc}"

    def _spaces(self, redactor: Redactor, report: ScrubReport) -> None:
        """The journals and indexes of the spaces the agent is a member of or published to."""
        home = self.paths.root.parent
        try:
            names = spaces_of_author(self.tiers.agent_name, home)
        except AgentOSError as exc:
            report.deferred = report.deferred or f"the memory spaces could not be listed: {exc}"
            return
        for name in names:
            try:
                with Space(name, home) as space:
                    scrubbed = space.scrub_secrets(redactor, self.tiers.agent_name)
            except AgentOSError as exc:  # this space waits for the next run; the others are scrubbed now
                report.deferred = report.deferred or f"the memory space {name} could not be scrubbed: {exc}"
                continue
            if scrubbed:
                report.spaces[name] = scrubbed

    def _record(self, report: ScrubReport, kind: str, title: str) -> None:
        """The scrub's own LOG.md entry: what was rewritten, never a value."""
        parts = [f"{report.log_lines} LOG.md lines"] if report.log_lines else []
        parts += [f"archive {a}" for a in report.archives]
        parts += ["NOW.md"] if report.now_rewritten else []
        parts += report.files
        parts += [f"{sum(report.rows.values())} memory.db rows"] if report.rows else []
        parts += [f"{report.cold_rows} cold store rows"] if report.cold_rows else []
        parts += [f"space {name} ({len(seqs)} entries)" for name, seqs in report.spaces.items()]
        meta = {"kind": kind, "keys": report.keys, "log_lines": report.log_lines,
                "archives": {a: {"sha256_before": b, "sha256_after": c} for a,
                             (b, c) in report.archives.items()},
                "rows": report.rows, "cold_rows": report.cold_rows, "files": report.files,
                **({"spaces": report.spaces} if report.spaces else {})}
        self.tiers.append("SYSTEM", title + ", ".join(parts), meta)


def _scrub_tables(db: Database, redactor: Redactor) -> tuple[dict[str, int], bool]:
    """memory.db's tables scrubbed, in its SQLite file or its PostgreSQL schema."""
    if db.kind == "sqlite":
        return scrub_database(db.conn, redactor)
    from core.memory.storage.postgres.scrub import scrub_schema

    return scrub_schema(db, redactor)


def _write_durably(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _install(side: Path, target: Path) -> None:
    os.chmod(side, 0o444)
    os.replace(side, target)


def _replace_archive(path: Path, data: bytes) -> None:
    atomic_write(path, data)
    os.chmod(path, 0o444)
