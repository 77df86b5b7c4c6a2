"""MemoryReader: one agent's memory opened to read. It writes, locks and repairs nothing.

    from core.memory import MemoryReader
    with MemoryReader("finn") as memory:
        memory.read_now()["status"], memory.read_log(5), memory.list_facts()
        hits = memory.recall_memory("what does the user drink?")

Opening it runs no recovery, secret scrub, compaction or expiry, and creates no file (with SQLite, but for the
empty ``-wal``/``-shm`` companions that any reader of memory.db makes). Each call reads inside one read
transaction of memory.db (a ``mode=ro`` SQLite connection, or a ``READ ONLY`` transaction of the agent's
PostgreSQL schema), opened for the call and closed after it; NOW.md is replaced atomically and every LOG.md
line carries its CRC, so a reader beside a live writer sees a consistent state and a line being written is
not read yet. Recall searches what is indexed, with the same ranking as the writer's; the cold store is opened
read-only and the embedding model loaded once, kept until :meth:`MemoryReader.close`.

What a writer would do first when it opens the agent, :meth:`MemoryReader.behind` lists: a torn LOG.md tail,
entries not yet indexed, memories without their vector, an unfinished compaction or scrub, a damaged or older
memory.db, a NOW.md behind LOG.md. The reader reads what is safe around them (a torn line is skipped, what is
not indexed is not found, expired memories are left out as always); where it cannot (NOW.md unreadable,
memory.db missing, damaged or of an older version) it raises :class:`~core.errors.WriterNeededError`, which
names the command that opens the agent to write. :func:`open_for_reading` gives a reader when the agent needs
nothing of a writer, and a writer (which does that work as it opens) when it does: what the ``agentos now``,
``log``, ``facts`` and ``recall`` commands and the MCP server's reads use.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator

from core.config import Config, load_config
from core.durable import foreground
from core.errors import AgentOSError, CorruptionError, StorageError, ValidationError, WriterNeededError
from core.memory.files import LogEntry, NowState, now_file
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import is_compaction_summary
from core.memory.recall import TABLE, ColdStore, DocIndex, Recalled, Tuning, open_store
from core.memory.recall import cold as cold_recall, log_index, query as recall_query
from core.memory.reads import Reads
from core.memory.recall.views.results import check_mode
from core.memory.spaces import recall as space_recall
from core.memory.storage import Reader, reading
from core.memory.secrets.redaction import Redactor
from core.memory.storage import Fact
from core.memory.storage.facts import FactStore
from core.memory.storage.migrations import all_migrations
from core.memory.storage.sqlite import damage_marker
from core.memory.upkeep.recovery import database_damage
from core.paths import AgentPaths

if TYPE_CHECKING:
    from core.memory.manager import MemoryManager

log = logging.getLogger(__name__)


class MemoryReader(Reads):
    """The memory of one agent, read without writing: NOW.md, LOG.md, facts and recall (see the module;
    ``read_log``, ``log_since``, ``scan_log`` and ``get_fact``: :class:`~core.memory.reads.Reads`)."""

    def __init__(self, agent_name: str, home: Path | None = None, config: Config | None = None) -> None:
        """Open the memory of ``agent_name`` to read (nothing is read or created yet).

        Raises:
            InvalidAgentNameError: the name is not ``[a-z0-9][a-z0-9_-]{0,63}``.
            ConfigError: a config file is wrong.
        """
        self.paths = AgentPaths.for_agent(agent_name, home)
        self.agent_name = agent_name
        self.config = config or load_config(self.paths)
        self.log = LogFile(self.paths.log_file, _NoLock(), self.paths.quarantine_dir,  # type: ignore[arg-type]
                           max_entry_bytes=self.config.memory.max_entry_bytes)
        """LOG.md, read from its end; a line without its newline or CRC is skipped, never repaired."""
        self.facts = ReadFacts(self._reading)
        """The facts, read as ``MemoryManager.facts`` reads them (each call in a read transaction of its
        own)."""
        self.tuning = Tuning()
        """The ranking's parameters: the writer's own (see :mod:`core.memory.recall.search`)."""
        self._store: ColdStore | None = None
        self._guard = threading.Lock()
        self._warming: threading.Thread | None = None
        self._closed = False

    # -- what a writer would do first ------------------------------------------------------

    def behind(self, recall: bool = True) -> list[str]:
        """What a writer would do first when it opens the agent, one sentence each ([] when nothing: the
        reader then sees all that a writer would show); without ``recall``, what only a recall would miss
        (sources not indexed for recall, memories without their vector) is left out."""
        if not self.paths.memory_dir.is_dir() or not self.paths.log_file.is_file():
            return ["the agent's memory is not created yet"]
        found = [] if self.log.tail_is_sound() else ["LOG.md has a torn or unconverted tail to repair"]
        damage = self._database_damage()
        if damage:
            return [*found, damage]
        with self._reading() as reader:
            found += self._behind(reader, recall)
        return found

    def _behind(self, reader: Reader, recall: bool) -> list[str]:
        conn, found = reader.conn, []
        last = self.log.last_seq()
        indexed = log_index.last_indexed_seq(reader)
        if indexed < last:
            found.append(f"{last - indexed} LOG.md entries are not in memory.db's index yet")
        waiting = conn.execute("SELECT (SELECT count(*) FROM cold_pending) + (SELECT count(*) FROM "
                               "compaction_history WHERE indexed_at IS NULL)").fetchone()[0]
        row = conn.execute("SELECT value FROM recall_state WHERE key = 'log_seq'").fetchone()
        waiting += max(0, last - (int(row[0]) if row else 0))
        if waiting and recall:
            found.append(f"{waiting} sources (LOG.md entries, archives, items) are not indexed for recall "
                         "yet")
        pending = DocIndex(reader).pending_count() if recall else 0
        if pending:
            found.append(f"{pending} memories have no vector yet")
        first = self.log.first_entry()
        if first is not None and is_compaction_summary(first) and not conn.execute(
                "SELECT 1 FROM compaction_history WHERE last_seq = ?",
                (first.metadata["covers"][1],)).fetchone():
            found.append("a LOG.md compaction was interrupted after its swap")
        if conn.execute("SELECT (SELECT count(*) FROM secret_scrubs) + (SELECT count(*) FROM forget_purges)"
                        ).fetchone()[0]:
            found.append("a secret's scrub (or a purge of forgotten values) is not finished")
        try:
            state = now_file.read(self.paths.now_file, self.agent_name)
        except CorruptionError as exc:
            return [*found, f"NOW.md is unreadable ({exc})"]
        if not self.paths.now_file.exists():
            found.append("NOW.md is missing")
        elif state.log_seq != last and log_index.newer_now_update(reader, state.log_seq) is not None:
            found.append("NOW.md is behind its last NOW_UPDATE entry in LOG.md")
        return found

    def _database_damage(self) -> str | None:
        """Why memory.db cannot be read as it is (SQLite only: a server's schema is checked when read)."""
        if self.config.storage.resolved()[0] != "sqlite":
            return None
        path = self.paths.db_file
        damage = database_damage(path)
        if damage is None and damage_marker(path).exists():
            damage = "found damaged while in use"
        return None if damage is None else f"memory.db is {damage}"

    @contextmanager
    def _reading(self) -> Iterator[Reader]:
        """One read transaction of memory.db, refused when only a writer could make it readable."""
        if self._closed:
            raise ValidationError(f"the reader of {self.agent_name} is closed: open a new MemoryReader")
        damage = self._database_damage()
        if damage:
            raise self._writer_needed(damage)
        with reading(self.paths, self.config.storage) as reader:
            if reader.conn is None or "_migrations" not in reader.tables:
                raise self._writer_needed("memory.db does not exist yet")
            applied = {row[0] for row in reader.conn.execute("SELECT name FROM _migrations")}
            missing = [name for name in _migration_names() if name not in applied]
            if missing:
                raise self._writer_needed("memory.db was written by an earlier version (it lacks "
                                          f"{missing[0]})")
            yield reader

    def _writer_needed(self, why: str) -> WriterNeededError:
        return WriterNeededError(f"agent {self.agent_name}: {why}, which only a writer repairs: run `agentos "
                                 f"status --agent {self.agent_name}` (it opens the agent to write), then "
                                 "read again")

    # -- hot and warm tiers -------------------------------------------------------------------

    def now_state(self) -> NowState:
        """NOW.md as a :class:`NowState` (the initial state if the agent has none yet).

        Raises:
            WriterNeededError: NOW.md is unreadable (a writer rewrites it from LOG.md).
        """
        return self._now()[0]

    def read_now(self) -> dict[str, Any]:
        """NOW.md parsed: its front matter fields, plan, blockers, resume hint and ``body`` text."""
        return now_file.document(*self._now())

    def _now(self) -> tuple[NowState, str]:
        try:  # one read: the front matter and the body always come from the same version
            return now_file.load(self.paths.now_file, self.agent_name)
        except CorruptionError as exc:
            raise self._writer_needed(f"NOW.md is unreadable ({exc})") from exc

    def log_tail(self, last_n: int) -> list[LogEntry]:
        """The last ``last_n`` readable LOG.md entries, oldest first."""
        return self.log.tail(last_n)

    # -- facts --------------------------------------------------------------------------------

    def list_facts(self, category: str | None = None) -> list[dict[str, Any]]:
        """All facts (or one category's), secret values redacted, as ``MemoryManager.list_facts`` lists
        them."""
        with self._reading() as reader:
            facts = FactStore(reader)
            return facts.redactor()(facts.listed(category))

    # -- recall -------------------------------------------------------------------------------

    def recall_memory(
        self, query: str | None = None, n_results: int = 5, kind: str | list[str] | None = None,
        since: Any = None, until: Any = None, *, min_score: float | None = None,
        recency_days: float | None = None, spaces: list[str] | None = None, explain: bool = False,
        now: Any = None,
    ) -> Recalled | dict[str, Any]:
        """Search what is indexed of every tier, and the memory spaces the agent belongs to, as
        ``MemoryManager.recall_memory`` does (same arguments and results), without indexing anything first:
        what waits to be indexed is not found (:meth:`behind` says so), memories without their vector yet are
        ranked as ``cold.pending_vectors`` says (``warning`` tells)."""
        home = self.paths.root.parent
        chosen = space_recall.spaces_to_search(self.agent_name, home, spaces)
        mode = check_mode(self.config.cold.pending_vectors)
        with self._reading() as reader:
            docs = DocIndex(reader)
            hidden = FactStore(reader).hidden_values()

            def search(text: str, filters: Any, trace: Any) -> tuple[list[Any], Recalled]:
                seen = Recalled((), docs.pending_count(), mode=mode)
                store = None if seen.partial and mode == "words" else self.cold_store()
                return recall_query.candidates(text, filters, docs, store, self.tuning, trace), seen

            own = cold_recall.answer(query, n_results, kind, since, until, hidden, docs, self.tuning,
                                     self.config.cold.min_score, indexed=lambda: None, search=search,
                                     min_score=min_score, recency_days=recency_days, explain=explain, now=now)
            asker = space_recall.Asker(self.agent_name, home, self.tuning, self.config.cold.min_score, hidden,
                                       docs.terms)
            found = space_recall.merged(asker, own, chosen, query, n_results, kind, since, until, min_score,
                                        recency_days, now)
        return own.like(found) if isinstance(own, Recalled) else found

    def cold_store(self) -> ColdStore | None:
        """The agent's cold store opened read-only (once), or None while it has none: recall is then by
        words."""
        with self._guard:
            if self._store is None and (self.paths.lancedb_dir / f"{TABLE}.lance").is_dir():
                self._store = open_store(self.paths, self.config, read_only=True)
            return self._store

    def warm_up(self) -> None:
        """Open the cold store and load its embedding model in a thread now (once), so that a recall soon
        after does not wait for both. Not a daemon: no native inference may run while the interpreter
        finalizes."""
        with self._guard:
            if self._warming is None and not self._closed:
                self._warming = foreground.background_thread(self._warm_up, daemon=False,
                                                            name=f"agentos-read-warm-up-{self.agent_name}")
                self._warming.start()

    def _warm_up(self) -> None:
        try:
            store = self.cold_store()
            if store is not None:
                store.embedder.embed(["warm up"])  # the model first: ONNX Runtime loads it without the GIL
                store.may_have_rows()
        # the recall that follows meets the same failure and reports it
        except (AgentOSError, OSError) as exc:
            log.info("warming up the cold store of %s failed: %s", self.agent_name, exc)

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for a warm-up in progress and release the cold store: nothing is held afterwards. Safe
        twice."""
        with self._guard:
            self._closed = True
            warming = self._warming
        if warming is not None:
            warming.join()
        with self._guard:
            store, self._store = self._store, None
        if store is not None:
            store.close()

    def __enter__(self) -> "MemoryReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryReader({self.agent_name!r}, root={str(self.paths.root)!r})"


@cache
def _migration_names() -> tuple[str, ...]:
    """The migrations this version of AgentOS applies (read once: a reader checks them at every call)."""
    return tuple(m.name for m in all_migrations())


class ReadFacts:
    """The reads of :class:`~core.memory.storage.facts.FactStore`, each in a read transaction of its own."""

    def __init__(self, reading: Callable[[], ContextManager[Reader]]) -> None:
        self._reading = reading

    def get(self, key: object) -> Fact | None:
        """The fact stored under ``key``, or None."""
        with self._reading() as reader:
            return FactStore(reader).get(key)

    def history(self, key: object, as_dicts: bool = False) -> list[Any]:
        """The values ``key`` has held, newest first (see ``FactStore.history``)."""
        with self._reading() as reader:
            return FactStore(reader).history(key, as_dicts)

    def list(self, category: object = None) -> list[Fact]:
        """Every fact (or one category's), values as stored."""
        with self._reading() as reader:
            return FactStore(reader).list(category)

    def secret_values(self) -> list[str]:
        """The values of the secret facts."""
        with self._reading() as reader:
            return FactStore(reader).secret_values()

    def hidden_values(self) -> list[str]:
        """The secrets' and the forgotten facts' values: what nothing derived shows."""
        with self._reading() as reader:
            return FactStore(reader).hidden_values()

    def redactor(self, forgotten: bool = True) -> Redactor:
        """What hides the secrets' values (and, with ``forgotten``, the forgotten facts' values) now."""
        with self._reading() as reader:
            return FactStore(reader).redactor(forgotten)


class _NoLock:
    """The lock of a LOG.md that is only read: holding it is a bug (a reader never writes)."""

    def hold(self, timeout: float | None = None) -> Any:
        raise StorageError("a MemoryReader never writes LOG.md: open a MemoryManager to write")


def open_for_reading(agent_name: str, home: Path | None = None, *,
                     recall: bool = True) -> MemoryReader | MemoryManager:
    """What reads ``agent_name`` as a writer would show it: a :class:`MemoryReader`, unless
    :meth:`MemoryReader.behind` names work that a writer does first (a repair, entries to index; with
    ``recall``, also sources to index for recall and vectors to compute), and then a ``MemoryManager``, which
    does it as it opens (and catches up before it recalls), as every command did before readers.

    Raises:
        UnknownAgentError: no such agent (nothing is created).
    """
    from core.memory.manager import MemoryManager
    from core.paths import existing_agent

    existing_agent(agent_name, home)
    reader = MemoryReader(agent_name, home)
    try:
        work = reader.behind(recall=recall)
    except BaseException:
        reader.close()
        raise
    if not work:
        return reader
    reader.close()
    log.info("opening %s to write: %s", agent_name, "; ".join(work))
    return MemoryManager(agent_name, home, reader.config)
