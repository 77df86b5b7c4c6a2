"""The MCP server of an agent's memory, driven by the official MCP Python client over stdio and HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from core.commands import main as agentos_main
from core.memory_initializer import initialize_agent_memory
from core.memory_manager import MemoryManager
from core.skills.registry import builtin_skills
from tests.inprocess import run_main

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-9f8e7d6c5b4a"


@pytest.fixture
def finn(agents_home: Path) -> str:
    """Agent finn, created in the test's home."""
    initialize_agent_memory("finn")
    return "finn"


@asynccontextmanager
async def client(agent: str = "finn"):
    """An initialised MCP client session to ``agentos mcp --agent AGENT`` run as a subprocess over stdio."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "core", "mcp", "--agent", agent],
                                   env=dict(os.environ), cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result) -> str:
    return "".join(block.text for block in result.content)


def data(result):
    assert not result.is_error, text(result)
    return json.loads(text(result))


def run(main) -> None:
    anyio.run(main)


@pytest.mark.slow  # the server runs as its own process over stdio
def test_tools_and_resources_have_the_engines_schemas(finn):
    """The server lists every skill once with its own schema (store_memory and forget_memory among them), the
    memory tool with its recall and forget actions, and three resources."""
    async def main():
        async with client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            resources = sorted(str(r.uri) for r in (await session.list_resources()).resources)
        return tools, resources

    tools, resources = anyio.run(main)
    skills = builtin_skills()
    assert set(tools) == set(skills) | {"memory"} and {"store_memory", "forget_memory"} <= set(skills)
    for name, skill in skills.items():
        assert tools[name].input_schema == skill.parameters and tools[name].description == skill.description
        assert "agent_name" not in json.dumps(tools[name].input_schema)
    actions = set(tools["memory"].input_schema["properties"]["action"]["enum"])
    assert actions >= {"status", "search", "expand", "recall", "forget"}
    assert tools["get_fact"].annotations.read_only_hint and tools["recall_memory"].annotations.read_only_hint
    assert not any(tools[name].annotations.read_only_hint for name in ("save_fact", "store_memory", "forget_memory"))
    assert resources == ["agentos://finn/facts", "agentos://finn/log", "agentos://finn/now"]


@pytest.mark.slow  # the server runs as its own process over stdio
def test_facts_round_trip_and_bad_arguments_leave_the_server_serving(finn):
    """save_fact then get_fact returns the value; bad arguments are error results and the next call still works."""
    async def main():
        async with client() as session:
            saved = data(await session.call_tool("save_fact", {"key": "city", "value": "Porto", "category": "personal"}))
            got = data(await session.call_tool("get_fact", {"key": "city"}))
            missing = await session.call_tool("save_fact", {"key": "x"})
            unknown = await session.call_tool("save_fact", {"key": "x", "value": "1", "colour": "red"})
            wrong = await session.call_tool("save_fact", {"key": "x", "value": "1", "category": "gossip"})
            other_agent = await session.call_tool("get_fact", {"key": "city", "agent_name": "eve"})
            bad_action = await session.call_tool("memory", {"action": "format_disk"})
            after = data(await session.call_tool("get_fact", {"key": "city"}))
        return saved, got, [missing, unknown, wrong, other_agent, bad_action], after

    saved, got, errors, after = anyio.run(main)
    assert saved == {"saved": "city", "category": "personal"}
    assert got["value"] == "Porto" and after["value"] == "Porto"
    assert all(result.is_error for result in errors)
    missing, unknown, wrong, other_agent, bad_action = map(text, errors)
    assert "missing required argument 'value'" in missing
    assert "unknown argument 'colour'" in unknown
    assert "category" in wrong
    assert "agent_name" in other_agent
    assert "unknown memory action" in bad_action and "status" in bad_action
    assert MemoryManager("finn").get_fact("x") is None


@pytest.mark.slow  # the server runs as its own process over stdio
def test_get_fact_with_history_returns_the_earlier_values(finn):
    """get_fact takes history (a boolean): the current value and the earlier ones, newest first, with when each
    was saved and replaced, as MemoryManager.get_fact(key, history=True) lists them; a wrong type is an error."""
    async def main():
        async with client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for city in ("Porto", "Lisbon", "Berlin"):
                await session.call_tool("save_fact", {"key": "city", "value": city, "category": "personal"})
            await session.call_tool("save_fact", {"key": "api_key", "value": "sk-old-1234", "category": "secret"})
            await session.call_tool("save_fact", {"key": "api_key", "value": SECRET, "category": "secret"})
            plain = data(await session.call_tool("get_fact", {"key": "city"}))
            with_history = data(await session.call_tool("get_fact", {"key": "city", "history": True}))
            secret = data(await session.call_tool("get_fact", {"key": "api_key", "history": True}))
            wrong = await session.call_tool("get_fact", {"key": "city", "history": "everything"})
        return tools["get_fact"].input_schema, plain, with_history, secret, wrong

    schema, plain, with_history, secret, wrong = anyio.run(main)
    assert schema["properties"]["history"]["type"] == "boolean" and schema["required"] == ["key"]
    assert plain == {"key": "city", "found": True, "value": "Berlin", "category": "personal"}
    assert with_history["value"] == "Berlin"
    assert with_history["history"] == MemoryManager("finn").get_fact("city", history=True)
    versions = with_history["history"]
    assert [(v["value"], v["category"]) for v in versions] == [("Berlin", "personal"), ("Lisbon", "personal"),
                                                                ("Porto", "personal")]
    assert versions[0]["replaced_at"] is None and versions[1]["replaced_at"] == versions[0]["saved_at"]
    assert versions[2]["replaced_at"] == versions[1]["saved_at"]
    assert [v["value"] for v in secret["history"]] == [SECRET, "[REDACTED]"], "a secret's old value is never kept"
    assert wrong.is_error and "history" in text(wrong)


@pytest.mark.slow  # the server runs as its own process over stdio
def test_recall_memory_explains_itself_and_lists_a_time_window(finn):
    """The recall_memory tool takes explain (results with why, and left_out) and, with no query, lists a window."""
    with MemoryManager("finn") as manager:
        note = manager.store_memory("The invoice for the Porto office is due on the 30th", occurred_at="2023-05-02")
        manager.store_memory("The standup moved to 9:30", occurred_at="2023-07-01")

    async def main():
        async with client() as session:
            explained = data(await session.call_tool("recall_memory", {"query": "Porto invoice", "explain": True}))
            listed = data(await session.call_tool("recall_memory", {"since": "May 2023", "until": "2023-05-31"}))
            bad = await session.call_tool("recall_memory", {"since": "2023-06-01", "until": "2023-05-01"})
        return explained, listed, bad

    explained, listed, bad = anyio.run(main)
    assert explained["results"][0]["id"] == note and "Porto" in explained["results"][0]["why"]["words"]
    assert "left_out" in explained
    assert [hit["id"] for hit in listed] == [note] and listed[0]["score"] is None
    assert bad.is_error and "is before since" in text(bad)


@pytest.mark.slow  # the server runs as its own process over stdio
def test_a_secret_comes_back_only_from_get_fact(finn):
    """A secret saved through MCP is redacted in every tool result and resource; get_fact alone returns it."""
    async def main():
        async with client() as session:
            await session.call_tool("save_fact", {"key": "api_key", "value": SECRET, "category": "secret"})
            outputs = [
                await session.call_tool("log_activity", {"content": f"Tried the key {SECRET} on the API"}),
                await session.call_tool("update_status", {"new_status": f"Testing {SECRET}"}),
                await session.call_tool("memory", {"action": "search", "query": "key"}),
                await session.call_tool("store_memory", {"content": f"The key is {SECRET}"}),
                await session.call_tool("recall_memory", {"query": "the API key"}),
                await session.call_tool("memory", {"action": "recall", "query": "the API key"}),
            ]
            resources = [await session.read_resource(f"agentos://finn/{name}") for name in ("now", "log", "facts")]
            secret = data(await session.call_tool("get_fact", {"key": "api_key"}))
        return outputs, resources, secret

    outputs, resources, secret = anyio.run(main)
    shown = [text(result) for result in outputs] + [r.contents[0].text for r in resources]
    assert not any(SECRET in part for part in shown)
    assert "[REDACTED]" in shown[-1] and "Tried the key [REDACTED]" in shown[-2]
    assert "The key is [REDACTED]" in shown[len(outputs) - 1]  # the memory tool's recall
    assert secret["value"] == SECRET
    memory = MemoryManager("finn")
    assert SECRET not in memory.paths.log_file.read_text(encoding="utf-8")
    assert SECRET not in memory.paths.now_file.read_text(encoding="utf-8")


@pytest.mark.slow  # the server runs as its own process over stdio
def test_store_recall_and_forget_a_note(finn):
    """A note stored through MCP is found by recall_memory and the memory tool's recall; forget_memory and the
    memory tool's forget action remove memories, which then are found no more."""
    note = "The quarterly report goes to Maria on Fridays"

    async def main():
        async with client() as session:
            stored = data(await session.call_tool("store_memory", {"content": note, "occurred_at": "2026-03-06"}))
            other = data(await session.call_tool("store_memory", {"content": "Ada's cat is called Pixel"}))
            found = data(await session.call_tool("recall_memory", {"query": "who receives the report?", "n_results": 2}))
            by_tool = data(await session.call_tool("memory", {"action": "recall", "query": "who receives the report?"}))
            forgot = data(await session.call_tool("forget_memory", {"memory_id": stored["id"]}))
            gone = data(await session.call_tool("recall_memory", {"query": "who receives the report?"}))
            bad = await session.call_tool("forget_memory", {})
            by_action = data(await session.call_tool("memory", {"action": "forget", "query": "Ada's cat Pixel"}))
            after = data(await session.call_tool("memory", {"action": "recall", "query": "what is the cat called?"}))
        return stored, other, found, by_tool, forgot, gone, bad, by_action, after

    stored, other, found, by_tool, forgot, gone, bad, by_action, after = anyio.run(main)
    assert stored["id"].startswith("note:")
    assert found[0]["content"] == note and found[0]["id"] == stored["id"] and found[0]["occurred_at"].startswith("2026-03-06")
    assert by_tool["memories"][0]["id"] == stored["id"]
    assert (forgot["forgotten"], forgot["count"], forgot["matched"][0]["why"]) == ([stored["id"]], 1, {"id": stored["id"]})
    assert all(hit["id"] != stored["id"] for hit in gone)
    assert bad.is_error and "memory_id" in text(bad)
    assert by_action["forgotten"] == [other["id"]] and after["memories"] == []
    forget_entries = [e for e in MemoryManager("finn").scan_log().entries if e.type == "FORGET"]
    assert len(forget_entries) == 2 and "Pixel" not in json.dumps([e.metadata for e in forget_entries])


