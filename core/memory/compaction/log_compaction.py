"""LOG.md compaction: old entries go to an immutable archive and the cold store; one SUMMARY stays.

The protocol (DESIGN.md, "Compaction of LOG.md"); every step can be redone
after a SIGKILL, and no seq is ever lost or doubled:

1. **reserve** (agent lock): note the last seq L and the byte offset O where
   entry L ends, and append a SYSTEM entry ``{"compaction": "reserved",
   "covers": [first, L]}`` with seq S = L + 1;
2. **summarise** bytes ``[0, O)`` with no lock held (an LLM may take a while);
3. **swap**: write ``archive/LOG-<first>-<L>.md`` = bytes ``[0, O)`` exactly
   (atomically; an existing one with the same sha256 is reused), then replace
   LOG.md atomically with: header + SUMMARY entry of seq S (covers, archive,
   sha256, the text) + every line after the reservation. Appends wait for the
   agent lock, so it is held only for the replace: the archive (whose bytes no
   longer change) and most of the new LOG.md are written and flushed before;
4. **record** the ``compaction_history`` row (and mark the archived seqs in ``log_metadata``);
5. **index** the archive's entries and summary for recall (docs in memory.db; vectors follow in
   the background).

The reservation's metadata key ``compaction`` is reserved for the system
(:data:`core.memory.files.log_format.SYSTEM_META_KEYS`): an entry a skill wrote can never
pass for one. A crash before the swap leaves a reservation that the next run resumes (the
archive's bytes are the same, so a written archive is reused). A crash after
it leaves a SUMMARY whose ``covers`` tell :meth:`LogCompactor.finish_pending`
what to record. Indexing failures (LanceDB, the embedder) only leave
``indexed_at`` empty; the next start retries. Runs are serialised by
``memory/.compact.lock``, which also guards the temp files of the archives and of
the staged LOG.md (swept by whoever holds it next).
"""

from __future__ import annotations

import hashlib
import logging
import os
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, ContextManager, Iterator

from core.config import Config
from core.errors import (
    BackendError,
    ColdStoreError,
    CorruptionError,
    LockTimeoutError,
    StorageError,
    ValidationError,
)
from core.memory.recall import log_index
from core.memory.recall.index import ColdIndexer, Progress
from core.memory.storage.protocol import Database
from core.memory.secrets.forgotten import derivable
from core.durable import AgentLock, StagedFile, atomic_write, remove_stale_temp_files, storage_error
from core.memory.files.log_file import LogFile, parse_or_none, scan_bytes
from core.memory.files.log_format import LogEntry, check_text, is_compaction_summary
from core.memory.secrets.redaction import redactor_of
from core.memory.compaction.plan import (
    RESERVED, CompactionReport, Plan, compacted_header, find_reservation, lines_of, report_damaged,
)
from core.memory.compaction.summarizer import LogSummarizer, Summary
from core.paths import AgentPaths

log = logging.getLogger(__name__)

STAGING_PREFIX = "compacted-"
"""Names the compactor's staged LOG.md (``.compacted-LOG.md.<pid>.tmp``), written under the compaction lock
only: the sweeps under the agent lock leave it alone, those under the compaction lock remove it."""


