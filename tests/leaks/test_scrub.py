"""The scrub of a secret saved late: archives rewritten with their sha256 chain kept, a scrub that waits
for a running compaction, and a scrub killed at every durable step finished by the next open."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.memory.files.log_file import scan_bytes
from core.memory.provider import Message, Session
from core.memory.upkeep.rebuild import rebuild_all
from core.memory.secrets.redaction import REDACTED
from core.memory_manager import MemoryManager
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider
from tests.cold.helpers import seq_counts
from tests.leaks.conftest import database_of
from tests.leaks.leak_check import leaks

VALUE = "cred-5566-7788"
CHILD = Path(__file__).with_name("scrub_child.py")
ROOT = Path(__file__).resolve().parents[2]


def fill(manager: MemoryManager) -> None:
    """Put the value everywhere an agent keeps text, before it is a secret: three archives, LOG.md, NOW.md,
    a note, a conversation, a quarantined tail and a handoff summary."""
    for round_ in range(3):
        manager.append_log("USER_FEEDBACK", f"round {round_}: my card number is {VALUE}", {"said": VALUE})
        manager.append_log("THOUGHT", f"round {round_}: nothing secret here")
        manager.update_now(f"Round {round_}", [f"pay with {VALUE}"], objective=f"pay the bill with {VALUE}")
        if round_ < 2:
            assert manager.compact_log().done
    manager.store_memory(f"the card {VALUE} expires soon")
    provider = LCMProvider(database_of(manager), summarizer=DeterministicSummarizer())
    provider.append(Session("finn:main", "finn", "local", "cli"),
                    [Message("user", f"card {VALUE}"), Message("assistant", f"noted {VALUE}")])
    provider.close()
    sessions = manager.paths.memory_dir / "sessions"
    sessions.mkdir(exist_ok=True)
    (sessions / "finn_main.handoff.json").write_text(json.dumps({"summary": f"card {VALUE}", "covered": 2}))
    with open(manager.paths.log_file, "ab") as log:  # a torn tail: the next open moves it to quarantine
        log.write(
            f'- {manager.log.last_seq() + 1} 2026-01-01T00:00:00.000Z THOUGHT {{"text":"torn {VALUE}'.encode()
        )


def assert_consistent(root: Path) -> None:
    """No value anywhere; every seq once; archives match compaction_history and the SUMMARY that points at
    them."""
    memory = root / "memory"
    assert leaks(root, VALUE) == []
    assert not list((memory / "archive").glob(".*.scrub")), "a side file of the scrub was left"
    with MemoryManager("finn") as manager:
        assert manager.get_fact("card_number") == VALUE
        assert manager.scrubber.pending() == []
        last = manager.log.last_seq()
        history = dict(manager.db.conn.execute("SELECT archive_id, archive_sha256 FROM compaction_history"))
    counts = seq_counts(memory)
    torn = {int(m) for f in (memory / "quarantine").glob("*.md")
            for m in re.findall(r"(?m)^- (\d+) ", f.read_text())}
    assert max(counts.values()) == 1 and set(range(1, last + 1)) - set(counts) <= torn
    archives = {p.stem: p for p in (memory / "archive").glob("LOG-*.md")}
    assert set(history) == set(archives)
    for archive_id, path in archives.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == history[archive_id], archive_id
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), (
            "an archive became writable"
        )
    for path in [memory / "LOG.md", *archives.values()]:
        for entry in scan_bytes(path.read_bytes(), path).entries:
            if entry.type == "SUMMARY":
                target = Path(entry.metadata["archive"]).stem
                assert entry.metadata["sha256"] == history[target], f"{path.name} points at a stale {target}"


def test_archives_are_rewritten_with_their_sha256_chain_and_the_rewrite_is_recorded(finn):
    """Saving a secret late rewrites every archive that held it (and the ones after, whose SUMMARY names a new
    sha256), keeps them verifiable and read-only, records a SYSTEM entry with each sha256 before and after,
    and a full index rebuild from the files accepts them."""
    fill(finn)
    finn.close()
    with MemoryManager("finn") as manager:
        before = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in manager.paths.archive_dir.glob("LOG-*.md")}
        assert len(before) == 2
        manager.save_fact("card_number", VALUE, "secret")
        record = manager.read_log(1)[0]
        assert record["type"] == "SYSTEM" and record["metadata"]["kind"] == "secret_scrub"
        assert {a: v["sha256_before"] for a, v in record["metadata"]["archives"].items()} == before
        assert record["metadata"]["keys"] == ["card_number"] and VALUE not in json.dumps(record)
        files = record["metadata"]["files"]
        assert any(f.startswith("memory/quarantine/")
                   for f in files) and "memory/sessions/finn_main.handoff.json" in files
        assert all(REDACTED in (manager.paths.root / f).read_text() for f in files)
        result = rebuild_all(manager.tiers)
        assert result.compactions == 2 and result.memories
    assert_consistent(finn.paths.root)


def test_a_scrub_leaves_log_and_archives_to_a_running_compaction(finn):
    """While a LOG.md compaction runs, a scrub does everything else and stays queued; the compaction's end
    scrubs LOG.md and the new archive."""
    finn.append_log("USER_FEEDBACK", f"my card number is {VALUE}")
    finn.update_now("Paying", objective=f"pay with {VALUE}")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with finn.compactor.exclusive(wait=True):
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        finn.save_fact("card_number", VALUE, "secret")
        assert VALUE in finn.paths.log_file.read_text() and VALUE not in finn.paths.now_file.read_text()
        assert finn.scrubber.pending(), "the scrub is not complete until LOG.md is done"
    finally:
        release.set()
        holder.join()
    assert finn.compact_log().done
    assert finn.scrubber.pending() == []
    assert leaks(finn.paths.root, VALUE) == []


def test_a_scrub_waits_for_another_connections_checkpoint_to_truncate_the_wal(tmp_path: Path) -> None:
    """While another connection checkpoints (the background indexer's passive checkpoint after each sync, a
    commit's automatic one), SQLite answers a WAL truncate "busy" at once, without waiting: the scrub waits
    for that checkpoint and truncates, rather than leaving the scrub pending (as it did on a busy machine).

    Deterministic: the other checkpoint is held open by a reader until the scrub has asked twice."""
    import sqlite3

    from core.memory.secrets.redaction import redactor_for
    from core.memory.upkeep.scrub_tables import scrub_database

    path = tmp_path / "memory.db"

    def connect(timeout: float = 30) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        return conn

    setup = connect()
    setup.execute("CREATE TABLE notes (body TEXT)")
    setup.execute("INSERT INTO notes VALUES (?)", (f"my card number is {VALUE}",))
    reader = connect()
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM notes").fetchone()  # a snapshot older than the scrub's writes
    other = connect(timeout=120)
    checkpointer = threading.Thread(
        target=lambda: other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    )
    asked = []

    def on_statement(sql: str) -> None:
        if "wal_checkpoint(TRUNCATE)" not in sql:
            return
        asked.append(sql)
        if len(asked) == 1:  # another connection starts a checkpoint, which waits for the reader
            checkpointer.start()
            while checkpointer.is_alive() and not _checkpoint_lock_held(path.with_name("memory.db-shm")):
                threading.Event().wait(0.001)
        elif len(asked) == 2 and reader.in_transaction:
            reader.execute("COMMIT")  # the other checkpoint can end

    scrubbing = connect()
    scrubbing.set_trace_callback(on_statement)
    try:
        changed, truncated = scrub_database(scrubbing, redactor_for([VALUE]))
    finally:
        if reader.in_transaction:
            reader.execute("COMMIT")
        if checkpointer.is_alive():
            checkpointer.join(timeout=120)
    assert changed == {"notes.body": 1}
    assert truncated and len(asked) >= 2
    assert path.with_name("memory.db-wal").stat().st_size == 0


def _checkpoint_lock_held(shm: Path) -> bool:
    """True while a connection of this process holds SQLite's checkpoint lock of a WAL database: a POSIX
    write lock over byte 121 of its ``-shm`` file (WALINDEX_LOCK_OFFSET 120 + WAL_CKPT_LOCK 1), read from
    /proc/locks without taking it (a probing checkpoint would take it)."""
    device_inode = f":{shm.stat().st_ino}"
    with open("/proc/locks", encoding="ascii") as locks:
        for line in locks:
            fields = line.split()  # n: POSIX ADVISORY WRITE pid dev:inode start end
            if (fields[1:4] == ["POSIX", "ADVISORY", "WRITE"] and fields[4] == str(os.getpid())
                    and fields[5].endswith(device_inode) and fields[6].isdigit() and fields[7].isdigit()
                    and int(fields[6]) <= 121 <= int(fields[7])):
                return True
    return False


def _prepared(home: Path, cache: Path) -> None:
    """The agent of the crash trials, built once and copied for each trial (its vectors in the cold store)."""
    if not cache.exists():
        with MemoryManager("finn") as manager:
            fill(manager)
            manager.cold.catch_up()
        MemoryManager("finn").close()  # moves the torn tail to quarantine
        shutil.copytree(home / "finn", cache)
    shutil.rmtree(home / "finn", ignore_errors=True)
    shutil.copytree(cache, home / "finn")


COUNTING = "main:*@1000000000"
"""A fault point that is never reached: the child counts the points its main thread reaches."""


def _child(kill_at: int, point: str = COUNTING, timeout: float = 120) -> subprocess.CompletedProcess:
    """The scrub child, killed at its ``kill_at``-th step or at the fault point ``point``."""
    return subprocess.run([sys.executable, str(CHILD), str(kill_at), VALUE], cwd=ROOT,
                          env=dict(os.environ, AGENTOS_FAULT_POINT=point), capture_output=True, text=True,
                          timeout=timeout)


def _trial(home: Path, cache: Path, kill_at: int, point: str = COUNTING) -> bool:
    """One scrub killed at step ``kill_at`` or at ``point``, then the next open finishes it; True if the child
    was killed."""
    _prepared(home, cache)
    done = _child(kill_at, point)
    killed = done.returncode == -signal.SIGKILL
    assert killed or done.returncode == 0, done.stderr
    with MemoryManager("finn") as manager:
        # killed before the fact was saved: the user saves it again
        if manager.get_fact("card_number") is None:
            manager.save_fact("card_number", VALUE, "secret")
    assert_consistent(home / "finn")
    return killed


@pytest.mark.slow
def test_a_scrub_killed_as_it_commits_its_archives_is_finished_by_the_next_open(home, tmp_path):
    """SIGKILL right after the new archives' sha256 is committed and before the files replace the archives:
    the next open puts them in place, and nothing holds the value."""
    cache = tmp_path / "prepared"
    _prepared(home, cache)
    total = int(_child(10**6).stdout.split()[-2])
    # The steps: the fact's save, then side files written and fsynced, then the commit of their sha256.
    commit = next((k for k in range(2, total) if _trial_side_files_committed(home, cache, k)), None)
    assert commit is not None, "no step of the scrub left committed side files to finish"


def _trial_side_files_committed(home: Path, cache: Path, kill_at: int) -> bool:
    _prepared(home, cache)
    assert _child(kill_at).returncode == -signal.SIGKILL
    sides = list((home / "finn" / "memory" / "archive").glob(".*.scrub"))
    if not sides:
        return False
    import sqlite3

    conn = sqlite3.connect(home / "finn" / "memory" / "memory.db")
    recorded = {r[0] for r in conn.execute("SELECT archive_sha256 FROM compaction_history")}
    conn.close()
    if not all(hashlib.sha256(s.read_bytes()).hexdigest() in recorded for s in sides):
        return False
    MemoryManager("finn").close()
    assert_consistent(home / "finn")
    return True


@pytest.mark.slow
@pytest.mark.slow
def test_a_scrub_killed_at_any_step_is_finished_by_the_next_open(home, tmp_path):
    """SIGKILL at every durable step of a scrub (each file replace, fsync and memory.db commit) and before and
    after each of its writes to the cold store's Lance table: the next open finishes it, every seq stays once,
    every archive verifies, no value is left."""
    cache = tmp_path / "prepared"
    _prepared(home, cache)
    total, lance_writes = map(int, _child(10**6).stdout.split()[-2:])
    assert lance_writes > 0, "the scrub rewrote no row of the cold store"
    killed = sum(_trial(home, cache, k) for k in range(1, total + 1))
    assert killed == total
    lance_kills = sum(_trial(home, cache, 10**6, f"main:{point}@{k}")
                      for point in ("cold.write", "cold.written") for k in range(1, lance_writes + 1))
    assert lance_kills == 2 * lance_writes
    print(f"scrub crash trials: {total} kill points + {2 * lance_writes} at LanceDB writes, all killed, "
          "0 values left")
