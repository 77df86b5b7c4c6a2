"""Failures stay inside the exception tree and never half-land.

The rule: LOG.md is the truth. An entry (and a NOW update, which is its NOW_UPDATE entry)
is kept once its line is on disk, and memory.db's index catches up if it cannot be
written now; a write whose truth is memory.db (a fact, a note, a conversation) is
refused with nothing kept when memory.db cannot take it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from core.errors import DiskFullError, ReadOnlyError, StorageError, ToolArgumentError, ValidationError
from core.memory.provider import Message, Session
from core.memory_manager import MemoryManager
from core.paths import AgentPaths
from core.plugins.memory import open_provider
from core.plugins.memory.lcm import DeterministicSummarizer
from core.engine.toolbox.toolbox import build_toolbox
from faults import read_only
from memory_format_checks import parse_log_file


def snapshot(manager: MemoryManager) -> tuple[bytes, bytes]:
    return manager.paths.log_file.read_bytes(), manager.paths.now_file.read_bytes()


def indexed_seqs(manager: MemoryManager) -> list[int]:
    return [r[0] for r in manager.db.conn.execute("SELECT id FROM log_metadata ORDER BY id")]


# -- a read-only memory.db ------------------------------------------------------------


def test_with_memory_db_read_only_log_entries_are_kept_and_the_index_catches_up(agents_home: Path,
                                                                                caplog) -> None:
    """append_log and update_now succeed (LOG.md is the truth) and memory.db indexes them at the next open."""
    with MemoryManager("finn") as manager:
        manager.append_log("THOUGHT", "before")
    db_file = AgentPaths.for_agent("finn").db_file
    with read_only(db_file), MemoryManager("finn") as manager:
        seq = manager.append_log("THOUGHT", "while memory.db is read-only")
        now = manager.update_now("active", ["write the report"], objective="quarterly report")
        assert now["version"] == 1 and manager.read_now()["objective"] == "quarterly report"
        assert [e["seq"] for e in parse_log_file(manager.paths.log_file)] == [1, seq, seq + 1]
        assert indexed_seqs(manager) == [1]
    assert any("catches up" in r.getMessage() for r in caplog.records)
    with MemoryManager("finn") as manager:
        assert indexed_seqs(manager) == [1, 2, 3]
        assert len(parse_log_file(manager.paths.log_file)) == 3  # nothing was written twice


def test_with_memory_db_read_only_a_fact_is_refused_and_nothing_is_logged(agents_home: Path) -> None:
    """save_fact and delete_fact raise ReadOnlyError naming the fix; LOG.md and the facts are unchanged."""
    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Lisbon")
    with read_only(AgentPaths.for_agent("finn").db_file), MemoryManager("finn") as manager:
        before = snapshot(manager)
        with pytest.raises(ReadOnlyError, match="make memory.db.*writable"):
            manager.save_fact("currency", "EUR")
        with pytest.raises(ReadOnlyError):
            manager.delete_fact("city")
        assert snapshot(manager) == before
        assert manager.get_fact("city") == "Lisbon" and manager.get_fact("currency") is None


def test_with_memory_db_read_only_a_provider_write_is_a_storage_error(agents_home: Path) -> None:
    """LCM append and compact raise ReadOnlyError, never a raw sqlite3 error; the session is unchanged."""
    db_file = AgentPaths.for_agent("finn").db_file
    session = Session("finn:cli:main", agent_id="finn")
    provider = open_provider("lcm", db_file, summarizer=DeterministicSummarizer())
    provider.append(session, [Message("user", f"message {i} " + "words " * 40) for i in range(30)])
    provider.close()
    with read_only(db_file):
        provider = open_provider("lcm", db_file, summarizer=DeterministicSummarizer())
        with pytest.raises(ReadOnlyError):
            provider.append(session, [Message("user", "one more")])
        with pytest.raises(StorageError):
            provider.compact(session, __import__("core.memory.provider",
                                                 fromlist=["CompactionMode"]).CompactionMode.FULL)
        assert provider.stats(session).message_count == 30 and provider.stats(session).summary_count == 0
        provider.close()


# -- a full disk ------------------------------------------------------------------------


def test_on_a_full_disk_every_write_is_refused_whole_or_done_whole(full_disk) -> None:
    """With no space left, a write raises DiskFullError and changes nothing, or it completes; never half."""
    manager = MemoryManager("finn")
    manager.update_now("active", ["first"], objective="survive a full disk")
    manager.append_log("THOUGHT", "before the disk filled up")
    provider = open_provider("lcm", manager.paths.db_file, summarizer=DeterministicSummarizer())
    session = Session("finn:cli:main", agent_id="finn")
    provider.append(session, [Message("user", "hello")])
    full_disk.fill(manager)
    before = snapshot(manager)
    with pytest.raises(DiskFullError, match="free some disk space"):
        manager.append_log("THOUGHT", "x" * 20_000)
    with pytest.raises(DiskFullError):
        manager.update_now("active", ["second"], objective="o" * 1500, blockers=["b" * 1500] * 5)
    assert snapshot(manager) == before
    for write, undone in ((lambda: manager.save_fact("k", "v" * 5000), lambda: manager.get_fact("k") is None),
                          (lambda: provider.append(session, [Message("user", "y" * 50_000)]),
                           lambda: provider.stats(session).message_count == 1)):
        try:
            write()
        except StorageError:
            assert undone() and snapshot(manager) == before
    full_disk.free(manager)
    seq = manager.append_log("THOUGHT", "after space came back")
    entries = parse_log_file(manager.paths.log_file)
    assert [e["seq"] for e in entries] == list(range(1, seq + 1))  # no seq was lost or torn
    assert manager.update_now("active", ["again"])["version"] == 2
    provider.close()
    manager.close()


# -- NOW.md with a bad front matter ---------------------------------------------------------


@pytest.mark.parametrize("damage",
                         ["version: one", "log_seq: [1, 2]", "status: sleeping", "objective: {a: 1}"])
def test_a_bad_now_front_matter_is_recovered_from_the_last_now_update(manager: MemoryManager, damage: str,
                                                                       caplog) -> None:
    """NOW.md is rewritten from LOG.md's newest NOW_UPDATE (the bad file kept in quarantine), loudly."""
    manager.update_now("active", ["load data", "write report"], objective="quarterly report",
                       blockers=["waiting for Q3 numbers"], resume_hint="start with the CSV")
    manager.update_now("active", done_steps=["load data"])
    key = damage.split(":")[0]
    text = manager.paths.now_file.read_text()
    lines = [damage if line.startswith(f"{key}:") else line for line in text.splitlines()]
    manager.paths.now_file.write_text("\n".join(lines) + "\n")
    caplog.set_level(logging.WARNING)
    now = manager.read_now()
    assert (now["objective"], now["version"], now["next_steps"]) == ("quarterly report", 2, ["write report"])
    assert now["blockers"] == ["waiting for Q3 numbers"] and now["resume_hint"] == "start with the CSV"
    assert any("NOW.md was unreadable" in r.getMessage() for r in caplog.records)
    assert len(list(manager.paths.quarantine_dir.glob("NOW-*.md"))) == 1
    assert manager.update_now("done")["version"] == 3


