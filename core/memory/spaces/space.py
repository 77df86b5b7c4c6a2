"""One memory space: its members, its journal and its index (see :mod:`core.memory.spaces`)."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any, Iterable

from core.config import Config, load_home_config
from core.errors import BackendError, CorruptionError, NotFoundError, PermissionDeniedError, ValidationError
from core.durable import AgentLock, IN_USE, InUse
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import check_metadata, check_text
from core.memory.recall import search as recall_search
from core.memory.secrets.redaction import Redactor
from core.memory.spaces import members as members_file, purge as purging, residence, scrub as scrubbing
from core.memory.spaces.index import SpaceIndex
from core.memory.spaces.members import READ_WRITE, Members
from core.memory.spaces.paths import SpacePaths, list_spaces, validate_space_name
from core.memory.spaces.secrets import members_redactor, refuse_secrets
from core.paths import existing_agent

log = logging.getLogger(__name__)

_ID = re.compile(r"space:([a-z0-9][a-z0-9_-]{0,63}):([1-9][0-9]*)")
_embedders: dict[str, Any] = {}
_embedders_guard = threading.Lock()


def memory_id(space: str, seq: int) -> str:
    """The id of the memory published to ``space`` as entry ``seq`` of its journal."""
    return f"space:{space}:{seq}"


def parse_memory_id(value: object) -> tuple[str, int]:
    """``(space, seq)`` of a space memory's id, else ValidationError."""
    match = _ID.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValidationError(f"{value!r} is not the id of a space's memory (they look like "
                              "space:research:12)")
    return match.group(1), int(match.group(2))


def embedder_of(config: Config) -> Any:
    """The embedder ``cold.embedder`` names, made once a process (loading a model is slow)."""
    from core.llm import make_embedder

    with _embedders_guard:
        if config.cold.embedder not in _embedders:
            _embedders[config.cold.embedder] = make_embedder(config)
        return _embedders[config.cold.embedder]


