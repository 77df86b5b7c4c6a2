"""Crash safety, tested with real SIGKILLs of child processes and hand-damaged files (issue item 5)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from core.memory_manager import MemoryManager
from memory_format_checks import LOG_LINE, parse_log_file, parse_now_file

ROOT = Path(__file__).resolve().parent.parent
TRIALS = 40

WRITER = """
import os, random, sys
from core.durable import fault_points
from core.memory_manager import MemoryManager

manager = MemoryManager("finn")  # opening repairs whatever the last kill left
if len(sys.argv) > 1:  # killed at a step of the writes, not of the opening
    fault_points.arm(sys.argv[1], int(sys.argv[2]))
print("ready", flush=True)
pid, i = os.getpid(), 0
while True:
    i += 1
    if i % 3 == 0:
        manager.update_now("active", [f"step {i}", "next"], objective=f"obj-{pid}-{i}")
    else:
        manager.append_log("TOOL_USE", f"call {i} " + "x" * random.randrange(2000), {"pid": pid, "i": i})
"""

RUN_STARTER = """
import time
from core.memory_manager import MemoryManager

manager = MemoryManager("finn")
print(manager.start_run("a run that will be killed"), flush=True)
time.sleep(60)
"""


def spawn(script: str, home: Path, *args: str, fault_point: str = "") -> subprocess.Popen:
    """Start a fresh interpreter running ``script ARGS`` on the agents home ``home``, armed for
    ``fault_point``."""
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT), AGENTOS_FAULT_POINT=fault_point)
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` and reap it."""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()


def only_tail_may_be_damaged(log_path: Path) -> None:
    """Before repair, every LOG.md line but the last is whole and valid."""
    lines = log_path.read_bytes().split(b"\n")
    body = lines[1:-1]  # header first; the piece after the last newline is the tail
    for line in body[:-1]:
        assert LOG_LINE.match(line), line[:120]


def check_after_kill(home: Path) -> dict:
    """Open the agent as a restart would and check every crash-safety rule; return NOW's front matter."""
    memory = home / "finn" / "memory"
    only_tail_may_be_damaged(memory / "LOG.md")
    with MemoryManager("finn") as manager:  # quarantines a torn tail
        entries = parse_log_file(memory / "LOG.md")
        seqs = [e["seq"] for e in entries]
        assert seqs == sorted(set(seqs)), "seqs must strictly increase without duplicates"
        front, _ = parse_now_file(memory / "NOW.md")  # never torn
        assert not list(memory.glob(".*.tmp")), "a killed writer's temp file was left behind"
        if front["version"]:
            writes = [e for e in entries if e["type"] == "NOW_UPDATE"
                      and e["meta"]["version"] == front["version"] and e["seq"] == front["log_seq"]]
            assert len(writes) == 1 and writes[0]["meta"]["objective"] == front["objective"]
            newest = max(e["meta"]["version"] for e in entries if e["type"] == "NOW_UPDATE")
            assert newest in (front["version"], front["version"] + 1)  # killed before the replace
        indexed = manager.db.conn.execute("SELECT * FROM log_metadata ORDER BY id").fetchall()
        assert [r["id"] for r in indexed] == seqs
        manager.rebuild_log_index()
        rebuilt = manager.db.conn.execute("SELECT * FROM log_metadata ORDER BY id").fetchall()
        assert [tuple(r) for r in rebuilt] == [tuple(r) for r in indexed]
    return front


WRITE_POINTS = ("log.append", "log.appended", "file.replace", "file.replaced", "db.commit")
"""The steps of an append (the line written, then flushed, then indexed) and of a NOW update (NOW.md's
temp file replacing it): see core.durable.fault_points."""


@pytest.mark.slow
def test_sigkill_during_appends_and_now_writes(agents_home: Path) -> None:
    """After each of many SIGKILLs at fault points drawn at random, LOG.md, NOW.md and log_metadata are
    consistent."""
    rng = random.Random(20260131)
    versions, entries_seen = [], []
    MemoryManager("finn").close()
    for trial in range(TRIALS):
        # at one of the first steps of the process: opening and repairing what the last kill left
        if trial % 4 == 3:
            proc = spawn(WRITER, agents_home, fault_point=f"*@{rng.randint(1, 4)}")
        else:
            proc = spawn(WRITER, agents_home, rng.choice(WRITE_POINTS), str(rng.randint(1, 30)))
            assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        assert proc.wait(timeout=120) == -signal.SIGKILL, proc.stderr.read()
        kill(proc)
        front = check_after_kill(agents_home)
        versions.append(front["version"])
        entries_seen.append(len(parse_log_file(agents_home / "finn" / "memory" / "LOG.md")))
    assert versions == sorted(versions) and versions[-1] > 0
    assert entries_seen == sorted(entries_seen) and entries_seen[-1] > TRIALS


