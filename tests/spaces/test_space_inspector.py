"""The inspector lists the spaces beside the agents, with their members and timeline, and writes nothing."""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path

import pytest

from core.inspector.server import InspectorServer
from core.memory.spaces import Space
from core.memory_manager import MemoryManager


@pytest.fixture
def inspector(agents_home: Path):
    server = InspectorServer("127.0.0.1", 0, agents_home)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server.url
    server.shutdown()
    server.stop()


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def test_spaces_are_listed_with_members_and_timeline_and_nothing_is_written(agents_home, inspector):
    for name in ("researcher", "writer"):
        MemoryManager(name).close()
    space = Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    first = space.publish("researcher", "Otters hold hands while sleeping")
    space.publish("researcher", "Otters use rocks as tools")
    space.forget("researcher", [first])
    space.close()
    (agents_home / "spaces" / "research" / "index.db").unlink()
    before = snapshot(agents_home / "spaces")
    status, listing = get(inspector + "api/spaces")
    assert status == 200 and [s["name"] for s in listing["spaces"]] == ["research"]
    assert listing["spaces"][0]["members"] == {"researcher": "read-write", "writer": "read-only"}
    agents = get(inspector + "api/agents")[1]["agents"]
    assert sorted(a["name"] for a in agents) == ["researcher", "writer"]  # spaces/ is not listed as an agent
    status, shown = get(inspector + "api/spaces/research")
    assert status == 200 and shown["memories"] == 1
    assert [(e["author"], e["content"]) for e in shown["entries"]] == [("researcher",
                                                                        "Otters use rocks as tools")]
    assert get(inspector + "api/spaces/nowhere")[0] == 404
    assert get(inspector + "api/spaces/..%2F..%2Fetc")[0] == 404
    assert snapshot(agents_home / "spaces") == before  # read-only: not even the index is rebuilt


@pytest.mark.browser
def test_the_page_shows_a_space_beside_the_agents_with_members_and_timeline(agents_home, inspector, tmp_path):
    """In a real Chromium: the space's button is beside the agents'; opening it shows members and memories."""
    from tests.inspector.test_browser import ARGS, CHROMIUM, MISSING

    if not CHROMIUM.exists():
        pytest.skip(MISSING)
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    for name in ("researcher", "writer"):
        MemoryManager(name).close()
    with Space.create("research", {"researcher": "read-write", "writer": "read-only"}) as space:
        space.publish("researcher", "<b>Otters</b> hold hands while sleeping")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(tmp_path / "profile",
                                                                executable_path=str(CHROMIUM),
                                                                headless=True, args=ARGS)
        page = context.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(inspector)
        page.wait_for_selector("#agents button")
        page.click("#spaces button[data-space='research']")
        page.wait_for_selector("#space-timeline li")
        assert "researcher (read-write)" in page.inner_text("#space-members")
        assert "writer (read-only)" in page.inner_text("#space-members")
        # text, never HTML
        assert "researcher: <b>Otters</b> hold hands" in page.inner_text("#space-timeline")
        page.click("#agents button[data-agent='writer']")
        page.wait_for_selector("#space-view", state="hidden")
        context.close()
    assert problems == []