def test_a_missing_now_md_is_recovered_at_open(agents_home: Path) -> None:
    """An agent with a history whose NOW.md was deleted gets it back from LOG.md at the next open."""
    with MemoryManager("finn") as manager:
        manager.update_now("active", ["step"], objective="keep going")
        manager.paths.now_file.unlink()
    with MemoryManager("finn") as manager:
        assert manager.read_now()["objective"] == "keep going" and manager.read_now()["version"] == 1


# -- bad folders and bad input --------------------------------------------------------------


def test_a_file_where_the_quarantine_folder_belongs_is_a_clear_storage_error(agents_home: Path) -> None:
    """Opening an agent whose memory/quarantine is a file raises StorageError saying to move it."""
    memory = agents_home / "finn" / "memory"
    memory.mkdir(parents=True)
    (memory / "quarantine").write_text("not a folder")
    with pytest.raises(StorageError, match="quarantine is a file, not a folder: move it away"):
        MemoryManager("finn")


@pytest.mark.parametrize("path, message", [
    ("notes/a\x00b.md", "NUL"), ("x" * 300 + ".md", "longer than 255 bytes"),
    ("/".join(["folder"] * 200), "1024"),
])
def test_workspace_tools_refuse_a_path_the_file_system_cannot_take(agents_home: Path, path: str,
                                                                   message: str) -> None:
    """A NUL character or an over-long name or path is a ToolArgumentError; nothing is created."""
    MemoryManager("finn").close()
    tools = build_toolbox(AgentPaths.for_agent("finn"))
    for name, args in (("write_file", {"path": path, "content": "x"}), ("read_file", {"path": path}),
                       ("list_files", {"path": path})):
        with pytest.raises(ToolArgumentError, match=message):
            tools.call(name, args)
    workspace = agents_home / "finn" / "workspace"
    assert not workspace.exists() or list(workspace.iterdir()) == []