class Space:
    """A shared memory: members publish to it and recall from it."""

    def __init__(self, name: str, home: Path | None = None, config: Config | None = None) -> None:
        """Open the existing space ``name`` (UnknownSpaceError if there is none)."""
        self.paths = SpacePaths.for_space(name, home).require()
        self.name = self.paths.name
        self.config = config or load_home_config(self.paths.home)
        # Held while open: agentos import --space --force refuses to replace the space meanwhile.
        self.in_use = InUse(self.paths.root / IN_USE, self.config.memory.lock_timeout_s,
                            f"space {self.name!r}")
        self.lock = AgentLock(self.paths.lock_file, self.config.memory.lock_timeout_s)
        self._index: SpaceIndex | None = None
        try:
            self.journal = LogFile(self.paths.journal, self.lock, self.paths.quarantine_dir,
                                   self.config.memory.max_entry_bytes)
            self.journal.repair()  # a torn tail left by a publisher that was killed
            if purging.pending(self):  # a purge that was killed: its text must not outlive it
                purging.purge(self)
            if scrubbing.pending(self):  # a member's secret whose scrub was killed
                scrubbing.finish(self)
        except BaseException:
            self.close()  # a failed open holds nothing
            raise

    @classmethod
    def create(cls, name: str, members: dict[str, str], home: Path | None = None) -> "Space":
        """Create the space ``name`` with ``members`` (agent to ``read-write`` or ``read-only``).

        Raises:
            ValidationError: a bad name, no member or a bad access, or the space exists already.
            UnknownAgentError: a member is not an agent of this home.
        """
        paths = SpacePaths.for_space(validate_space_name(name), home)
        if not isinstance(members, dict) or not members:
            raise ValidationError("a space needs at least one member: --member AGENT")
        chosen = Members(name)
        for agent, access in members.items():
            existing_agent(agent, paths.home)
            chosen = chosen.with_member(agent, access)
        paths.root.mkdir(parents=True, exist_ok=True)
        lock = AgentLock(paths.lock_file)
        with lock.hold():
            if paths.exists():
                raise ValidationError(f"the space {name!r} exists already: agentos space show {name}")
            LogFile(paths.journal, lock, paths.quarantine_dir).ensure_exists()
            members_file.write(paths, chosen)  # last: a space exists once its members do
        return cls(name, paths.home)

    # -- members ----------------------------------------------------------------------

    def members(self) -> Members:
        return members_file.read(self.paths)

    def add_member(self, agent: str, access: str = READ_WRITE) -> Members:
        """Add ``agent`` (or change its access); return the members. The agent's secrets, which the space may
        hold from before it joined, are scrubbed out of it (see :mod:`core.memory.spaces.scrub`)."""
        existing_agent(agent, self.paths.home)
        with self.lock.hold():
            changed = self.members().with_member(agent, access)
            members_file.write(self.paths, changed)
            joined = members_redactor(self.paths.home, [agent], config=self.config)
            if joined:
                scrubbing.scrub(self, joined, agent)
        return changed

    def remove_member(self, agent: str) -> Members:
        """Remove ``agent``: from now on it can neither read nor publish; return the members."""
        with self.lock.hold():
            changed = self.members().without(agent)
            members_file.write(self.paths, changed)
        return changed

    # -- writing ----------------------------------------------------------------------

    def publish(self, agent: str, content: Any, metadata: dict[str, Any] | None = None) -> str:
        """Append ``content`` to the journal as ``agent``; return its memory id.

        Raises:
            PermissionDeniedError: ``agent`` is not a read-write member.
            SecretContentError: the content or metadata holds a member's secret value; nothing is stored.
            ValidationError: empty, oversize or invalid content, metadata that is not a JSON object.
        """
        text = check_text(content, "content").strip()
        if not text:
            raise ValidationError("content must not be empty")
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        check_metadata(metadata)
        with self.lock.hold():  # a member removed or a secret saved before this point is seen
            members = self.members()
            members.require_writer(agent)
            refuse_secrets(self.name, text, metadata, members_redactor(self.paths.home, members.access,
                                                                        config=self.config))
            entry = self.journal.append("PUBLISH", text, {"author": agent, "metadata": metadata or {}})
        return memory_id(self.name, entry.seq)

    def forget(self, agent: str | None, ids: list[str]) -> list[str]:
        """Forget the memories ``ids`` of this space; ``agent`` None: as an administrator.

        An agent forgets only what it published (and must still be a member). The journal gets a
        FORGET entry naming the entries; their text stays in the journal as the record, and a rebuilt
        index honours the forget. Returns the ids forgotten.

        Raises:
            PermissionDeniedError: an id was published by another agent; nothing is forgotten.
            NotFoundError: no id names a live memory of this space.
        """
        seqs = []
        for value in ids:
            space, seq = parse_memory_id(value)
            if space != self.name:
                raise ValidationError(f"{value} is a memory of the space {space!r}, not of {self.name!r}")
            seqs.append(seq)
        with self.lock.hold():
            if agent is not None:
                self.members().require_reader(agent)
            index = self.index()
            index.sync()
            authors = index.authors(seqs)
            others = sorted(s for s, author in authors.items() if agent is not None and author != agent)
            if others:
                raise PermissionDeniedError(
                    f"{agent!r} may forget only what it published; "
                    f"{', '.join(memory_id(self.name, s) for s in others)} "
                    "was published by another agent: ask it, or an administrator (agentos forget --admin)"
                )
            if not authors:
                raise NotFoundError(f"no memory {', '.join(ids)} in the space {self.name!r}: agentos space "
                                    f"show {self.name} lists them")
            self.journal.append("FORGET", f"forgot {len(authors)} memories",
                                {"forget": sorted(authors), "by": agent or "admin"})
            index.sync()
        return [memory_id(self.name, s) for s in sorted(authors)]

    def purge_forgotten(self) -> "purging.PurgeReport":
        """Take the text of the forgotten memories out of the journal and the index (see
        :mod:`core.memory.spaces.purge`); a purge killed midway is finished by the next open."""
        return purging.purge(self)

    def scrub_secrets(self, redactor: Redactor, by: str | None = None) -> list[int]:
        """Take every value ``redactor`` hides (the secrets of ``by``, a member or former author) out of the
        journal and the index (see :mod:`core.memory.spaces.scrub`); return the seqs of the entries
        rewritten."""
        return scrubbing.scrub(self, redactor, by)

    # -- reading ----------------------------------------------------------------------

    def redactor(self, also: Iterable[str] = ()) -> Redactor:
        """What masks the space's answers: the secret values of every member (and ``also``)."""
        return members_redactor(self.paths.home, self.members().access, also, self.config)

    def index(self) -> SpaceIndex:
        """The space's index where it lives: ``index.db``, or its schema when the home is on PostgreSQL."""
        if self._index is None:
            self._index = residence.open_index(self)
        return self._index

    def move_index(self, target: str) -> int:
        """Rebuild the index on ``target`` (``sqlite``, ``postgres``) and remove it from the other side;
        return the journal entries indexed (see :mod:`core.memory.spaces.residence`)."""
        return residence.move_index(self, target)

    def candidates(self, agent: str, query: str, tuning: recall_search.Tuning, since: str | None = None,
                   until: str | None = None) -> list[recall_search.Candidate]:
        """The space's memories for ``query``, scored as an agent's recall scores its own."""
        self.members().require_reader(agent)
        index = self.index()
        index.sync()
        embedder = self._embedder()
        vectors = None
        if embedder is not None:
            index.embed_pending(embedder, self.config.cold.embedder)
            vectors = index.nearest(query, embedder, tuning.depth, since, until)
        words = index.words(query, tuning.depth, since, until)
        found = index.docs([s for s, _ in words] + [s for s, _ in vectors or ()])
        by_id = {doc.id: doc for doc in found.values()}

        def as_ids(hits: list[tuple[int, float]]) -> list[tuple[str, float]]:
            return [(memory_id(self.name, seq), value) for seq, value in hits]

        return recall_search.rank(query, by_id, as_ids(vectors) if vectors else None, as_ids(words), tuning)

    def _embedder(self) -> Any:
        try:
            return embedder_of(self.config)
        except BackendError as exc:
            log.warning("space %s searched by words only: no embedder (%s)", self.name, exc)
            return None

    def latest(self, agent: str | None, n: int = 10) -> list[dict[str, Any]]:
        """The newest ``n`` memories, newest first (``agent`` None: as an administrator), every member's
        secrets masked."""
        if agent is not None:
            self.members().require_reader(agent)
        index = self.index()
        index.sync()
        return self.redactor()(index.latest(n))

    def show(self) -> dict[str, Any]:
        """Members, size and the latest entries (for ``agentos space show``), every member's secrets
        masked."""
        index = self.index()
        index.sync()
        size = self.paths.journal.stat().st_size if self.paths.journal.exists() else 0
        return {"space": self.name, "path": str(self.paths.root), "members": dict(self.members().access),
                "memories": index.count(), "journal_bytes": size, "last_seq": self.journal.last_seq(),
                "latest": self.redactor()(index.latest(5))}

    def rebuild_index(self) -> int:
        """Rebuild ``index.db`` from the journal; return the journal entries indexed."""
        return self.index().rebuild()

    def close(self) -> None:
        """Close the index and the lock's file, and let go of the space (an import may replace it). Safe
        twice."""
        if self._index is not None:
            self._index.close()
            self._index = None
        self.lock.close()
        self.in_use.release()

    def __enter__(self) -> "Space":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def spaces_of(agent: str, home: Path | None = None) -> list[str]:
    """The spaces ``agent`` is a member of."""
    found = []
    for name in list_spaces(home):
        try:
            members = members_file.read(SpacePaths.for_space(name, home))
        except CorruptionError as exc:  # its members are unknown: nobody reads it until the file is fixed
            log.warning("memory space %s is left out of recall: %s", name, exc)
            continue
        if members.of(agent) is not None:
            found.append(name)
    return found

