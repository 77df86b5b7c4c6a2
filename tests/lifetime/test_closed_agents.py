"""Nothing of an agent is held after ``close()``: no descriptor, no thread, no memory that grows with the
number of agents a process has opened (a server that serves agents for weeks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.errors import ValidationError
from core.memory.shared import shared_manager
from core.memory_manager import MemoryManager
from tests.lifetime.held import agent_threads, open_under

ROOT = Path(__file__).resolve().parents[2]
MANY_AGENTS = Path(__file__).with_name("many_agents_child.py")


def use(manager: MemoryManager) -> None:
    """What a server does with an agent: every tier written and read, recall waiting for its vectors."""
    manager.update_now("Serving a request", objective="answer")
    manager.append_log("THOUGHT", "the user wants a summary")
    manager.save_fact("editor", "helix")
    manager.store_memory("the deploy target is fly.io")
    assert manager.recall_memory("deploy target", n_results=3)


def test_a_closed_agent_keeps_no_file_open_and_no_thread_running(agents_home: Path) -> None:
    """Its lock files (.lock, .compact.lock, .cold.lock), memory.db and the cold store are all closed."""
    for index in range(12):
        name = f"agent-{index}"
        with MemoryManager(name) as manager:
            use(manager)
            manager.compact_log(summary="what happened so far")  # the compaction lock and the archive's index
        assert open_under(agents_home / name) == []
        assert agent_threads(name) == []


def test_a_lock_file_closed_with_its_agent_is_opened_again_by_a_later_write(agents_home: Path) -> None:
    manager = MemoryManager("finn")
    manager.append_log("THOUGHT", "before")
    manager.close()
    assert open_under(agents_home / "finn") == []
    with MemoryManager("finn") as again:
        again.append_log("THOUGHT", "after")
        assert [e["content"] for e in again.read_log(2)] == ["before", "after"]
        assert str(agents_home / "finn" / "memory" / ".lock") in open_under(agents_home / "finn")


def test_a_closed_manager_refuses_every_call_and_opens_nothing_again(agents_home: Path) -> None:
    """A call after ``close()`` (its own methods and the reads it shares with MemoryReader) is a clear error:
    it opened memory.db and the lock files again, held them after close, and wrote to the folder without
    holding it in use (an import may be replacing it)."""
    manager = MemoryManager("finn")
    use(manager)
    manager.close()
    calls = {"append_log": lambda: manager.append_log("THOUGHT", "after close"),
             "update_now": lambda: manager.update_now("after close"),
             "save_fact": lambda: manager.save_fact("editor", "vim"),
             "get_fact": lambda: manager.get_fact("editor"),
             "read_log": lambda: manager.read_log(3),
             "recall_memory": lambda: manager.recall_memory("deploy target"),
             "now_state": manager.now_state}
    for name, call in calls.items():
        with pytest.raises(ValidationError, match=rf"finn was closed \({name} after close\(\)\): open it "
                                                  r"again with MemoryManager\('finn'\)"):
            call()
    assert manager.closed and open_under(agents_home / "finn") == []
    manager.close()  # still safe twice
    with MemoryManager("finn") as again:
        assert again.get_fact("editor") == "helix"
        assert "after close" not in [e["content"] for e in again.read_log(5)]


def test_a_closed_shared_manager_is_let_go_and_opened_anew(agents_home: Path) -> None:
    """The process's shared managers (the engine's, the skills', the MCP server's) forget one once it is
    closed."""
    first = shared_manager("finn")
    assert shared_manager("finn") is first
    first.close()
    second = shared_manager("finn")
    try:
        assert second is not first
        second.append_log("THOUGHT", "still writes")
    finally:
        second.close()
    assert open_under(agents_home / "finn") == []


@pytest.mark.slow
@pytest.mark.timeout(3300)  # the child's own bound (3,000 s) comes first
def test_a_process_opens_and_closes_a_thousand_agents_and_holds_no_more_than_after_the_first(
        agents_home: Path) -> None:
    """Descriptors, threads (Python's and native) and resident memory after 1,000 agents are those after the
    first 50, give or take a little: what a process holds does not grow with the agents it has served. The
    agents are served by a process of their own, so what the test worker holds does not count."""
    served = subprocess.run([sys.executable, str(MANY_AGENTS), "1000", "50"], cwd=ROOT, capture_output=True,
                            text=True, timeout=3000, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert served.returncode == 0, served.stderr[-4000:]
    report = json.loads(served.stdout.strip().splitlines()[-1])
    warm, end = report["warm"], report["end"]
    assert report["thread_errors"] == []
    assert report["open_under_home"] == []
    assert end["fds"] <= warm["fds"] + 4, "descriptors grew with the agents served"
    # LanceDB's blocking pool starts threads on demand and ends them after 10 s idle: a few more may be alive.
    assert end["native_threads"] <= warm["native_threads"] + 16, "native threads grew with the agents served"
    assert end["threads"] <= warm["threads"] + 1, end["thread_names"]
    # 950 agents leaking a lock's registry entry, a manager or a table handle each would be tens of MB.
    assert end["rss_kib"] - warm["rss_kib"] < 48 * 1024, \
        f"resident memory grew by {(end['rss_kib'] - warm['rss_kib']) // 1024} MiB"


def test_the_inspector_serving_many_agents_keeps_no_file_of_theirs_open(agents_home: Path) -> None:
    """The inspector reads agent after agent (pages, timelines, recall): between requests it holds none of
    their files, and once stopped it holds nothing of them."""
    import json
    import urllib.request

    from core.inspector.server import InspectorServer

    for index in range(8):
        with MemoryManager(f"a{index}") as manager:
            use(manager)
    server = InspectorServer("127.0.0.1", 0, agents_home)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    serving.start()
    try:
        for index in range(8):
            for route in ("", "/log", "/recall?q=deploy+target"):
                with urllib.request.urlopen(f"{server.url}api/agents/a{index}{route}", timeout=60) as answer:
                    assert answer.status == 200 and json.loads(answer.read())
        assert open_under(agents_home) == []
    finally:
        server.stop()
        server.shutdown()
        serving.join(timeout=60)
    assert open_under(agents_home) == []
    assert not serving.is_alive()


@pytest.mark.slow
def test_closed_agents_on_postgresql_leave_only_a_few_idle_pools(pg_home: Path) -> None:
    """Each agent's schema has its pool of connections (and psycopg_pool's threads): once its agent is closed
    it is kept idle for the next open, and only the few most recent idle ones stay open."""
    from core.memory.storage.postgres.pool import IDLE_POOLS, open_pools

    def serve(first: int, last: int) -> None:
        for index in range(first, last):
            with MemoryManager(f"a{index}") as manager:
                manager.append_log("THOUGHT", f"request {index}")
                manager.save_fact("seen", str(index))

    serve(0, 2)
    threads = threading.active_count()
    serve(2, 14)
    assert open_pools() <= IDLE_POOLS
    assert threading.active_count() <= threads + 4 * IDLE_POOLS, [t.name for t in threading.enumerate()]
    with MemoryManager("a3") as again:  # a pool closed as surplus opens again
        assert again.get_fact("seen") == "3"