class LogCompactor:
    """Compacts one agent's LOG.md."""

    def __init__(
        self, paths: AgentPaths, lock: AgentLock, log_file: LogFile, db: Database,
        indexer: ColdIndexer, config: Config, after_run: Callable[[], object] | None = None,
    ) -> None:
        """``after_run`` is called when a run that swapped LOG.md ends, the compaction lock released (the
        secret scrub, which leaves LOG.md and the archives to the compaction that holds that lock)."""
        self.paths = paths
        self.lock = lock
        self.log = log_file
        self.db = db
        self.indexer = indexer
        self.config = config
        self._head_cache: tuple[int, int] | None = None  # (inode, seq before the entries counted)
        self.after_run = after_run
        # Held for the whole run, summary included: appends never take it, so the run still gives way to them.
        self._exclusive = AgentLock(paths.memory_dir / ".compact.lock", config.memory.lock_timeout_s,
                                    writers_take_it=False)

    def close(self) -> None:
        """Close the compaction lock's file (a later compaction opens it again for its run)."""
        self._exclusive.close()

    @contextmanager
    def exclusive(self, wait: bool) -> Iterator[bool]:
        """Hold the lock that serialises this agent's compactions; yield False if busy and not ``wait``."""
        holder = self._exclusive.hold(None if wait else 0.0)
        try:
            holder.__enter__()
        except LockTimeoutError:
            if wait:
                raise
            yield False
            return
        try:
            yield True
        finally:
            holder.__exit__(None, None, None)

    # -- thresholds -------------------------------------------------------------

    def over_threshold(self) -> bool:
        """True when LOG.md is over the size or entry-count threshold (cheap: no full read)."""
        try:
            stat = self.log.path.stat()
        except FileNotFoundError:
            return False
        if stat.st_size > self.config.memory.compact_log_bytes:
            return True
        return self.log.last_seq() - self._base_seq(stat.st_ino) > self.config.memory.compact_log_entries

    def _base_seq(self, inode: int) -> int:
        """The seq after which entries count towards the threshold: the SUMMARY's, or the one before the
        first."""
        if self._head_cache and self._head_cache[0] == inode:
            return self._head_cache[1]
        first = self.log.first_entry()
        base = 0 if first is None else (first.seq if is_compaction_summary(first) else first.seq - 1)
        self._head_cache = (inode, base)
        return base

    # -- the protocol -------------------------------------------------------------

    def run(
        self, summarizer: LogSummarizer | None, summary: str | None = None, *, force: bool = False,
        dry_run: bool = False, wait: bool = True, index: bool = True, progress: Progress | None = None,
        step: Callable[[], ContextManager[object]] = nullcontext,
    ) -> CompactionReport:
        """Compact LOG.md if over a threshold (or ``force``); finish any interrupted compaction first.

        Args:
            summarizer: makes the SUMMARY text when ``summary`` is not given (None only with
                ``summary`` or ``dry_run``).
            summary: a ready summary, used as is.
            force: compact even below the thresholds.
            dry_run: report what would be archived; change nothing.
            wait: wait for another running compaction (else return at once, ``reason="busy"``).
            index: index the archive in the cold store now (else at the next sync).
            step: the context of each step that holds the agent lock or memory.db's write lock (a background
                run waits there for the writers to pause, and for the other background steps).

        Raises:
            LockTimeoutError: ``wait`` and another compaction held the lock too long.
            CorruptionError: LOG.md or an archive changed under the compaction; nothing was lost.
        """
        if summary is not None:
            self._check_summary(check_text(summary, "summary"))
        report = CompactionReport()
        with self.exclusive(wait) as acquired:
            if not acquired:
                report.reason = "busy: another compaction is running"
                return report
            if not dry_run:
                report.recovered = self.finish_pending()
            with step():
                plan = self._plan(force, dry_run, report)
            if plan is None:
                return self._index(report, progress) if index and not dry_run else report
            report.first_seq, report.last_seq, report.entries = (
                plan.first_seq,
                plan.last_seq,
                len(plan.entries),
            )
            report.archive_id, report.resumed = plan.archive_id, plan.resumed
            report.archive_path = self.paths.archive_dir / f"{plan.archive_id}.md"
            if dry_run:
                report.reason = f"would archive entries {plan.first_seq}-{plan.last_seq}"
                return report
            made = Summary(summary, "given") if summary is not None else self._summarize(summarizer, plan)
            report.summary_method = made.method
            with step():
                # Checked again as it is written: a model may know a forgotten value from elsewhere, and a
                # forget or a secret may have come while it wrote.
                text = redactor_of(self.db).text(made.text)
                summary_entry, new_size = self._swap(plan, text, report)
                log_index.mark_compacted(self.db, plan.entries, plan.archive_id, summary_entry)
                self.record(plan.archive_id, summary_entry, len(plan.source), new_size)
            report.done = True
            log.info("LOG.md compacted: entries %d-%d -> %s (%d -> %d bytes, summary by %s)",
                     plan.first_seq, plan.last_seq, report.archive_path, report.bytes_before,
                     report.bytes_after, made.method)
        if self.after_run is not None:
            self.after_run()
        if not index:
            return report
        with step():
            return self._index(report, progress)

    def _check_summary(self, text: str) -> None:
        """Refuse a given summary that cannot be a SUMMARY entry, before anything is written."""
        if not text.strip():
            raise ValidationError("a given summary must not be empty")
        size = len(text.encode("utf-8"))
        if size > self.config.memory.max_entry_bytes:
            raise ValidationError(f"the summary is {size} bytes; a LOG entry holds at most "
                                  f"{self.config.memory.max_entry_bytes} (memory.max_entry_bytes): shorten "
                                  "it")

    def _summarize(self, summarizer: LogSummarizer, plan: Plan) -> Summary:
        """The summarizer's summary, or the deterministic one if it is too long to be an entry."""
        made = summarizer.summarize(derivable(self.db, plan.entries))
        try:
            self._check_summary(made.text)
        except ValidationError as exc:
            log.warning("the %s summary cannot be used (%s): using the deterministic summary", made.method,
                        exc)
            made = LogSummarizer(None, self.config.memory.compact_summary_tokens).deterministic(
                derivable(self.db, plan.entries))
        return made

    def _plan(self, force: bool, dry_run: bool, report: CompactionReport) -> Plan | None:
        """Step 1: find an interrupted reservation, or make one (under the agent lock).

        LOG.md is parsed before the lock is taken (appends wait for the lock, and parsing a
        50 KB log takes milliseconds); under it only the lines appended since are parsed, or
        all of them again if the file changed otherwise (a retracted line, a repaired tail).
        """
        seen = self._whole_lines()
        parsed = list(lines_of(seen))
        with self.lock.hold():
            self.log.repair()
            data = self.log.path.read_bytes()
            lines = parsed + list(lines_of(data,
                                           len(seen))) if data.startswith(seen) else list(lines_of(data))
            report.bytes_before = len(data)
            entries = [entry for _, _, entry in lines if entry is not None]
            if not entries:
                report.reason = "LOG.md has no entries"
                return None
            resumed = find_reservation(data, lines, entries[0].seq)
            if resumed is not None:
                return resumed
            if not (force or self.over_threshold()):
                report.reason = "below the compaction thresholds"
                return None
            if all(is_compaction_summary(e) for e in entries):
                report.reason = "LOG.md holds only a summary"
                return None
            first, last = entries[0].seq, entries[-1].seq
            if dry_run:
                return Plan(first, last, last + 1, len(data), len(data), data, tuple(entries), False)
            reservation = self.log.append(
                "SYSTEM", f"LOG.md compaction started: entries {first}-{last} will be archived",
                {"compaction": RESERVED, "covers": [first, last]})
            try:  # as every append's: not while another thread writes memory.db (the agent's lock is held)
                log_index.index_appended(self.db, self.log, reservation, wait=False)
            except LockTimeoutError:
                log.debug("the compaction's reservation (entry %d) is indexed with the next entry",
                          reservation.seq)
            # the repaired file ended with a newline: the line is next
            with open(self.log.path, "rb") as handle:
                handle.seek(len(data))
                line = handle.readline()
        if parse_or_none(line.rstrip(b"\n")) != reservation:
            raise StorageError("the compaction reservation was not found in LOG.md after appending it")
        report_damaged(lines)
        return Plan(first, last, reservation.seq, len(data), len(data) + len(line), data, tuple(entries),
                    False)

    def _whole_lines(self) -> bytes:
        """LOG.md up to its last newline, read without the lock (a line being appended is left out)."""
        try:
            data = self.log.path.read_bytes()
        except FileNotFoundError:
            return b""
        return data[: data.rfind(b"\n") + 1]

    def _swap(self, plan: Plan, text: str, report: CompactionReport) -> tuple[LogEntry, int]:
        """Step 3: write the archive, then replace LOG.md; the agent lock is held for the replace only.

        The archive's bytes no longer change, so it is written under the compaction lock alone.
        The new LOG.md is staged and flushed before the agent lock is taken; under it, the lines
        appended meanwhile are added and flushed, and the file takes LOG.md's place (its folder
        flushed before any append can land in it).
        """
        self._check_unchanged(self.log.path.read_bytes(), plan)  # before the archive is written
        sha = self._write_archive(plan)
        meta = {"covers": [plan.first_seq, plan.last_seq], "archive": f"archive/{plan.archive_id}.md",
                "sha256": sha, "entries": len(plan.entries), "source_bytes": len(plan.source),
                "method": report.summary_method}
        summary_entry, summary_line = self.log.build_line(plan.seq, "SUMMARY", text, meta)
        head = compacted_header(plan.seq) + summary_line
        kept = self._whole_lines()[plan.line_end :]
        staged = StagedFile(self.log.path, head + kept, prefix=STAGING_PREFIX)
        try:
            staged.flush()
            with self.lock.hold():
                data = self.log.path.read_bytes()
                try:
                    self._check_unchanged(data, plan)
                except CorruptionError:
                    # names nothing
                    (self.paths.archive_dir / f"{plan.archive_id}.md").unlink(missing_ok=True)
                    raise
                if data.startswith(kept, plan.line_end):
                    staged.append(data[plan.line_end + len(kept) :])
                else:  # a line staged was retracted meanwhile: stage the file again
                    staged.discard()
                    staged = StagedFile(self.log.path, head + data[plan.line_end :], prefix=STAGING_PREFIX)
                staged.install()
        except BaseException:
            if not staged.replaced:
                staged.discard()
            raise
        report.bytes_after = len(head) + len(data) - plan.line_end
        return summary_entry, report.bytes_after

    @staticmethod
    def _check_unchanged(data: bytes, plan: Plan) -> None:
        """Raise CorruptionError unless LOG.md still starts with the archived bytes and the reservation."""
        reservation = parse_or_none(data[plan.offset : plan.line_end].rstrip(b"\n"))
        if data[: plan.offset] != plan.source or reservation is None or reservation.seq != plan.seq:
            raise CorruptionError(
                "LOG.md changed under the compaction (edited by hand?); nothing was archived: run it again"
            )

    def _write_archive(self, plan: Plan) -> str:
        sha = hashlib.sha256(plan.source).hexdigest()
        path = self.paths.archive_dir / f"{plan.archive_id}.md"
        self.paths.archive_dir.mkdir(parents=True, exist_ok=True)
        if path.exists():
            if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
                raise CorruptionError(f"archive {path} exists with other content; LOG.md was left unchanged")
            return sha  # written by a run that was killed before its swap
        try:
            atomic_write(path, plan.source)
            os.chmod(path, 0o444)
        except OSError as exc:
            raise storage_error(exc, f"cannot write archive {path}") from exc
        return sha

    def record(self, archive_id: str, summary: LogEntry, source_bytes: int, new_size: int) -> None:
        """Step 4: the ``compaction_history`` row of the compaction ``summary`` closed (idempotent)."""
        covers = summary.metadata["covers"]
        with self.db.transaction() as conn:
            conn.execute(
                """INSERT OR IGNORE INTO compaction_history (compacted_at, entries_count, summary, archive_id,
                       original_size_kb, new_size_kb, first_seq, last_seq, archive_sha256)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (summary.ts, summary.metadata.get("entries", 0), summary.content, archive_id,
                 source_bytes / 1024, new_size / 1024, covers[0], covers[1], summary.metadata["sha256"]),
            )

    def remove_temp_files(self) -> list[Path]:
        """Delete the archives and staged LOG.md a killed compaction was writing (the compaction lock is
        held)."""
        removed = list(self.paths.archive_dir.glob(".LOG-*.tmp"))
        for leftover in removed:
            leftover.unlink(missing_ok=True)
        return removed + remove_stale_temp_files(self.log.path, STAGING_PREFIX)

    def sweep(self) -> list[Path]:
        """Delete a killed compaction's temp files now, unless a compaction is running (its own are live)."""
        with self.exclusive(wait=False) as acquired:
            return self.remove_temp_files() if acquired else []

    def finish_pending(self) -> list[str]:
        """Finish the steps after a swap that a killed run left undone; return the archives recorded."""
        # Temp files of a killed archive or LOG.md write; the run is redone from its reservation.
        self.remove_temp_files()
        with self.lock.hold():
            remove_stale_temp_files(self.log.path)
        first = self.log.first_entry()
        if first is None or not is_compaction_summary(first):
            return []
        archive_id = Path(first.metadata["archive"]).stem
        known = self.db.conn.execute(
            "SELECT 1 FROM compaction_history WHERE archive_id = ?", (archive_id,)
        ).fetchone()
        if known:
            return []
        archive = self.paths.archive_dir / f"{archive_id}.md"
        try:
            archived = scan_bytes(archive.read_bytes(), archive).entries
        except FileNotFoundError as exc:
            raise CorruptionError(f"LOG.md's summary points at {archive}, which is missing") from exc
        log_index.mark_compacted(self.db, archived, archive_id, first)
        self.record(archive_id, first, first.metadata.get("source_bytes", 0), self.log.path.stat().st_size)
        log.warning("finished the interrupted compaction into %s", archive)
        return [archive_id]

    def recover(self, progress: Progress | None = None) -> CompactionReport:
        """Finish interrupted post-swap steps and index what is pending; skip if a compaction is running."""
        report = CompactionReport()
        with self.exclusive(wait=False) as acquired:
            if not acquired:
                report.reason = "busy: another compaction is running"
                return report
            report.recovered = self.finish_pending()
        return self._index(report, progress)

    def _index(self, report: CompactionReport, progress: Progress | None) -> CompactionReport:
        """Step 5: index pending archives; a failing cold store leaves them pending, never loses data."""
        try:
            report.docs_indexed = self.indexer.sync(progress)
        except (BackendError, ColdStoreError) as exc:
            report.index_error = str(exc)
            log.warning("LOG.md archive not indexed yet (retried at the next start): %s", exc)
        return report
