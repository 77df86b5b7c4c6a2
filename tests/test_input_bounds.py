"""Every input has a bound and a clear error: numbers are finite, values are not nested without end, a file is
read up to its cap, and ``--json`` output is always JSON."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path

import pytest

from core.commands import main
from core.commands.base import json_text
from core.engine.toolbox.toolbox import build_toolbox
from core.errors import ValidationError
from core.langgraph_store import AgentOSStore
from core.memory_manager import MemoryManager
from core.paths import AgentPaths
from tests.inprocess import run_main


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_recall_recency_days_must_be_a_finite_positive_number(manager: MemoryManager, value: str) -> None:
    """`recall --recency-days nan --json` printed NaN (not JSON) and exited 0; now it is a usage error."""
    manager.append_log("THOUGHT", "the harbour crane moved")
    ran = run_main(main, ["recall", "--agent", "finn", "harbour", f"--recency-days={value}", "--json"])
    assert ran.returncode == 2 and ran.stdout == ""
    assert "--recency-days: must be a number of days above 0 and at most 1000000" in ran.stderr


@pytest.mark.parametrize("keyword, value", [("recency_days", math.nan), ("recency_days", math.inf),
                                            ("min_score", math.nan), ("recency_days", 1e7)])
def test_recall_refuses_a_number_that_is_not_finite_or_in_range(manager: MemoryManager, keyword: str,
                                                                value: float) -> None:
    with pytest.raises(ValidationError, match=keyword):
        manager.recall_memory("harbour", **{keyword: value})


def test_recall_json_is_json(manager: MemoryManager) -> None:
    manager.append_log("THOUGHT", "the harbour crane moved")
    ran = run_main(main, ["recall", "--agent", "finn", "harbour crane", "--recency-days", "30", "--json"])
    assert ran.returncode == 0
    json.loads(ran.stdout, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))


def test_json_output_never_holds_nan() -> None:
    assert json.loads(json_text({"score": 0.5})) == {"score": 0.5}
    with pytest.raises(ValidationError, match="JSON cannot carry"):
        json_text({"score": math.nan})


@pytest.mark.parametrize("call", ["append_log", "store_memory", "store_memories", "store_put"])
def test_metadata_nested_2000_deep_is_a_validation_error_and_nothing_is_written(manager: MemoryManager,
                                                                               call: str) -> None:
    """It raised RecursionError from the redactor or JSON; now a ValidationError says to flatten it."""
    deep = nested(2000)
    before = manager.paths.log_file.read_bytes()
    with pytest.raises(ValidationError, match="nests deeper than 32 levels"):
        if call == "append_log":
            manager.append_log("THOUGHT", "x", deep)
        elif call == "store_memory":
            manager.store_memory("a note", deep)
        elif call == "store_memories":
            manager.store_memories([{"content": "a note", "metadata": deep}])
        else:
            AgentOSStore("finn", manager=manager).put(("notes",), "k", deep)
    assert manager.paths.log_file.read_bytes() == before
    assert manager.recall_memory(None, since="1970-01-01") == [] or all(
        hit["kind"] == "log" for hit in manager.recall_memory(None, since="1970-01-01"))


def test_a_value_that_refers_to_itself_is_refused(manager: MemoryManager) -> None:
    loop: dict = {"a": 1}
    loop["self"] = loop
    with pytest.raises(ValidationError, match="refers to itself"):
        manager.store_memory("a note", loop)


def test_metadata_of_reasonable_depth_is_kept(manager: MemoryManager) -> None:
    memory_id = manager.store_memory("a note", nested(20))
    assert memory_id.startswith("note:")


def test_read_file_reads_at_most_its_cap_of_a_huge_file(agents_home: Path) -> None:
    """A 400 MB file (sparse: it takes no disk) is cut to 256 KB without being read whole into memory."""
    MemoryManager("finn").close()
    workspace = agents_home / "finn" / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    with (workspace / "huge.log").open("wb") as file:
        file.write(b"line one\n")
        file.truncate(400 * 1024 * 1024)
    tools = build_toolbox(AgentPaths.for_agent("finn"))
    tracemalloc.start()
    try:
        result = tools.call("read_file", {"path": "huge.log"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["truncated"] is True and result["bytes"] == 400 * 1024 * 1024
    assert result["content"].startswith("line one\n") and len(result["content"]) == 256 * 1024
    assert peak < 32 * 1024 * 1024, f"read_file took {peak // 1024 // 1024} MB"


@pytest.mark.parametrize("tool, arguments", [
    ("recall_memory", {"query": "x", "spaces": ["s" * 100_000]}),
    ("publish_memory", {"space": "s" * 100_000, "content": "x"}),
])
def test_a_huge_name_is_echoed_shortened(agents_home: Path, tool: str, arguments: dict) -> None:
    """A model or an MCP client naming a space with 100,000 characters: the error says which name in a short
    line (it repeated 10,000 characters of it), as for an agent's name."""
    from core.memory_initializer import initialize_agent_memory
    from core.paths import validate_agent_name
    from core.skills.registry import builtin_skills

    initialize_agent_memory("finn")
    with pytest.raises(ValidationError, match="invalid space name") as refused:
        builtin_skills()[tool].call("finn", arguments)
    assert len(str(refused.value)) < 400
    with pytest.raises(ValidationError, match="invalid agent name") as refused:
        validate_agent_name("a" * 100_000)
    assert len(str(refused.value)) < 400
