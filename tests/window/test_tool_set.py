"""The tool definitions fit a small window: the full set in 1,200 tokens, the core set when even that is too
much."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.engine.prompting.budgets import tools_tokens
from core.engine.toolbox.toolbox import CORE_TOOLS
from core.errors import ToolArgumentError, UnknownSkillError
from core.llm.model_window import UNLEARNED_CHARS_PER_TOKEN
from core.llm.window import DEFAULT_CHARS_PER_TOKEN, ContextWindow
from core.skills.registry import builtin_skills
from tests.ollama_server import count_tokens
from tests.window.conftest import write_config

FULL_SET_LIMIT = 1200
CORE_SET_LIMIT = 800
DOC = Path(__file__).resolve().parents[2] / "docs" / "context-window.md"


@pytest.fixture
def engine(agents_home, make_engine):
    """An engine on the offline backend: its window holds every tool."""
    return make_engine(offline=True)


def figures(definitions: list[dict]) -> dict[str, int]:
    """Tokens of ``definitions`` as the engine counts them (4 and 3 characters a token) and as the test
    server's tokenizer does."""
    return {"engine": tools_tokens(ContextWindow(4096, DEFAULT_CHARS_PER_TOKEN), definitions),
            "engine_unmeasured_model": tools_tokens(ContextWindow(4096, UNLEARNED_CHARS_PER_TOKEN),
                                                    definitions),
            "test_server": count_tokens(json.dumps(definitions))}


def test_the_full_tool_set_fits_in_1200_tokens(engine, capsys):
    """Every tool the engine offers (skills, workspace files, the memory tool) in at most 1,200 tokens."""
    definitions = engine.runtime.toolbox.definitions()
    names = [d["function"]["name"] for d in definitions]
    assert {"memory", "read_file", "write_file", "list_files"} | set(builtin_skills()) == set(names)
    full, core = figures(definitions), figures(engine.runtime.toolbox.core().definitions())
    with capsys.disabled():
        print(f"\nfull tool set ({len(names)} tools): {full}\ncore set ({len(CORE_TOOLS)} tools): {core}")
    assert full["engine"] <= FULL_SET_LIMIT
    # The core set is what a 4,096-token window can afford beside the prompt, the memory and the reply.
    assert core["engine_unmeasured_model"] <= CORE_SET_LIMIT


def test_schemas_carry_no_titles_defaults_or_empty_lists(engine):
    """What a model needs and nothing more: no titles, no defaults, no empty ``required``, no ``anyOf``
    null."""
    text = json.dumps(engine.runtime.toolbox.definitions())
    for waste in ('"title"', '"default"', '"required": []', '"anyOf"', '"additionalProperties": true'):
        assert waste not in text, waste


def test_the_memory_tool_offers_what_nothing_else_does(engine):
    """The engine's ``memory`` tool keeps expand and the user's rules; its search and profile actions, which
    recall_memory and the system prompt cover, are refused with the list of what it offers."""
    toolbox = engine.runtime.toolbox
    added = toolbox.call("memory", {"action": "constraint_add", "text": "Never use emojis."})
    assert [c["text"] for c in added["constraints"]] == ["Never use emojis."]
    listed = toolbox.call("memory", {"action": "constraint_list"})["constraints"]
    assert [c["text"] for c in listed] == ["Never use emojis."]
    assert "Never use emojis." in engine.runtime.identity().constraints, "the system prompt shows the rules"
    with pytest.raises(ToolArgumentError, match="available: expand, constraint_list"):
        toolbox.call("memory", {"action": "search", "query": "emojis"})


def test_a_tool_held_back_by_a_small_window_is_refused_by_name(engine):
    """A model that calls a tool outside the core set gets an error naming the core tools; nothing runs."""
    core = engine.runtime.toolbox.core()
    assert sorted(core.tools) == sorted(CORE_TOOLS)
    with pytest.raises(UnknownSkillError, match="only the core tools") as caught:
        core.call("write_file", {"path": "a.txt", "content": "x"})
    assert all(name in str(caught.value) for name in CORE_TOOLS)
    assert not (engine.paths.workspace_dir / "a.txt").exists()
    assert core.call("save_fact", {"key": "city", "value": "Lyon"}) == {"saved": "city",
                                                                        "category": "general"}


def test_an_8192_token_model_gets_every_tool(make_server, agents_home, make_engine):
    """The full set where the conversation keeps a quarter of the window beside it; the notice says
    nothing."""
    server = make_server(context_length=8192, default="Done.")
    write_config(agents_home, "llm:\n  backend: ollama\n")
    engine = make_engine()
    assert "core set" not in engine.notice
    assert engine.run("Say hello").ok
    names = {t["function"]["name"] for t in server.chat_requests[0]["tools"]}
    assert {"write_file", "log_activity", "memory"} <= names


def test_the_core_set_is_documented():
    """docs/context-window.md names exactly the core tools."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("- **The core tool set.**", 1)[1].split("\n- **", 1)[0]
    assert all(f"`{name}`" in section for name in CORE_TOOLS)
    assert set(CORE_TOOLS) <= set(builtin_skills())
