"""MemoryReader: an agent opened to read writes nothing (no recovery, compaction or expiry), sees a consistent
state beside a live writer, and holds nothing once closed; the read commands of ``agentos`` read through
it."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.commands import main
from core.errors import WriterNeededError
from core.memory import MemoryManager, MemoryReader, open_for_reading
from core.memory.files import utc_timestamp
from core.memory.files.log_format import encode_entry
from tests.inprocess import run_main
from tests.lifetime.held import open_under

ROOT = Path(__file__).resolve().parent.parent
BUSY_WRITER = Path(__file__).parent / "lifetime" / "busy_writer_child.py"
COMPANIONS = ("memory.db-wal", "memory.db-shm")
"""SQLite's files beside memory.db."""


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a digest of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def changed(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The files that are not as they were (``added``, ``removed`` or ``changed``): {} when nothing was
    written. SQLite's own files beside memory.db aside: the -shm index, which every reader of it updates, and
    a new -wal that is empty."""
    empty = hashlib.sha256(b"").hexdigest()
    found = {name: "removed" for name in before if name not in after}
    for name, digest in after.items():
        if name.endswith("memory.db-shm") or (name not in before and name.endswith("-wal")
                                              and digest == empty):
            continue
        if name not in before:
            found[name] = "added"
        elif digest != before[name]:
            found[name] = "changed"
    return found


def agent_with_history(home: Path) -> None:
    """finn: NOW, log entries, facts (a secret too), notes with their vectors."""
    with MemoryManager("finn") as finn:
        finn.update_now("Planning the garden", next_steps=["Buy seeds"])
        finn.append_log("THOUGHT", "the tomatoes need a sunny corner")
        finn.save_fact("favourite_drink", "green tea", category="preference")
        finn.save_fact("door_code", "4711-9", category="secret")
        finn.store_memory("The shed key hangs behind the kitchen door")
        finn.cold.catch_up()


def test_a_reader_on_an_agent_needing_recovery_writes_nothing(agents_home: Path) -> None:
    """A torn LOG.md tail, an entry the index never got, a memory without its vector and an expired one: the
    reader names each as a writer's work, reads around them, and leaves every byte as it was."""
    agent_with_history(agents_home)
    with MemoryManager("finn") as finn:
        finn.store_memory("The gate code changes weekly", expires_at="2020-01-01")
        finn.cold.catch_up()
        late = finn.read_log(1)[0]["seq"] + 1
    with sqlite3.connect(agents_home / "finn" / "memory" / "memory.db") as db:  # as if its vector were lost
        db.execute("UPDATE recall_docs SET vector_state = 0 WHERE text LIKE '%shed key%'")
    with open(agents_home / "finn" / "memory" / "LOG.md", "ab") as log:  # a writer killed before indexing it
        log.write(encode_entry(late, utc_timestamp(), "THOUGHT", "written, then the process died", None))
        log.write(encode_entry(late + 1, utc_timestamp(), "THOUGHT", "torn", None)[:-9])  # killed mid-line
    before = tree(agents_home)

    with MemoryReader("finn") as reader:
        behind = reader.behind()
        assert any("torn" in reason for reason in behind)
        assert any("not in memory.db's index" in reason for reason in behind)
        assert any("not indexed for recall" in reason for reason in behind)
        assert any("no vector" in reason for reason in behind)
        assert reader.read_now()["current_step"] == "Planning the garden"
        assert reader.read_log(1)[0]["content"] == "written, then the process died"
        assert {f["key"]: f["value"] for f in reader.list_facts()} == {
            "door_code": "[REDACTED]", "favourite_drink": "green tea"}
        assert reader.get_fact("door_code") == "4711-9"
        reader.warm_up()
        found = reader.recall_memory("shed key kitchen door", n_results=3)
        assert "shed key" in found[0]["content"] and found.vectors_pending == 1 and found.warning
        assert not [hit for hit in reader.recall_memory("gate code weekly") if "gate code" in hit["content"]]

    assert changed(before, tree(agents_home)) == {}


def test_a_reader_never_repairs_what_only_a_writer_can(agents_home: Path) -> None:
    """An unreadable NOW.md, a missing memory.db: WriterNeededError names the command, nothing is made."""
    agent_with_history(agents_home)
    memory = agents_home / "finn" / "memory"
    (memory / "NOW.md").write_bytes(b"---\nnot: [yaml\n")
    before = tree(agents_home)
    with MemoryReader("finn") as reader:
        assert any("NOW.md is unreadable" in reason for reason in reader.behind())
        with pytest.raises(WriterNeededError, match="agentos status --agent finn"):
            reader.read_now()
    assert changed(before, tree(agents_home)) == {}
    for name in ("memory.db", *COMPANIONS):
        (memory / name).unlink(missing_ok=True)
    before = tree(agents_home)
    with MemoryReader("finn") as reader:
        assert "memory.db is missing" in reader.behind()
        with pytest.raises(WriterNeededError, match="memory.db is missing.*agentos status --agent finn"):
            reader.list_facts()
    assert tree(agents_home) == before


def test_open_for_reading_gives_a_writer_where_one_is_needed(agents_home: Path) -> None:
    """An agent a killed process left behind is read through a writer, which indexes what it left (as every
    read did before readers); once caught up, through a reader; now, log and facts need no recall index."""
    agent_with_history(agents_home)
    with MemoryManager("finn") as finn:
        late = finn.read_log(1)[0]["seq"] + 1
    with open(agents_home / "finn" / "memory" / "LOG.md", "ab") as log:  # a writer killed before indexing it
        log.write(encode_entry(late, utc_timestamp(), "THOUGHT", "the compost bin is by the fence", None))
    with open_for_reading("finn") as memory:
        assert isinstance(memory, MemoryManager)
        assert any(hit["where"].get("seq") == late for hit in memory.recall_memory("compost bin fence"))
    with open_for_reading("finn") as memory:
        assert isinstance(memory, MemoryReader)
    with sqlite3.connect(agents_home / "finn" / "memory" / "memory.db") as db:  # a vector to compute
        db.execute("UPDATE recall_docs SET vector_state = 0 WHERE text LIKE '%compost%'")
    with open_for_reading("finn", recall=False) as memory:
        assert isinstance(memory, MemoryReader) and memory.read_log(1)[0]["seq"] == late


def test_read_commands_write_nothing_and_leave_expiry_to_a_writer(agents_home: Path) -> None:
    """agentos now, log, facts and recall on an agent with an expired memory change no byte (opening a writer
    would forget it, writing LOG.md and memory.db), and never show the expired memory."""
    agent_with_history(agents_home)
    with MemoryManager("finn") as finn:
        finn.store_memory("The gate code changes weekly", expires_at="2020-01-01")
        finn.cold.catch_up()
    before = tree(agents_home)
    for args in (["now"], ["log"], ["facts"], ["facts", "--history", "favourite_drink"],
                 ["recall", "gate code weekly"], ["recall", "shed key"], ["recall", "--since", "2020-01-01"]):
        ran = run_main(main, [args[0], "--agent", "finn", *args[1:]])
        assert ran.returncode == 0, ran.stderr
        assert "gate code" not in ran.stdout and "4711-9" not in ran.stdout
    assert changed(before, tree(agents_home)) == {}
    with MemoryManager("finn") as finn:  # a writer's open forgets it
        assert finn.read_log(1)[0]["type"] == "FORGET"


def test_a_reader_beside_a_live_writer_sees_consistent_data(agents_home: Path, tmp_path: Path) -> None:
    """While another process updates NOW.md, appends to LOG.md and saves facts as fast as it can, every read
    sees whole states: NOW.md's fields and body of one version, LOG.md's tail without a gap or a torn line,
    a counter fact that never goes back, and recall answers."""
    agent_with_history(agents_home)
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, str(BUSY_WRITER), str(stop)], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        first = writer.stdout.readline().split()
        assert first[:1] == ["writing"], writer.stderr.read()
        base = int(first[1])
        counter, versions = 0, []
        with MemoryReader("finn") as reader:
            for _ in range(150):
                now = reader.read_now()
                step = now["version"] - base
                assert now["objective"] == f"step {step}" and f"step {step}" in now["body"]
                versions.append(now["version"])
                seqs = [entry["seq"] for entry in reader.read_log(12)]
                assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
                value = int(reader.get_fact("counter") or 0)
                assert value >= counter
                counter = value
                reader.recall_memory("step thought", n_results=2)
        stop.touch()
        out, err = writer.communicate(timeout=600)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err
    assert versions == sorted(versions) and len(set(versions)) > 1  # the writer wrote while it was read


