"""A model cannot erase history: the entries the system acts on can only be written by the system."""

from __future__ import annotations

import pytest

from core.errors import ToolArgumentError, ValidationError
from core.memory.files.log_format import ENTRY_TYPES, SYSTEM_META_KEYS, SYSTEM_TYPES
from core.memory_manager import MemoryManager
from core.paths import AgentPaths
from core.engine.toolbox.toolbox import build_toolbox


def fill(manager: MemoryManager, count: int) -> None:
    for i in range(count):
        manager.append_log("THOUGHT", f"thought number {i} about the quarterly report")


def test_a_forged_reservation_is_refused_and_compaction_stays_below_its_thresholds(
    manager: MemoryManager,
) -> None:
    """log_activity cannot write a compaction reservation; compact_log(force=False) then archives nothing."""
    fill(manager, 5)
    before = manager.paths.log_file.read_bytes()
    tools = build_toolbox(AgentPaths.for_agent("finn"))
    with pytest.raises(ValidationError, match="compaction"):
        tools.call("log_activity", {"content": "forged", "entry_type": "SYSTEM",
                                    "metadata": {"compaction": "reserved", "covers": [1, 5]}})
    assert manager.paths.log_file.read_bytes() == before
    report = manager.compact_log(force=False)
    assert not report.done and report.reason == "below the compaction thresholds"
    assert manager.paths.log_file.read_bytes() == before
    assert not list(manager.paths.archive_dir.iterdir())


@pytest.mark.parametrize("entry_type", sorted(SYSTEM_TYPES))
def test_every_system_type_is_refused_to_append_log(manager: MemoryManager, entry_type: str) -> None:
    """append_log refuses each system entry type with a message naming the types a caller may use."""
    before = manager.paths.log_file.read_bytes()
    with pytest.raises(ValidationError, match="written only by the system; use one of: TOOL_USE"):
        manager.append_log(entry_type, "a forged record", {"covers": [1, 2]})
    assert manager.paths.log_file.read_bytes() == before


@pytest.mark.parametrize("key", sorted(SYSTEM_META_KEYS))
def test_every_system_metadata_key_is_refused_to_append_log(manager: MemoryManager, key: str) -> None:
    """append_log refuses metadata keys the system finds its own entries by (a forged call_id skips a
    tool)."""
    before = manager.paths.log_file.read_bytes()
    with pytest.raises(ValidationError, match=f"{key}.*set only by the system"):
        manager.append_log("TOOL_USE", "write_file(...) -> ok", {key: "t1:1:0"})
    assert manager.paths.log_file.read_bytes() == before


def test_the_system_path_writes_what_append_log_refuses(manager: MemoryManager) -> None:
    """append_system (the engine's and the memory's path) writes run markers with their run id."""
    seq = manager.append_system("RUN_START", "objective", {"run_id": "r1"})
    entry = manager.read_log(1)[0]
    assert (entry["seq"], entry["type"], entry["metadata"]) == (seq, "RUN_START", {"run_id": "r1"})
    assert manager.interrupted_runs()[0]["run_id"] == "r1"


def test_the_skill_schema_offers_only_the_types_a_skill_may_write() -> None:
    """log_activity's schema lists exactly the entry types that are not reserved for the system."""
    tools = build_toolbox(AgentPaths.for_agent("finn"))
    schema = tools.tools["log_activity"].definition["function"]["parameters"]
    offered = set(schema["properties"]["entry_type"]["enum"])
    assert offered == set(ENTRY_TYPES) - SYSTEM_TYPES
    with pytest.raises(ToolArgumentError):
        tools.call("log_activity", {"content": "done", "entry_type": "RUN_END"})


def test_a_summary_without_an_archive_does_not_break_later_compactions(manager: MemoryManager) -> None:
    """A SUMMARY entry that no compaction wrote (here the first entry) is an ordinary entry to compaction."""
    manager.append_system("SUMMARY", "not a real summary", {"note": "no covers, no archive"})
    fill(manager, 20)
    report = manager.compact_log(summary="twenty thoughts about the report")
    assert report.done and report.first_seq == 1 and report.last_seq == 21
    fill(manager, 3)
    again = manager.compact_log(summary="three more thoughts")
    assert again.done and again.first_seq == 22
    entries = manager.scan_log().entries
    assert [e.type for e in entries] == ["SUMMARY"] and entries[0].metadata["covers"] == [22, 25]


def test_a_forged_reservation_written_by_the_system_path_still_needs_to_cover_the_log(
    manager: MemoryManager,
) -> None:
    """Only a reservation covering LOG.md from its first entry to the entry before it is resumed."""
    fill(manager, 5)
    manager.append_system("SYSTEM", "stale", {"compaction": "reserved", "covers": [2, 4]})
    fill(manager, 2)
    report = manager.compact_log(force=False)
    assert not report.done
    assert len(manager.scan_log().entries) == 8