def _append_raw(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_torn_tail_without_newline_is_quarantined(manager: MemoryManager) -> None:
    """A last line with no newline is moved to memory/quarantine/ and cut off; appends continue after its
    seq."""
    for i in range(3):
        manager.append_log("THOUGHT", f"t{i}")
    torn = b'- 4 2026-01-31T12:00:00.000Z THOUGHT {"text":"half a li'
    _append_raw(manager.paths.log_file, torn)
    with MemoryManager("finn") as again:
        assert [e["seq"] for e in parse_log_file(again.paths.log_file)] == [1, 2, 3]
        quarantined = list(again.paths.quarantine_dir.iterdir())
        assert [q.read_bytes() for q in quarantined] == [torn]
        assert again.append_log("THOUGHT", "after repair") == 5  # 4 is in the quarantined line


def test_bad_crc_on_the_last_line_is_quarantined(manager: MemoryManager) -> None:
    """A whole last line whose CRC fails is quarantined and cut; its seq is never handed out again."""
    for i in range(3):
        manager.append_log("THOUGHT", f"t{i}")
    lines = manager.paths.log_file.read_bytes().split(b"\n")
    damaged = lines[-2].replace(b"t2", b"t9")
    manager.paths.log_file.write_bytes(b"\n".join(lines[:-2] + [damaged, b""]))
    with MemoryManager("finn") as again:
        assert [e["content"] for e in again.read_log()] == ["t0", "t1"]
        assert [q.read_bytes() for q in again.paths.quarantine_dir.iterdir()] == [damaged + b"\n"]
        assert again.append_log("THOUGHT", "next") == 4
        parse_log_file(again.paths.log_file)


def test_corrupt_middle_line_is_reported_and_skipped(manager: MemoryManager) -> None:
    """A bad line in the middle is reported in ScanResult.bad_lines and skipped; later lines stay."""
    for i in range(5):
        manager.append_log("THOUGHT", f"entry {i}")
    lines = manager.paths.log_file.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"entry 2", b"entry X")  # header is line 1, so seq 3 is line 4
    manager.paths.log_file.write_bytes(b"\n".join(lines))
    with MemoryManager("finn") as again:
        scan = again.scan_log()
        assert [(b.line_no, "crc32" in b.reason) for b in scan.bad_lines] == [(4, True)]
        assert [e.seq for e in scan.entries] == [1, 2, 4, 5]
        assert [e["content"] for e in again.read_log()] == ["entry 0", "entry 1", "entry 3", "entry 4"]
        assert not any(again.paths.quarantine_dir.iterdir())
        assert again.append_log("THOUGHT", "entry 5") == 6


def test_a_line_edited_into_json_nested_too_deep_to_parse_is_skipped(manager: MemoryManager) -> None:
    """A line edited by hand (its CRC made to match) into JSON nested deeper than the parser follows is a
    damaged line, reported and skipped: reading LOG.md ended in a RecursionError."""
    for i in range(5):
        manager.append_log("THOUGHT", f"entry {i}")
    lines = manager.paths.log_file.read_bytes().split(b"\n")
    deep = b"[" * 5000 + b"]" * 5000
    head = b'- 3 2026-01-31T12:00:00.000Z THOUGHT {"text":"deep","meta":{"a":' + deep + b"}}"
    lines[3] = head + b" crc32=%08x" % zlib.crc32(head)  # header is line 1, so seq 3 is line 4
    manager.paths.log_file.write_bytes(b"\n".join(lines))
    with MemoryManager("finn") as again:
        scan = again.scan_log()
        assert [(b.line_no, "nests too deeply" in b.reason) for b in scan.bad_lines] == [(4, True)]
        assert [e["content"] for e in again.read_log()] == ["entry 0", "entry 1", "entry 3", "entry 4"]
        assert again.append_log("THOUGHT", "entry 5") == 6


@pytest.mark.parametrize("seq, ts, body", [
    ("3", "2026-01-31T12:00:00.000Z", '{"text":"x","meta":[1,2]}'),            # AttributeError in the index
    ("3", "2026-01-31T12:00:00.000Z", '{"text":"lone \\ud800 surrogate"}'),  # UnicodeEncodeError
    ("3", "2026-01-31T12:00:00.000Z", '{"text":"a \\u0000 NUL"}'),           # what no entry is written with
    (str(2**70), "2026-01-31T12:00:00.000Z", '{"text":"x"}'),                   # OverflowError in SQLite
    ("-3", "2026-01-31T12:00:00.000Z", '{"text":"x"}'),
    ("3", "yesterday", '{"text":"x"}'),                      # ValueError in the recall indexer's thread
])
def test_a_line_edited_into_another_shape_with_its_crc_is_skipped(manager: MemoryManager, seq: str, ts: str,
                                                                  body: str) -> None:
    """A line edited by hand, its CRC made to match, into what AgentOS never writes (metadata that is not an
    object, a NUL or a lone surrogate escaped in JSON, a seq SQLite cannot hold or below 1, a time that is not
    one) is a damaged line, reported and skipped: opening the agent ended in a traceback from the index."""
    for i in range(5):
        manager.append_log("THOUGHT", f"entry {i}")
    lines = manager.paths.log_file.read_bytes().split(b"\n")
    head = f"- {seq} {ts} THOUGHT {body}".encode()
    lines[3] = head + b" crc32=%08x" % zlib.crc32(head)  # header is line 1, so seq 3 is line 4
    manager.paths.log_file.write_bytes(b"\n".join(lines))
    with MemoryManager("finn") as again:
        assert [b.line_no for b in again.scan_log().bad_lines] == [4]
        assert [e["content"] for e in again.read_log()] == ["entry 0", "entry 1", "entry 3", "entry 4"]
        assert again.recall_memory("entry", min_score=0.0)
        assert again.append_log("THOUGHT", "entry 5") == 6