def test_a_closed_reader_holds_nothing(agents_home: Path) -> None:
    """After close: no file of the agent open (memory.db, the cold store), no thread of it running, and the
    reader refuses to read again."""
    agent_with_history(agents_home)
    reader = MemoryReader("finn")
    reader.warm_up()
    assert reader.recall_memory("shed key", n_results=1)
    assert reader.list_facts() and reader.read_log(2) and reader.read_now()
    reader.close()
    reader.close()
    assert open_under(agents_home / "finn") == []
    assert [t.name for t in threading.enumerate() if t.name.startswith("agentos-read")] == []
    with pytest.raises(Exception, match="closed"):
        reader.list_facts()


def test_a_reader_reads_each_database_and_changes_no_row(agents_home: Path, storage_backend: str) -> None:
    """On memory.db and on a PostgreSQL schema alike: the reader sees what the writer wrote (NOW, the log, the
    facts, recall) and leaves every file and every row as it was."""
    from tests.inspector.test_api import schema_digest

    agent_with_history(agents_home)
    before, rows = tree(agents_home), schema_digest()
    with MemoryReader("finn") as reader:
        assert reader.behind() == []
        assert reader.read_now()["current_step"] == "Planning the garden"
        assert reader.read_log(1)[0]["type"] == "FACT"
        assert reader.get_fact("favourite_drink") == "green tea"
        assert reader.facts.secret_values() == ["4711-9"]
        assert "shed key" in reader.recall_memory("where is the shed key?", n_results=1)[0]["content"]
    assert changed(before, tree(agents_home)) == {} and schema_digest() == rows
