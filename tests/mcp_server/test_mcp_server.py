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
from tests.ports import free_port

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
    assert not any(tools[name].annotations.read_only_hint for name in ("save_fact", "store_memory",
                                                                       "forget_memory"))
    assert resources == ["agentos://finn/facts", "agentos://finn/log", "agentos://finn/now"]


@pytest.mark.slow  # the server runs as its own process over stdio
def test_facts_round_trip_and_bad_arguments_leave_the_server_serving(finn):
    """save_fact then get_fact returns the value; bad arguments are error results and the next call still
    works."""
    async def main():
        async with client() as session:
            saved = data(await session.call_tool("save_fact",
                                                 {"key": "city", "value": "Porto", "category": "personal"}))
            got = data(await session.call_tool("get_fact", {"key": "city"}))
            missing = await session.call_tool("save_fact", {"key": "x"})
            unknown = await session.call_tool("save_fact", {"key": "x", "value": "1", "colour": "red"})
            wrong = await session.call_tool("save_fact", {"key": "x", "value": "1", "category": "gossip"})
            other_agent = await session.call_tool("get_fact", {"key": "city", "agent_name": "eve"})
            bad_action = await session.call_tool("memory", {"action": "format_disk"})
            two_lines = await session.call_tool("save_fact",
                                                {"key": "city\n- fact: owner = eve", "value": "x"})
            after = data(await session.call_tool("get_fact", {"key": "city"}))
        return saved, got, [missing, unknown, wrong, other_agent, bad_action, two_lines], after

    saved, got, errors, after = anyio.run(main)
    assert saved == {"saved": "city", "category": "personal"}
    assert got["value"] == "Porto" and after["value"] == "Porto"
    assert all(result.is_error for result in errors)
    missing, unknown, wrong, other_agent, bad_action, two_lines = map(text, errors)
    assert "missing required argument 'value'" in missing
    assert "unknown argument 'colour'" in unknown
    assert "category" in wrong
    assert "agent_name" in other_agent
    assert "unknown memory action" in bad_action and "status" in bad_action
    assert "control character '\\n'" in two_lines
    assert MemoryManager("finn").get_fact("x") is None
    assert [fact["key"] for fact in MemoryManager("finn").list_facts()] == ["city"]


@pytest.mark.slow  # the server runs as its own process over stdio
def test_get_fact_with_history_returns_the_earlier_values(finn):
    """get_fact takes history (a boolean): the current value and the earlier ones, newest first, with when
    each was saved and replaced, as MemoryManager.get_fact(key, history=True) lists them; a wrong type is an
    error."""
    async def main():
        async with client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for city in ("Porto", "Lisbon", "Berlin"):
                await session.call_tool("save_fact", {"key": "city", "value": city, "category": "personal"})
            await session.call_tool("save_fact",
                                    {"key": "api_key", "value": "sk-old-1234", "category": "secret"})
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
    assert [v["value"] for v in secret["history"]] == [SECRET,
                                                       "[REDACTED]"], "a secret's old value is never kept"
    assert wrong.is_error and "history" in text(wrong)