@pytest.mark.slow  # the server runs as its own process over stdio
def test_forget_memory_by_query_takes_only_what_says_every_word_and_says_why(finn):
    """Through the official client: forget_memory with a query lists (dry_run) and forgets only the memories
    that say every word of it, each with the words; a query of common words is an error that names the fix."""
    with MemoryManager("finn") as manager:
        ids = manager.store_memories(["remember that my deploy target is fly.io", "I like asyncio for concurrency",
                                      *(f"summarize topic number {n}" for n in range(1, 6))])

    async def main():
        async with client() as session:
            listed = data(await session.call_tool("forget_memory", {"query": "asyncio", "dry_run": True}))
            forgot = data(await session.call_tool("forget_memory", {"query": "topic number 3"}))
            common = await session.call_tool("forget_memory", {"query": "what is it"})
            found = data(await session.call_tool("recall_memory", {"query": "summarize topic number", "n_results": 10}))
        return listed, forgot, common, found

    listed, forgot, common, found = anyio.run(main)
    assert listed["dry_run"] and listed["forgotten"] == [] and [m["id"] for m in listed["matched"]] == [ids[1]]
    assert listed["matched"][0]["why"] == {"words": ["asyncio"]}
    assert forgot["forgotten"] == [ids[4]] and forgot["matched"][0]["why"] == {"words": ["topic", "number", "3"]}
    assert common.is_error and "only common words" in text(common)
    assert {hit["id"] for hit in found} == {ids[2], ids[3], ids[5], ids[6]}
    assert [e.metadata["ids"] for e in MemoryManager("finn").scan_log().entries if e.type == "FORGET"] == [[ids[4]]]


