"""Finding LOG.md entries by seq with binary search on byte offsets, whatever the file holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.inspector import log_files
from core.inspector.log_files import LogFiles
from core.memory.files.log_format import HEADER, encode_entry
from core.paths import AgentPaths

QUICK = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture]}
LINE = st.one_of(
    st.tuples(st.just("entry"), st.integers(1, 5), st.integers(0, 9000)),  # seq gap, text length
    st.tuples(st.just("garbage"), st.just(0), st.integers(0, 300)),  # a line with no seq
    st.tuples(st.just("bad crc"), st.integers(1, 5), st.integers(0, 200)),  # a seq, but damaged
)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Blocks of a few lines, so that lines straddle them (the real size is a megabyte)."""
    monkeypatch.setattr(log_files, "_SEARCH_BLOCK", 5000)


def write_log(path: Path, lines: list[tuple[str, int, int]], torn_tail: bool) -> dict[int, str]:
    """A LOG.md of those lines; returns the readable entries' texts by seq."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data, readable, seq = [HEADER.encode()], {}, 0
    for kind, gap, size in lines:
        if kind == "garbage":
            data.append(b"#" * size + b"\n")
            continue
        seq += gap
        text = f"entry {seq} " + "x" * size
        line = encode_entry(seq, "2026-01-01T00:00:00.000Z", "THOUGHT", text, {"n": seq})
        if kind == "bad crc":
            line = line.replace(b"entry", b"Entry", 1)
        else:
            readable[seq] = text
        data.append(line)
    if torn_tail:
        data.append(encode_entry(seq + 1, "2026-01-01T00:00:00.000Z", "THOUGHT", "torn", None)[:-9])
    path.write_bytes(b"".join(data))
    return readable


@settings(max_examples=60, **QUICK)
@given(lines=st.lists(LINE, max_size=60), torn_tail=st.booleans())
def test_every_entry_is_found_by_its_seq_and_nothing_else(tmp_path_factory, lines, torn_tail):
    """Any seq that has a readable line is found (with long lines, gaps, lines without a seq, damaged
    lines and a torn tail around it); every other seq is not; newer_than and last_seq agree."""
    paths = AgentPaths.for_agent("finn", tmp_path_factory.mktemp("home"))
    readable = write_log(paths.log_file, lines, torn_tail)
    files = LogFiles(paths)
    highest = max([0, *readable])
    found = files.read(list(range(0, highest + 3)))
    assert {seq: located.entry.content for seq, located in found.items()} == readable
    assert all(located.archive is None for located in found.values())
    for after in (0, highest // 2, highest):
        assert [x.entry.seq for x in files.newer_than(after)] == sorted(s for s in readable if s > after)
    assert files.last_seq() == highest


@settings(max_examples=40, **QUICK)
@given(lines=st.lists(LINE, max_size=60), before=st.integers(0, 200), limit=st.integers(1, 8))
def test_search_pages_newest_first_from_any_cursor(tmp_path_factory, lines, before, limit):
    """Search returns the newest ``limit`` matching entries below ``before``, across block boundaries."""
    paths = AgentPaths.for_agent("finn", tmp_path_factory.mktemp("home"))
    readable = write_log(paths.log_file, lines, torn_tail=False)
    files = LogFiles(paths)
    found = files.search("ENTRY", lambda located: True, lambda entry: entry.content, before=before,
                         limit=limit)
    assert [x.entry.seq for x in found] == sorted((s for s in readable if s < before), reverse=True)[:limit]


def test_entries_are_read_from_the_archive_that_holds_them(agents_home):
    """A seq inside an archive's range is read from that archive, the rest from LOG.md."""
    from core.memory_manager import MemoryManager

    (agents_home / "finn" / "config").mkdir(parents=True)
    (agents_home / "finn" / "config" / "config.yaml").write_text("cold: {embedder: "
                                                                 "'ollama:nomic-embed-text'}\n")
    with MemoryManager("finn", agents_home) as mm:  # the archive waits for an embedder that does not answer
        for n in range(5):
            mm.append_log("THOUGHT", f"thought {n}")
        mm.compact_log("five thoughts")
        mm.append_log("THOUGHT", "after the compaction")
    files = LogFiles(AgentPaths.for_agent("finn", agents_home))
    found = files.read([1, 5, 6, 7])
    assert ([(s, x.archive) for s, x in sorted(found.items())]
            == [(1, "LOG-1-5"), (5, "LOG-1-5"), (6, None), (7, None)])
    assert found[6].entry.type == "SUMMARY" and found[7].entry.content == "after the compaction"
    assert files.archive("LOG-1-5").last == 5 and files.archive("../LOG-1-5") is None


def test_type_pages_runs_and_open_runs_are_read_from_indexes(manager):
    """A page of some types, the newest runs and the runs without an end use indexes of log_metadata, not a
    scan."""
    from core.memory.storage import read_only as queries

    where = "WHERE entry_type IN (?, ?) AND id < ?"
    statements = [(queries._LOG_ROWS.format(where=where, order="DESC"), ["ERROR", "THOUGHT", 10, 51]),
                  (queries._RUNS, [100]), (queries._OPEN_RUNS, [])]
    for sql, params in statements:
        plan = " | ".join(row["detail"]
                          for row in manager.db.conn.execute("EXPLAIN QUERY PLAN " + sql, params))
        assert "SCAN log_metadata" not in plan and "log_metadata_type" in plan, plan