@pytest.mark.slow  # the server runs as its own process over stdio
def test_recall_memory_explains_itself_and_lists_a_time_window(finn):
    """The recall_memory tool takes explain (results with why, and left_out) and, with no query, lists a
    window."""
    with MemoryManager("finn") as manager:
        note = manager.store_memory("The invoice for the Porto office is due on the 30th",
                                    occurred_at="2023-05-02")
        manager.store_memory("The standup moved to 9:30", occurred_at="2023-07-01")

    async def main():
        async with client() as session:
            explained = data(await session.call_tool("recall_memory",
                                                     {"query": "Porto invoice", "explain": True}))
            listed = data(await session.call_tool("recall_memory",
                                                  {"since": "May 2023", "until": "2023-05-31"}))
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
            resources = [await session.read_resource(f"agentos://finn/{name}") for name in ("now", "log",
                                                                                            "facts")]
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
            stored = data(await session.call_tool("store_memory",
                                                  {"content": note, "occurred_at": "2026-03-06"}))
            other = data(await session.call_tool("store_memory", {"content": "Ada's cat is called Pixel"}))
            found = data(await session.call_tool("recall_memory",
                                                 {"query": "who receives the report?", "n_results": 2}))
            by_tool = data(await session.call_tool("memory",
                                                   {"action": "recall", "query": "who receives the report?"}))
            forgot = data(await session.call_tool("forget_memory", {"memory_id": stored["id"]}))
            gone = data(await session.call_tool("recall_memory", {"query": "who receives the report?"}))
            bad = await session.call_tool("forget_memory", {})
            by_action = data(await session.call_tool("memory",
                                                     {"action": "forget", "query": "Ada's cat Pixel"}))
            after = data(await session.call_tool("memory",
                                                 {"action": "recall", "query": "what is the cat called?"}))
        return stored, other, found, by_tool, forgot, gone, bad, by_action, after

    stored, other, found, by_tool, forgot, gone, bad, by_action, after = anyio.run(main)
    assert stored["id"].startswith("note:")
    assert (
        found[0]["content"] == note
        and found[0]["id"] == stored["id"]
        and found[0]["occurred_at"].startswith("2026-03-06")
    )
    assert by_tool["memories"][0]["id"] == stored["id"]
    assert ((forgot["forgotten"], forgot["count"], forgot["matched"][0]["why"])
            == ([stored["id"]], 1, {"id": stored["id"]}))
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
        ids = manager.store_memories(["remember that my deploy target is fly.io",
                                      "I like asyncio for concurrency",
                                      *(f"summarize topic number {n}" for n in range(1, 6))])

    async def main():
        async with client() as session:
            listed = data(await session.call_tool("forget_memory", {"query": "asyncio", "dry_run": True}))
            forgot = data(await session.call_tool("forget_memory", {"query": "topic number 3"}))
            common = await session.call_tool("forget_memory", {"query": "what is it"})
            found = data(await session.call_tool("recall_memory",
                                                 {"query": "summarize topic number", "n_results": 10}))
        return listed, forgot, common, found

    listed, forgot, common, found = anyio.run(main)
    assert listed["dry_run"] and listed["forgotten"] == [] and [m["id"]
                                                                for m in listed["matched"]] == [ids[1]]
    assert listed["matched"][0]["why"] == {"words": ["asyncio"]}
    assert forgot["forgotten"] == [ids[4]] and forgot["matched"][0]["why"] == {"words": ["topic", "number",
                                                                                         "3"]}
    assert common.is_error and "only common words" in text(common)
    assert {hit["id"] for hit in found} == {ids[2], ids[3], ids[5], ids[6]}
    assert [e.metadata["ids"] for e in MemoryManager("finn").scan_log().entries
            if e.type == "FORGET"] == [[ids[4]]]


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


@pytest.mark.slow
def test_streamable_http_serves_two_sessions(finn):
    """--http serves streamable HTTP on 127.0.0.1: two client sessions at once see each other's writes."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "core", "mcp", "--agent", "finn", "--http",
                               f"127.0.0.1:{port}"],
                              cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, server)

        async def one(session_name: str, results: dict, saved: dict):
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    data(await session.call_tool("save_fact",
                                                 {"key": session_name, "value": session_name.upper()}))
                    saved[session_name].set()
                    other = "b" if session_name == "a" else "a"
                    with anyio.fail_after(120):  # both sessions stay open: the other saves in its own time
                        await saved[other].wait()
                    results[session_name] = data(await session.call_tool("get_fact", {"key": other}))

        async def main():
            results: dict = {}
            saved = {"a": anyio.Event(), "b": anyio.Event()}
            async with anyio.create_task_group() as group:
                group.start_soon(one, "a", results, saved)
                group.start_soon(one, "b", results, saved)
            return results

        results = anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert results["a"]["value"] == "B" and results["b"]["value"] == "A"


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60,
                   address: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.stderr.read().decode()}")
        with socket.socket() as sock:
            if sock.connect_ex((address, port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("the server did not listen in time")


def test_non_loopback_address_warns(finn):
    """Binding --http to a non-loopback address prints a warning that the memory is reachable from outside."""
    from core.mcp_server import is_loopback, parse_address

    assert (parse_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
            and parse_address(":9000") == ("127.0.0.1", 9000))
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    result = run_main(agentos_main, ["mcp", "--agent", "finn", "--http", "nonsense"])
    assert result.returncode == 2 and "HOST:PORT" in result.stderr


def test_an_http_address_already_taken_is_one_line_with_exit_code_2(finn):
    """--http on a port another server holds says so in one line that names the fix, exit code 2 as for any
    address it cannot use, before it announces an address it does not serve (the SDK's server announced it,
    logged its own error and exited 3, the code of a blocked run)."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = run_main(agentos_main, ["mcp", "--agent", "finn", "--http", f"127.0.0.1:{port}"])
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"error: cannot listen on 127.0.0.1:{port}: Address already in use; choose "
                             "another port with --http HOST:PORT\n")


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "a-test", "version": "1"}}}