class _Counted(bytes):
    """A block read from LOG.md that counts the bytes each operation on it goes through."""

    touched = 0

    def __add__(self, other):
        _Counted.touched += len(self) + len(other)
        return bytes.__add__(self, other)

    def __contains__(self, part):
        _Counted.touched += len(self)
        return bytes.__contains__(self, part)

    def split(self, *args):
        _Counted.touched += len(self)
        return bytes.split(self, *args)


def test_a_gigantic_line_is_read_in_one_pass(manager: MemoryManager, monkeypatch) -> None:
    """A line of many megabytes pasted into LOG.md by hand is gone through once when the last entries are
    read: each block was joined again to the whole rest of the line, so `agentos log` took 8 s over an 8 MB
    line and 134 s over a 32 MB one (four times the line, sixteen times the time)."""
    from core.memory.files import log_file

    manager.append_log("THOUGHT", "before")
    _append_raw(manager.paths.log_file, b"- 2 pasted " + b"x" * 4_000_000 + b"\n")
    manager.append_log("THOUGHT", "after")
    size = manager.paths.log_file.stat().st_size
    read_at = log_file._read_at
    monkeypatch.setattr(log_file, "_read_at", lambda fd, at, length: _Counted(read_at(fd, at, length)))
    assert [e["content"] for e in manager.read_log(10)] == ["before", "after"]
    assert _Counted.touched <= 2 * size, f"{_Counted.touched:,} bytes gone through for a file of {size:,}"


@pytest.mark.parametrize("where", ["objective", "plan"])
def test_a_nul_edited_into_now_md_is_a_damaged_now_md(manager: MemoryManager, where: str) -> None:
    """NOW.md edited by hand with a NUL (YAML's "\\0" in a field, or the character in a plan line) stopped
    every run and update ("LOG entry metadata contains a NUL byte", naming neither NOW.md nor the fix): it is
    unreadable, as a damaged NOW.md is, so the next update restores it from LOG.md and keeps the edited file
    in quarantine."""
    manager.update_now("Reading the docs", ["read", "write"], objective="a summary")
    now = manager.paths.now_file
    text = now.read_text(encoding="utf-8")
    edited = (text.replace('objective: a summary', 'objective: "a\\0summary"') if where == "objective"
              else text.replace("- [ ] read", "- [ ] re\x00ad"))
    assert edited != text
    now.write_text(edited, encoding="utf-8")
    with MemoryManager("finn") as again:
        again.update_now("Writing", objective="a summary")
        assert again.read_now()["objective"] == "a summary"
        assert [q.read_text(encoding="utf-8") for q in again.paths.quarantine_dir.iterdir()] == [edited]


def test_index_lagging_log_is_reconciled_on_open(manager: MemoryManager) -> None:
    """If a process died between the LOG append and the index insert, the next open indexes the entry."""
    for i in range(4):
        manager.append_log("THOUGHT", f"t{i}")
    with manager.db.transaction() as conn:
        conn.execute("DELETE FROM log_metadata WHERE id >= 3")
    with MemoryManager("finn") as again:
        ids = [r[0] for r in again.db.conn.execute("SELECT id FROM log_metadata ORDER BY id")]
        assert ids == [1, 2, 3, 4]


@pytest.mark.slow
def test_killed_run_is_reported_as_interrupted(agents_home: Path) -> None:
    """A child SIGKILLed after start_run leaves a RUN_START without RUN_END: interrupted_runs() lists it."""
    proc = spawn(RUN_STARTER, agents_home)
    run_id = proc.stdout.readline().strip()
    assert run_id, proc.stderr.read()
    kill(proc)
    assert proc.returncode == -signal.SIGKILL, "the child ended before the kill"
    with MemoryManager("finn") as manager:
        assert [r["run_id"] for r in manager.interrupted_runs()] == [run_id]
        manager.mark_interrupted(run_id)
        assert manager.interrupted_runs() == []


@pytest.mark.parametrize("leftover", [b"", b"---\nschema: agentos.now/1\nversion: 9"])
def test_stale_now_temp_file_does_not_replace_now(manager: MemoryManager, leftover: bytes) -> None:
    """A temp file left by a writer killed mid-write never becomes NOW.md and is removed on open."""
    manager.update_now("active", ["keep me"])
    stale = manager.paths.memory_dir / f".NOW.md.{os.getpid() + 1}.tmp"
    stale.write_bytes(leftover)
    with MemoryManager("finn") as again:
        assert again.read_now()["next_steps"] == ["keep me"]
        assert not stale.exists()
