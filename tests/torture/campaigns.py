"""The torture campaigns: each attacks one part of the memory and checks every promise after every trial.

A campaign is ``campaign(work, trials, seed) -> Result``: ``work`` is an empty folder it owns,
``trials`` how many kills (or faults) it makes. Cold-store indexing embeds with the loopback
Ollama server of the tests (``$OLLAMA_HOST`` must point at one serving ``fake-embed``), so a
trial costs milliseconds, not the seconds of loading a model.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path
from typing import Callable

import yaml

from core.memory.recall.docs import Filters
from core.memory_manager import MemoryManager
from tests.torture.checks import check_agent, memory_dir, only_tail_damaged, open_agent
from tests.torture.harness import Clock, Result, Zygote
from tests.torture.workloads import read_acks

HANG_S = 300.0
"""How long a worker may take to reach its fault point before the campaign calls it a hang."""
COLD = {"cold": {"embedder": "ollama:fake-embed", "optimize_every": 20}, "llm": {"backend": "offline"}}


def prepare(work: Path, memory: dict | None = None) -> Path:
    """An agents home in ``work`` whose config embeds with the loopback server and summarises offline."""
    home = work / "agents"
    home.mkdir(parents=True, exist_ok=True)
    config = {**COLD, "memory": memory or {}}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return home


def kill_campaign(result: Result, work: Path, trials: int, seed: int, workload: str,
                  check: Callable[[Path, list[list], Result], None], memory: dict | None = None,
                  most_steps: int = 60) -> Result:
    """SIGKILL ``workload`` at a durable step drawn at random (its 1st to ``most_steps``-th fault point, any
    thread's) ``trials`` times, checking the agent after each kill."""
    clock, rng = Clock(), random.Random(seed)
    home = prepare(work, memory)
    with MemoryManager("finn", home=home) as manager:
        manager.cold.store().table  # created once here, not in the first worker's last moments
    acks: list[list] = []
    with Zygote() as zygote:
        for trial in range(trials):
            ack_file = work / f"acks-{trial}.jsonl"
            point = f"*@{rng.randint(1, most_steps)}"
            code = run_to_fault_point(zygote, point, workload, home, ack_file, seed=seed * 1000 + trial)
            records = read_acks(ack_file)
            if code != -9:
                result.fail(f"trial {trial}: the worker did not die at fault point {point} ({code}): "
                            f"{ack_file.with_suffix('.err').read_text()[-500:]}")
            acks += records
            result.trials += 1
            result.kills += 1
            result.acknowledged += sum(1 for r in records if r[0] not in ("open", "done", "absent"))
            only_tail_damaged(home, result)
            check(home, acks, result)
    result.seconds = clock()
    return result


def run_to_fault_point(zygote: Zygote, point: str, workload: str, home: Path, ack_file: Path, **args) -> int:
    """Run ``workload`` in a worker armed for the fault point ``point``; return its exit code (-9: killed
    there).

    A worker that has not reached it after ``HANG_S`` (a hang guard, not a timing) is killed from outside,
    and its code is then reported as 0.
    """
    code, hung = wait_or_stop_a_hang(zygote, zygote.spawn(workload, home, ack_file,
                                                          env={"AGENTOS_FAULT_POINT": point}, **args))
    return 0 if hung else code


def wait_or_stop_a_hang(zygote: Zygote, pid: int) -> tuple[int, bool]:
    """Wait for a worker; SIGKILL it if it runs ``HANG_S`` (a hang guard, not a timing). Return its exit code
    and whether it was stopped as hung."""
    hung = threading.Event()

    def stop_a_hang() -> None:
        hung.set()
        os.kill(pid, signal.SIGKILL)

    guard = threading.Timer(HANG_S, stop_a_hang)
    guard.start()
    code = zygote.wait(pid)
    guard.cancel()
    return code, hung.is_set()


# -- SIGKILL campaigns ------------------------------------------------------------------------


def appends_and_now(work: Path, trials: int, seed: int = 1) -> Result:
    result = Result("appends + NOW", "SIGKILL while appending to LOG.md and replacing NOW.md")
    return kill_campaign(result, work, trials, seed, "appends_now", check_agent, {"auto_compact": False})


def facts(work: Path, trials: int, seed: int = 2) -> Result:
    result = Result("facts",
                    "SIGKILL while saving and deleting facts (memory.db + FACT entry in one transaction)")
    return kill_campaign(result, work, trials, seed, "facts", check_agent, {"auto_compact": False})


def log_compaction(work: Path, trials: int, seed: int = 3) -> Result:
    result = Result("LOG.md compaction",
                    "SIGKILL while appending past a 20-entry threshold: automatic compaction "
                    "and its indexing in the background, explicit compactions in the foreground")

    def check(home: Path, acks: list[list], result: Result) -> None:
        manager = open_agent(home, result)
        if manager is None:
            return
        with manager:
            check_agent(home, acks, result, manager)
            _check_archives(manager, result)

    return kill_campaign(result, work, trials, seed, "compaction", check,
                         {"compact_log_entries": 20, "compact_log_bytes": 8192}, most_steps=120)


def _check_archives(manager: MemoryManager, result: Result) -> None:
    """Every archive is recorded with its sha256 and, once indexing is done, indexed without duplicate
    rows."""
    import hashlib

    # the open finishes an interrupted compaction in the background
    if not manager.compaction.wait(timeout=60):
        result.fail("indexing did not finish within 60 s")
    rows = manager.db.conn.execute("SELECT archive_id, archive_sha256 FROM compaction_history").fetchall()
    recorded = {r["archive_id"]: r["archive_sha256"] for r in rows}
    first = manager.log.first_entry()
    for path in manager.paths.archive_dir.glob("LOG-*.md"):
        if first is not None and int(path.stem.split("-")[2]) >= first.seq:
            continue  # written by a compaction killed before its swap: the next one reuses it
        if recorded.get(path.stem) != hashlib.sha256(path.read_bytes()).hexdigest():
            result.fail(f"archive {path.name} is not recorded with its sha256")
    ids = manager.cold.store().ids() if manager.paths.lancedb_dir.exists() else []
    if len(ids) != len(set(ids)):
        result.fail("the cold store holds duplicate rows")


def notes(work: Path, trials: int, seed: int = 4) -> Result:
    result = Result("notes", "SIGKILL while storing notes (memory.db, then LanceDB)")

    def check(home: Path, acks: list[list], result: Result) -> None:
        manager = open_agent(home, result)
        if manager is None:
            return
        with manager:
            stored = {r[0] for r in manager.db.conn.execute("SELECT 'note:' || id FROM cold_notes")}
            for record in acks:
                if record[0] == "note" and record[1] not in stored:
                    result.fail(f"acknowledged note {record[1]} is lost")
            manager.cold.catch_up()
            ids = manager.cold.store().ids()
            if len(ids) != len(set(ids)) or not stored <= set(ids):
                result.fail("the cold store has duplicate rows or lacks a stored note's vector after a "
                            "catch-up")

    # A worker imports LanceDB (about a second) before its first store: most kills land after that.
    return kill_campaign(result, work, trials, seed, "notes", check, {"auto_compact": False}, most_steps=40)


def lcm(work: Path, trials: int, seed: int = 5) -> Result:
    result = Result("LCM append + compact",
                    "SIGKILL while appending turns to the LCM provider and compacting them")

    def check(home: Path, acks: list[list], result: Result) -> None:
        from core.memory.provider import Session
        from core.plugins.memory import open_provider
        from core.plugins.memory.lcm import DeterministicSummarizer

        provider = open_provider("lcm", memory_dir(home) / "memory.db", summarizer=DeterministicSummarizer())
        try:
            session = Session("finn:cli:main", agent_id="finn")
            history = [m.content for m in provider.load_history(session.id)]
            markers = [r[1] for r in acks if r[0] == "turn"]
            stored = [c.split(":")[0].split(" ", 1)[1] for c in history if c.startswith("question ")]
            if len(stored) != len(set(stored)):
                result.fail("a turn is stored twice")
            if not set(markers) <= set(stored):
                result.fail(f"acknowledged turns lost: {sorted(set(markers) - set(stored))[:5]}")
            reachable = [m.content for m in _expand_context(provider, session)]
            if reachable != history:
                result.fail("after compaction the context does not reach every message exactly once, in "
                            "order")
        finally:
            provider.close()

    return kill_campaign(result, work, trials, seed, "lcm", check, {"auto_compact": False}, most_steps=120)


def _expand_context(provider, session) -> list:
    """The original messages behind the whole context, summaries expanded recursively."""
    def expand(summary_id: str) -> list:
        found = provider.expand(summary_id, 10**9)
        if found.messages:
            return [m.message for m in found.messages]
        return [m for child in found.children for m in expand(child.id)]

    context = provider.assemble(session, 10**9, 10**9)
    return [m for message in context
            for m in (expand(message.summary_id) if message.summary_id else [message])]


def background_indexing(work: Path, trials: int, seed: int = 6) -> Result:
    result = Result("background indexing",
                    "SIGKILL while archives are indexed and embedded into LanceDB (every memory queued again "
                    "before each trial; acknowledged: the rows in the store after the last sync)")
    clock, rng = Clock(), random.Random(seed)
    home = prepare(work, {"auto_compact": False})
    with MemoryManager("finn", home=home) as manager:
        for archive in range(5):
            for i in range(40):
                manager.append_log("THOUGHT",
                                   f"archive {archive} entry {i}: " + "the ledger and the list " * 8)
            manager.compactor.run(manager.compaction.summarizer(), f"summary of archive {archive}",
                                  force=True,
                                       index=False)
    with Zygote() as zygote:
        for trial in range(trials):
            with MemoryManager("finn", home=home) as manager:
                manager.compaction.wait()  # the open finished what the last kill left
                ids = manager.cold.store().ids()
                if len(ids) != len(set(ids)):
                    result.fail(f"trial {trial}: duplicate rows after a kill during indexing")
                manager.cold.indexer.mark_all_pending()
            # At a write of the catch-up's to LanceDB or memory.db (the main thread's: the opening's
            # own background work comes and goes with timing).
            point = f"main:{rng.choice(('cold.write', 'cold.written', 'db.commit'))}@{rng.randint(1, 3)}"
            if run_to_fault_point(zygote, point, "indexing", home, work / f"acks-{trial}.jsonl",
                                  seed=trial) != -9:
                result.fail(f"trial {trial}: the indexing worker did not die at fault point {point}")
            result.trials += 1
            result.kills += 1
    with MemoryManager("finn", home=home) as manager:
        manager.compaction.wait()
        manager.cold.catch_up()
        if manager.cold.indexer.pending():
            result.fail("archives still pending after the last sync")
        ids = manager.cold.store().ids()
        if sorted(ids) != sorted(manager.cold.docs.ids()):
            result.fail("after the last sync the vectors are not exactly the memories (one each)")
        for row in manager.db.conn.execute("SELECT archive_id FROM compaction_history"):
            if f"summary:{row[0]}" not in ids or not manager.cold.docs.count(Filters(kinds=("log_archive",))):
                result.fail(f"archive {row[0]} is not indexed")
        result.acknowledged = manager.cold.store().count()
    result.seconds = clock()
    return result


# -- load, faults, damage ---------------------------------------------------------------------


def concurrent_writers(work: Path, trials: int, seed: int = 7, writers: int = 4, count: int = 150) -> Result:
    result = Result("concurrent writers", f"{writers} processes x {count} appends at once with automatic "
                    "compaction running (a round a trial)")
    clock = Clock()
    home = prepare(work, {"compact_log_entries": 50})
    MemoryManager("finn", home=home).close()
    acks: list[list] = []
    with Zygote() as zygote:
        for trial in range(trials):
            files = [work / f"acks-{trial}-{w}.jsonl" for w in range(writers)]
            pids = [zygote.spawn("writer", home, f, seed=trial * 100 + w, count=count) for w,
                    f in enumerate(files)]
            codes = [zygote.wait(pid) for pid in pids]
            if codes != [0] * writers:
                result.fail(f"round {trial}: writers exited {codes}")
            for f in files:
                acks += read_acks(f)
            result.trials += 1
            result.acknowledged = sum(1 for r in acks if r[0] == "append")
            manager = open_agent(home, result)
            if manager is not None:
                with manager:
                    check_agent(home, acks, result, manager)
                    _check_archives(manager, result)
    result.seconds = clock()
    return result


def fork(work: Path, trials: int, seed: int = 8, children: int = 8, count: int = 20) -> Result:
    result = Result("fork", f"one MemoryManager, {children} forked children writing through it at once")
    clock = Clock()
    home = prepare(work, {"auto_compact": False})
    MemoryManager("finn", home=home).close()
    acks: list[list] = []
    with Zygote() as zygote:
        for trial in range(trials):
            ack_file = work / f"acks-{trial}.jsonl"
            pid = zygote.spawn("fork_writers", home, ack_file, seed=trial, children=children, count=count)
            code, hung = wait_or_stop_a_hang(zygote, pid)
            records = read_acks(ack_file)
            if hung:
                result.fail(f"trial {trial}: {children} children still ran after {HANG_S:g}s (a lock hung)")
            elif (code != 0 or any(r[0] == "child" and r[1] != 0 for r in records)
                  or any(r[0] == "error" for r in records)):
                result.fail(
                    f"trial {trial}: a forked child failed: {[r for r in records if r[0] == 'error'][:2]}"
                )
            acks += records
            result.trials += 1
            result.acknowledged += sum(1 for r in records if r[0] in ("append", "fact"))
            check_agent(home, acks, result)
    result.seconds = clock()
    return result


CAMPAIGNS: dict[str, Callable[..., Result]] = {
    "appends": appends_and_now, "facts": facts, "compaction": log_compaction, "notes": notes, "lcm": lcm,
    "indexing": background_indexing, "concurrent": concurrent_writers, "fork": fork,
}