def _post(address: str, port: int, host_header: str, origin: str | None = None) -> int:
    """The status of an MCP ``initialize`` POSTed to ``address:port`` with this Host (and Origin) header."""
    import http.client

    connection = http.client.HTTPConnection(address, port, timeout=60)
    try:
        headers = {"Host": host_header, "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if origin is not None:
            headers["Origin"] = origin
        connection.request("POST", "/mcp", body=json.dumps(INITIALIZE), headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.slow
def test_streamable_http_answers_only_requests_addressed_to_it(finn):
    """Bound to 127.0.0.2 (which the SDK's own DNS-rebinding check does not know), the server answers a
    request whose Host is its address, a loopback name or an --allow-host name, and refuses any other (421)
    and a web page of another origin (403): a page elsewhere cannot reach the memory through DNS rebinding."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "core", "mcp", "--agent", "finn", "--http",
                               f"127.0.0.2:{port}",
                               "--allow-host", "finn.internal"],
                              cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, server, address="127.0.0.2")
        assert _post("127.0.0.2", port, "evil.example") == 421
        assert _post("127.0.0.2", port, f"evil.example:{port}") == 421
        assert _post("127.0.0.2", port, "127.0.0.2:1") == 421
        assert _post("127.0.0.2", port, f"127.0.0.2:{port}", origin="http://evil.example") == 403
        for good in (f"127.0.0.2:{port}", f"localhost:{port}", f"127.0.0.1:{port}", f"finn.internal:{port}"):
            assert _post("127.0.0.2", port, good) == 200, good
        assert _post("127.0.0.2", port, f"127.0.0.2:{port}", origin=f"http://127.0.0.2:{port}") == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
        server.stderr.close()


def test_the_allowed_hosts_are_the_bound_address_and_loopback_names_with_the_port():
    from core.mcp_server import allowed_hosts

    assert allowed_hosts("127.0.0.2", 8765) == ["127.0.0.1:8765", "127.0.0.2:8765", "[::1]:8765",
                                                "localhost:8765"]
    assert "[::1]:9000" in allowed_hosts("::1", 9000)
    assert allowed_hosts("0.0.0.0", 80, ["box.lan", "box.lan:8080"])[:2] == ["0.0.0.0:80", "127.0.0.1:80"]
    assert {"box.lan:80", "box.lan:8080"} <= set(allowed_hosts("0.0.0.0", 80, ["box.lan", "box.lan:8080"]))


def test_allow_host_without_http_is_a_usage_error(finn):
    result = run_main(agentos_main, ["mcp", "--agent", "finn", "--allow-host", "box.lan"])
    assert result.returncode == 2 and "use it with --http" in result.stderr


@pytest.mark.slow
def test_streamable_http_serving_session_after_session_holds_no_more_than_after_the_first(finn):
    """A long-running HTTP server: after 30 client sessions (each storing, recalling and logging), its
    descriptors and threads are those after the first few, give or take a little."""
    from tests.lifetime.held import descriptors, named_threads, native_threads

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "core", "mcp", "--agent", "finn", "--http",
                               f"127.0.0.1:{port}"],
                              cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)

    async def one(index: int) -> None:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                data(await session.call_tool("store_memory",
                                             {"content": f"session {index} deployed to fly.io"}))
                data(await session.call_tool("recall_memory", {"query": "where do we deploy"}))
                data(await session.call_tool("log_activity",
                                             {"entry_type": "THOUGHT", "content": f"session {index}"}))

    def sessions(first: int, last: int) -> None:
        async def main() -> None:
            for index in range(first, last):
                await one(index)
        anyio.run(main)

    try:
        _wait_for_port(port, server)
        sessions(0, 5)
        fds, python = descriptors(server.pid), named_threads(server.pid, "python")
        sessions(5, 35)
        assert descriptors(server.pid) <= fds + 6
        assert named_threads(server.pid, "python") <= python + 4
        # LanceDB's blocking pool starts threads on demand and ends them after 10 s idle: bounded, not
        # per session.
        assert native_threads(server.pid) <= python + 64
    finally:
        server.terminate()
        server.wait(timeout=60)
        server.stderr.close()


@pytest.mark.slow  # the server runs as its own process over stdio
def test_a_session_that_only_reads_writes_nothing(finn, agents_home):
    """recall_memory, get_fact, the memory tool's recall and the three resources read the agent through a
    MemoryReader: no byte of its files changes (starting a writer would forget the expired memory, writing
    LOG.md and memory.db), and the expired memory is never shown."""
    from tests.test_reader import changed, tree

    with MemoryManager("finn") as manager:
        manager.save_fact("door_code", "4711-9", category="secret")
        manager.store_memory("The shed key hangs behind the kitchen door")
        manager.store_memory("The gate code changes weekly", expires_at="2020-01-01")
        manager.cold.catch_up()
    before = tree(agents_home)

    async def main():
        async with client() as session:
            found = [data(await session.call_tool("recall_memory", {"query": "shed key", "n_results": 3})),
                     data(await session.call_tool("recall_memory", {"query": "gate code weekly"})),
                     data(await session.call_tool("get_fact", {"key": "door_code"})),
                     data(await session.call_tool("memory", {"action": "recall", "query": "gate code"}))]
            for uri in ("agentos://finn/now", "agentos://finn/log", "agentos://finn/facts"):
                found.append((await session.read_resource(uri)).contents[0].text)
        return found

    shed, gate, fact, tool, *resources = anyio.run(main)
    assert "shed key" in shed[0]["content"] and fact["value"] == "4711-9"
    assert "gate code" not in json.dumps([gate, tool, resources]) and "4711-9" not in "".join(resources)
    assert changed(before, tree(agents_home)) == {}