@pytest.mark.slow  # the server runs as its own process over stdio
def test_two_clients_at_once_lose_no_write(finn):
    """Two servers on the same agent write concurrently: every LOG entry and fact is there, seqs unique."""
    async def writer(name: str):
        async with client() as session:
            for i in range(15):
                data(await session.call_tool("log_activity", {"content": f"{name} entry {i}"}))
                data(await session.call_tool("save_fact", {"key": f"{name}_{i}", "value": str(i)}))

    async def main():
        async with anyio.create_task_group() as group:
            group.start_soon(writer, "alpha")
            group.start_soon(writer, "beta")

    anyio.run(main)
    memory = MemoryManager("finn")
    entries = memory.scan_log().entries
    contents = [e.content for e in entries if e.type == "THOUGHT"]
    assert sorted(contents) == sorted(f"{n} entry {i}" for n in ("alpha", "beta") for i in range(15))
    seqs = [e.seq for e in entries]
    assert seqs == sorted(set(seqs))
    assert len(memory.list_facts()) == 30


def test_unknown_agent_is_refused_and_nothing_is_created(agents_home):
    """agentos mcp on an agent that does not exist exits 4 naming the agents; no folder is created."""
    initialize_agent_memory("finn")
    result = run_main(agentos_main, ["mcp", "--agent", "ghost"])
    assert result.returncode == 4, result.stderr
    assert "no agent named 'ghost'" in result.stderr and "finn" in result.stderr
    assert not (agents_home / "ghost").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_streamable_http_serves_two_sessions(finn):
    """--http serves streamable HTTP on 127.0.0.1: two client sessions at once see each other's writes."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "core", "mcp", "--agent", "finn", "--http", f"127.0.0.1:{port}"],
                              cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, server)

        async def one(session_name: str, results: dict):
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    data(await session.call_tool("save_fact", {"key": session_name, "value": session_name.upper()}))
                    await anyio.sleep(0.5)
                    other = "b" if session_name == "a" else "a"
                    results[session_name] = data(await session.call_tool("get_fact", {"key": other}))

        async def main():
            results: dict = {}
            async with anyio.create_task_group() as group:
                group.start_soon(one, "a", results)
                group.start_soon(one, "b", results)
            return results

        results = anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert results["a"]["value"] == "B" and results["b"]["value"] == "A"


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.stderr.read().decode()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("the server did not listen in time")


def test_non_loopback_address_warns(finn):
    """Binding --http to a non-loopback address prints a warning that the memory is reachable from outside."""
    from core.mcp_server import is_loopback, parse_address

    assert parse_address("127.0.0.1:8765") == ("127.0.0.1", 8765) and parse_address(":9000") == ("127.0.0.1", 9000)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    result = run_main(agentos_main, ["mcp", "--agent", "finn", "--http", "nonsense"])
    assert result.returncode == 2 and "HOST:PORT" in result.stderr
