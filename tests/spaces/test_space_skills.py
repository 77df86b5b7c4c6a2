"""The publish_memory and recall_memory skills, in process and through the MCP server, enforce membership."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from core.errors import PermissionDeniedError, SecretContentError, ToolArgumentError
from core.memory.files.log_file import scan_bytes
from core.memory.spaces import Space
from core.memory_initializer import initialize_agent_memory
from core.memory_manager import MemoryManager
from core.skills.registry import builtin_skills

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def team(agents_home: Path) -> Path:
    for name in ("researcher", "writer", "outsider"):
        initialize_agent_memory(name)
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    return agents_home


def test_publish_and_recall_skills_bind_the_agent_and_enforce_membership(team):
    skills = builtin_skills()
    publish, recall = skills["publish_memory"], skills["recall_memory"]
    assert "agent_name" not in json.dumps(publish.parameters) and "space" in publish.parameters["properties"]
    published = publish.call("researcher",
                             {"space": "research", "content": "Otters hold hands while sleeping"})
    assert published == {"id": "space:research:1"}
    with pytest.raises(PermissionDeniedError):
        publish.call("writer", {"space": "research", "content": "a draft"})
    with pytest.raises(PermissionDeniedError):
        publish.call("outsider", {"space": "research", "content": "an intrusion"})
    with MemoryManager("writer") as writer:
        writer.save_fact("wifi", "correct-horse-battery", "secret")
    with pytest.raises(SecretContentError):
        publish.call("researcher", {"space": "research", "content": "wifi: correct-horse-battery"})
    with pytest.raises(ToolArgumentError):
        publish.call("researcher", {"space": "", "content": "x"})
    hits = recall.call("writer", {"query": "otters sleeping", "spaces": ["research"]})
    assert [(h["space"], h["author"]) for h in hits] == [("research", "researcher")]
    assert recall.call("writer", {"query": "otters sleeping", "spaces": []}) == []
    with pytest.raises(PermissionDeniedError):
        recall.call("outsider", {"query": "otters", "spaces": ["research"]})
    journal = scan_bytes((team / "spaces" / "research" / "LOG.md").read_bytes(), "journal").entries
    assert [e.content for e in journal] == ["Otters hold hands while sleeping"]


async def _call(agent: str, calls: list[tuple[str, dict]]) -> list:
    params = StdioServerParameters(command=sys.executable, args=["-m", "core", "mcp", "--agent", agent],
                                   env=dict(os.environ), cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def _text(result) -> str:
    return "".join(block.text for block in result.content)


@pytest.mark.slow  # the server runs as its own process over stdio
def test_the_mcp_server_offers_publish_and_recall_with_membership_enforced(team):
    published, = anyio.run(_call, "researcher",
                           [("publish_memory", {"space": "research", "content": "Otters use rocks"})])
    assert not published.is_error and json.loads(_text(published)) == {"id": "space:research:1"}
    denied, found = anyio.run(_call, "writer", [
        ("publish_memory", {"space": "research", "content": "a draft"}),
        ("recall_memory", {"query": "otters rocks", "spaces": ["research"]})])
    assert denied.is_error and "may only read" in _text(denied)
    assert [(h["space"], h["author"]) for h in json.loads(_text(found))] == [("research", "researcher")]
    refused, = anyio.run(_call, "outsider", [("recall_memory", {"query": "otters", "spaces": ["research"]})])
    assert refused.is_error and "not a member" in _text(refused)
