"""Nodes re-run after a kill do not redo what LOG.md shows they finished."""

from __future__ import annotations

from core.engine.nodes.tools import tools

COUNTER_SKILL = '''
from pathlib import Path
from core.paths import AgentPaths
from core.skills.base import skill_metadata


def execute(agent_name: str, amount: int) -> dict:
    """Add to a counter file.

    Args:
        amount: how much to add.
    """
    path = AgentPaths.for_agent(agent_name).root / "counter.txt"
    value = int(path.read_text()) if path.exists() else 0
    path.write_text(str(value + amount))
    return {"value": value + amount}


SKILL_METADATA = skill_metadata(execute, name="add_to_counter")
'''


def test_rerun_tools_node_reuses_logged_results(agents_home, make_engine):
    """Running the tools node twice on the same checkpointed state executes a side-effecting call once."""
    skills = agents_home / "finn" / "skills"
    skills.mkdir(parents=True)
    (skills / "add_to_counter.py").write_text(COUNTER_SKILL, encoding="utf-8")
    engine = make_engine(offline=True)
    state = {"turn_id": "t1", "messages": [{"role": "user", "content": "count"}], "errors": [], "retries": 0,
             "pending_tool_calls": [{"id": "t1:0:0", "name": "add_to_counter", "arguments": {"amount": 5}},
                                    {"id": "t1:0:1", "name": "list_files", "arguments": {}}]}
    first = tools(state, engine.runtime)
    second = tools(state, engine.runtime)  # what LangGraph does when the process died inside this node

    assert (agents_home / "finn" / "counter.txt").read_text() == "5"
    assert first["messages"] == second["messages"]
    assert '"value": 5' in second["messages"][1]["content"]
