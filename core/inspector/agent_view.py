"""What the inspector shows of one agent. Every method reads; none writes, locks or repairs.

Each answer is built inside one read transaction of memory.db (or of the
agent's PostgreSQL schema) and masked on its way out
(:mod:`core.inspector.masking`). Files are read with plain read-only opens:
NOW.md is replaced atomically and LOG.md lines carry their own CRC, so a reader
never needs the agent's lock.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from core.config import Config, StorageConfig, load_config
from core.errors import AgentOSError, NotFoundError
from core.inspector import activity, now_versions, timeline
from core.memory.storage import reading
from core.inspector.log_files import LogFiles
from core.inspector.masking import mask, searchable
from core.memory.storage import Reader
from core.memory.files import now_file
from core.memory import MemoryReader
from core.memory.files import ENTRY_TYPES
from core.memory.recall import check_recall
from core.memory.reflection import read_view
from core.memory.storage import schema_name
from core.paths import AgentPaths

RUNS_SHOWN = 100
COMPACTIONS_PAGE = 20
NOTES_PAGE = 20
MESSAGES_PAGE = 50
SUMMARY_CHILDREN = 500


class AgentView:
    """The read-only view of one agent's memory."""

    def __init__(self, paths: AgentPaths) -> None:
        self.paths = paths
        self.files = LogFiles(paths)
        self._reader: MemoryReader | None = None
        self._store_guard = threading.Lock()
        self._config: Config | None = None
        self._log_counts = activity.LogCounts()

    @property
    def config(self) -> Config:
        """The agent's config, read on first use."""
        if self._config is None:
            self._config = load_config(self.paths)
        return self._config

    @property
    def storage(self) -> StorageConfig:
        """Where the agent's memory tables are."""
        return self.config.storage

    def _answer(self, build: Callable[[Reader, list[str]], dict[str, Any]]) -> dict[str, Any]:
        """``build(reader, secrets)`` inside one read transaction, masked."""
        started = time.perf_counter()
        with reading(self.paths, self.storage) as reader:
            secrets = reader.secret_values()
            answer = mask(build(reader, secrets), secrets)
        answer["server_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return answer

    # -- NOW.md and the home page -------------------------------------------------------

    def now(self) -> dict[str, Any]:
        """NOW.md parsed (front matter, plan, blockers, body), or why it cannot be read."""
        if not self.paths.now_file.is_file():
            return {"missing": True}
        try:
            return now_file.document(*now_file.load(self.paths.now_file, self.paths.name))
        except AgentOSError as exc:
            return {"error": str(exc)}

    def card(self) -> dict[str, Any]:
        """The agent's line in the list of agents: its state and objective."""
        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            now = self.now()
            return {"name": self.paths.name, "status": now.get("status"), "objective": now.get("objective"),
                    "updated_at": now.get("updated_at"), "has_memory": self.paths.memory_dir.is_dir()}
        return self._answer(build)

    def overview(self) -> dict[str, Any]:
        """Everything the first view of an agent shows, in one answer."""
        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            answer = self._state(reader)
            answer.update({
                "agent": self.paths.name,
                "entry_types": list(ENTRY_TYPES),
                "runs": self._runs(reader, answer["now"]),
                "timeline": self._timeline(reader, timeline.LogQuery(), secrets),
                "notes": self._notes(reader, None),
                "conversations": reader.conversations(),
                "compactions": self._compactions(reader, None),
            })
            return answer
        return self._answer(build)

    def state(self) -> dict[str, Any]:
        """What changes as an agent works, cheap enough to fetch on every change: NOW, sizes, facts."""
        return self._answer(lambda reader, secrets: self._state(reader))

    def _state(self, reader: Reader) -> dict[str, Any]:
        now = self.now()
        current = _current_run(now)
        return {
            "now": now,
            "types": reader.type_counts(),  # here, not in the overview only: live updates refresh the chips
            "sizes": self.sizes(reader),
            "counts": {"facts": reader.fact_count(), "notes": reader.note_count(),
                       "messages": reader.message_count(), "compactions": reader.compaction_count(),
                       "unindexed_archives": reader.unindexed_archives(),
                       "pending_cold_items": reader.pending_cold_items()},
            "facts": reader.facts(),
            "profiles": reader.profiles(self.paths.name),
            "never_ended": [dict(r, running=r["run_id"] == current) for r in reader.open_runs()],
        }

    # -- the timeline -------------------------------------------------------------------

    def timeline(self, query: timeline.LogQuery) -> dict[str, Any]:
        """One page of the LOG.md timeline."""
        return self._answer(lambda reader, secrets: self._timeline(reader, query, secrets))

    def _timeline(self, reader: Reader, query: timeline.LogQuery, secrets: list[str]) -> dict[str, Any]:
        result = timeline.page(self.files, reader, query,
                               haystack=lambda entry: searchable(entry.content, entry.metadata, secrets))
        starts = [e.entry.metadata.get("run_id") for e in result["entries"]
                  if not isinstance(e, dict) and e.entry.type == "RUN_START"]
        open_runs = set(starts) - reader.ended([s for s in starts if isinstance(s, str)])
        archives = {a.id for a in self.files.archives()}
        current = _current_run(self.now())
        result["runs"] = self._runs_of(reader, result["entries"], current)
        result["entries"] = [timeline.entry_json(e, open_runs, current, archives) for e in result["entries"]]
        result["newest_seq"] = max(self.files.last_seq(), reader.last_indexed_seq())
        if query.archive is not None:
            archive = query.archive
            result["archive"] = {"id": archive.id, "first": archive.first, "last": archive.last,
                                 "bytes": archive.size}
        return result

    def _runs_of(self, reader: Reader, entries: list, current: str | None) -> dict[str, dict[str, Any]]:
        """The runs of a timeline page's entries, as a folded run's row shows them: its objective (its
        RUN_START's text), outcome, entries and errors, and the seqs it spans."""
        ids = list(dict.fromkeys(e.entry.metadata.get("run_id") or e.entry.metadata.get("now_run_id")
                                 for e in entries if not isinstance(e, dict)))
        runs = reader.runs_of([i for i in ids if isinstance(i, str)])
        marks = self.files.read([s for r in runs.values() for s in (r["start_seq"], r["end_seq"]) if s])
        for run_id, run in runs.items():
            start, end = marks.get(run["start_seq"]), marks.get(run["end_seq"])
            run["objective"] = start.entry.content if start is not None else None
            if end is not None:
                run["outcome"] = end.entry.metadata.get("outcome", "done")
            else:
                run["outcome"] = ("interrupted" if run["interrupted_seq"] else "running" if run_id == current
                                  else "never ended" if run["start_seq"] else "unknown")
        return runs

    def archive(self, archive_id: str):
        """The archive of that id, else NotFoundError."""
        found = self.files.archive(archive_id)
        if found is None:
            raise NotFoundError(f"agent {self.paths.name!r} has no archive {archive_id!r}")
        return found

    def _runs(self, reader: Reader, now: dict[str, Any]) -> list[dict[str, Any]]:
        """The newest runs, each with how it ended (or that it never did)."""
        current = _current_run(now)
        runs = reader.runs(RUNS_SHOWN)
        ends = self.files.read([r["end_seq"] for r in runs if r["end_seq"]])
        for run in runs:
            end = ends.get(run["end_seq"]) if run["end_seq"] else None
            if end is not None:
                run["outcome"] = end.entry.metadata.get("outcome", "done")
            elif run["interrupted_seq"]:
                run["outcome"] = "interrupted"
            elif run["run_id"] == current:
                run["outcome"] = "running"
            else:
                run["outcome"] = "never ended" if run["start_seq"] else "unknown"
        return runs

    # -- activity over time and NOW.md's versions --------------------------------------------

    def activity(self) -> dict[str, Any]:
        """Entries by type in each hour or day, compactions and memory growth (see
        :mod:`core.inspector.activity`)."""
        return self._answer(lambda reader, secrets: activity.activity(reader, self._log_counts))

    def now_versions(self, before: int | None) -> dict[str, Any]:
        """A page of NOW.md's versions, newest first, rebuilt from its NOW_UPDATE entries."""
        return self._answer(lambda reader, secrets: now_versions.versions(self.files, reader, before))

    def now_diff(self, older: int, newer: int) -> dict[str, Any]:
        """NOW.md as the NOW_UPDATE entries ``older`` and ``newer`` recorded it, line by line."""
        return self._answer(lambda reader,
                            secrets: now_versions.diff(self.files, self.paths.name, older, newer))

    # -- reflection ---------------------------------------------------------------------

    def reflection(self) -> dict[str, Any]:
        """How far reflection is (``agentos reflect --status``'s figures, as memory.db records them) and the
        facts it learned, each with its sources and where each source is; reads only, never starts a pass."""
        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            found = read_view(reader, max(self.files.last_seq(), reader.last_indexed_seq())).as_dict()
            reflect, llm = self.config.reflect, self.config.llm
            found["config"] = {"enabled": reflect.enabled, "backend": llm.backend,
                               "model": reflect.model or llm.model, "interval_s": reflect.interval_s}
            return found
        return self._answer(build)

    # -- facts, notes, compactions ------------------------------------------------------

    def fact_history(self, key: str) -> dict[str, Any]:
        """The values the fact ``key`` has held, newest first (the current one first), and how many earlier
        ones it has kept; NotFoundError if no fact has that key."""
        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            history = reader.fact_history(key)
            if history is None:
                raise NotFoundError(f"agent {self.paths.name!r} has no fact {key!r}")
            return {"key": key, "history": history, "earlier": reader.fact_version_count(key)}
        return self._answer(build)

    def notes(self, before: int | None) -> dict[str, Any]:
        return self._answer(lambda reader, secrets: self._notes(reader, before))

    @staticmethod
    def _notes(reader: Reader, before: int | None) -> dict[str, Any]:
        rows = reader.notes(before, NOTES_PAGE + 1)
        return {"notes": rows[:NOTES_PAGE], "has_older": len(rows) > NOTES_PAGE, "total": reader.note_count()}

    def compactions(self, before: int | None) -> dict[str, Any]:
        return self._answer(lambda reader, secrets: self._compactions(reader, before))

    def _compactions(self, reader: Reader, before: int | None) -> dict[str, Any]:
        rows = reader.compactions(before, COMPACTIONS_PAGE + 1)
        archives = {a.id for a in self.files.archives()}
        for row in rows[:COMPACTIONS_PAGE]:
            row["archive_exists"] = row["archive_id"] in archives
        return {"compactions": rows[:COMPACTIONS_PAGE], "has_older": len(rows) > COMPACTIONS_PAGE,
                "total": reader.compaction_count()}

    # -- conversations ----------------------------------------------------------------

    def conversation(self, conv: int, before: int | None) -> dict[str, Any]:
        """A conversation: its summary DAG's tops and a page of its messages, newest first."""
        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            found = reader.conversation(conv)
            if found is None:
                raise NotFoundError(f"agent {self.paths.name!r} has no conversation {conv}")
            messages = reader.messages(conv, before, MESSAGES_PAGE + 1)
            return {"conversation": found, "roots": reader.summary_roots(conv) if before is None else [],
                    "messages": messages[:MESSAGES_PAGE], "has_older": len(messages) > MESSAGES_PAGE}
        return self._answer(build)

    def summary(self, summary_id: str) -> dict[str, Any]:
        """One summary of the DAG with what it was built from: summaries, or the original messages."""
        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            found = reader.summary(summary_id)
            if found is None:
                raise NotFoundError(f"agent {self.paths.name!r} has no summary {summary_id!r}")
            if found["kind"] == "leaf":
                return {"summary": found, "messages": reader.summary_messages(summary_id, SUMMARY_CHILDREN)}
            return {"summary": found, "children": reader.summary_children(summary_id, SUMMARY_CHILDREN)}
        return self._answer(build)

    # -- recall -------------------------------------------------------------------------

    def recall(self, text: str, n_results: int, kind: str | None, explain: bool = False) -> dict[str, Any]:
        """The agent's recall of ``text``, ranked as the agent ranks it, through a
        :class:`~core.memory.MemoryReader` (nothing is indexed first, so what waits to be indexed is counted
        instead); ``explain``: each result says why it ranked, and ``left_out`` what was met but not
        returned."""
        check_recall(text, n_results, kind, default_min_score=self.config.cold.min_score)

        def build(reader: Reader, secrets: list[str]) -> dict[str, Any]:
            waiting = {"unindexed_archives": reader.unindexed_archives(),
                       "pending_cold_items": reader.pending_cold_items(),
                       "pending_vectors": reader.pending_vectors()}
            if "recall_docs" not in reader.tables:
                return {"results": [], "note": "nothing is indexed for recall yet: open the agent once",
                        **waiting}
            if "_migrations" in reader.tables and not reader.conn.execute(
                    "SELECT 1 FROM _migrations WHERE name = 'm010_recall_subjects'").fetchone():
                return {"results": [],
                        "note": "an earlier version wrote this memory: open the agent once (any agentos "
                                "command on it) to upgrade its recall index",
                        **waiting}
            memory = self._memory()
            found = memory.recall_memory(text, n_results, kind, spaces=[], explain=explain)
            note = {} if memory.cold_store() else {"note": "there is no cold store yet: results are matched "
                                                           "by words only"}
            results = found if isinstance(found, dict) else {"results": list(found)}
            return {**results, **note, **waiting}
        return self._answer(build)

    def _memory(self) -> MemoryReader:
        """The agent's memory opened to read (once; its cold store and model are kept until :meth:`close`)."""
        with self._store_guard:
            if self._reader is None:
                self._reader = MemoryReader(self.paths.name, self.paths.root.parent, self.config)
            return self._reader

    def close(self) -> None:
        with self._store_guard:
            reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()

    # -- sizes and change detection --------------------------------------------------------

    def sizes(self, reader: Reader) -> dict[str, Any]:
        """Bytes on disk of each tier (and of what sits beside them). With PostgreSQL, ``memory.db`` is the
        size of the agent's schema on the server (its checkpoints included), and ``database`` names it."""
        memory = self.paths.memory_dir
        if reader.dialect.name == "postgres":
            db, database = (
                reader.schema_bytes(),
                f"PostgreSQL schema {schema_name(self.paths.name, self.storage)}",
            )
        else:
            db, database = sum(_size(memory / f"memory.db{suffix}") for suffix in ("", "-wal",
                                                                                   "-shm")), "memory.db"
        archives = self.files.archives()
        return {
            "hot": {"NOW.md": _size(self.paths.now_file)},
            "warm": {"LOG.md": _size(self.paths.log_file), "archives": sum(a.size for a in archives),
                     "archive_files": len(archives)},
            "cold": {"memory.db": db, "database": database, "lancedb": _tree_size(self.paths.lancedb_dir)},
            "other": {"checkpoints.db": _size(self.paths.checkpoints_file),
                      "quarantine": _tree_size(self.paths.quarantine_dir)},
        }

    def fingerprint(self) -> tuple:
        """Changes whenever LOG.md, NOW.md or memory.db changes (a few ``stat`` calls); with PostgreSQL,
        whenever the server's statistics count a write to the agent's schema (one query)."""
        memory = self.paths.memory_dir
        stamps = tuple(_stamp(p) for p in (self.paths.log_file, self.paths.now_file, memory / "memory.db",
                                           memory / "memory.db-wal", self.paths.archive_dir))
        if self.storage.resolved()[0] != "postgres":
            return stamps
        with reading(self.paths, self.storage) as reader:
            return (*stamps, reader.schema_writes())

    def status(self) -> dict[str, Any]:
        """What a live page compares with what it shows: the newest seq, and NOW.md's version and status."""
        now = self.now()
        return {"newest_seq": self.files.last_seq(), "now_version": now.get("version"),
                "status": now.get("status")}


def _current_run(now: dict[str, Any]) -> str | None:
    """The run NOW.md says is under way: its RUN_START has no RUN_END yet because it is running."""
    return now.get("run_id") if now.get("status") == "active" else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _tree_size(folder: Path) -> int:
    total = 0
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                if item.is_dir(follow_symlinks=False):
                    total += _tree_size(Path(item.path))
                elif item.is_file(follow_symlinks=False):
                    total += item.stat(follow_symlinks=False).st_size
    except (FileNotFoundError, NotADirectoryError):
        pass
    return total


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return (0, 0, 0)
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)