def test_a_set_in_tool_call_arguments_is_a_clear_error(agents_home: Path) -> None:
    """Arguments that are not JSON (a set) are a ToolArgumentError for a tool and a ValidationError for a
    message."""
    MemoryManager("finn").close()
    tools = build_toolbox(AgentPaths.for_agent("finn"))
    with pytest.raises(ToolArgumentError, match="JSON data"):
        tools.call("update_status", {"new_status": "working", "next_steps": {"b", "a"}})
    with pytest.raises(ValidationError, match="JSON data"):
        Message.from_ollama({"role": "assistant", "tool_calls": [
            {"function": {"name": "save_fact", "arguments": {"key": {1, 2}}}}]})


def test_an_oversize_given_summary_is_refused_before_anything_is_written(manager: MemoryManager) -> None:
    """compact_log(summary=<70 KB>) raises ValidationError; LOG.md, the archives and the index are
    unchanged."""
    for i in range(10):
        manager.append_log("THOUGHT", f"thought {i}")
    before = manager.paths.log_file.read_bytes()
    with pytest.raises(ValidationError, match="summary is 71680 bytes.*max_entry_bytes"):
        manager.compact_log(summary="s" * 70 * 1024)
    assert manager.paths.log_file.read_bytes() == before
    assert not list(manager.paths.archive_dir.iterdir())
    assert indexed_seqs(manager) == list(range(1, 11))


# -- the process out of resources ----------------------------------------------------------


@pytest.mark.slow
def test_out_of_descriptors_every_call_fails_with_a_storage_error_that_names_the_fix(
    agents_home: Path,
) -> None:
    """With no descriptor left (or only a few), opening an agent and each of its calls either works or raises
    a StorageError saying to raise the limit of open files: never a raw OSError, and no thread dies."""
    import json
    import subprocess
    import sys

    with MemoryManager("finn") as manager:
        manager.append_log("THOUGHT", "before")
    child = Path(__file__).with_name("lifetime") / "descriptors_child.py"
    ran = subprocess.run([sys.executable, str(child), "14"], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    *calls, last = [json.loads(line) for line in ran.stdout.splitlines()]
    failed = [c for c in calls if c["outcome"] == "raised"]
    assert failed, "no call ran out of descriptors: the test tests nothing"
    for call in failed:
        assert "StorageError" in call["type"].split("|"), call
        assert "ulimit -n" in call["message"], call
    assert last["thread_errors"] == []


def test_an_os_error_of_lancedb_names_its_fix() -> None:
    """LanceDB's OSError carries its number in its message only ("(os error 24)")."""
    from core.durable.fsutil import storage_error

    error = storage_error(OSError("LanceError(IO): Too many open files (os error 24), "
                                  "rust/lance-io/src/x.rs"),
                          "cannot read the cold store")
    assert type(error) is StorageError and "ulimit -n" in str(error)
    assert isinstance(storage_error(OSError("LanceError(IO): No space left on device (os error 28)"), "x"),
                      DiskFullError)


def test_an_os_error_no_library_call_converted_is_one_line_and_exit_code_5(capsys) -> None:
    """The command lines' last boundary: an OSError is the one line of a StorageError naming the fix, not a
    traceback."""
    import errno

    from core.terminal import exit_codes, run_cli

    def out_of_descriptors() -> None:
        raise OSError(errno.EMFILE, "Too many open files", "/agents/finn/memory/LOG.md")

    assert run_cli(out_of_descriptors) == exit_codes.STORAGE == 5
    err = capsys.readouterr().err
    assert (
        err.startswith("error: ") and err.count("\n") == 1 and "ulimit -n" in err and "Traceback" not in err
    )
