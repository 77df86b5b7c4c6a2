"""Replies as small local models really make them: tool calls written as text, arguments checked by pydantic,
streaming to the terminal, and the offline backend's truthful ``blocked`` outcome."""

from __future__ import annotations

import enum
import io
import json
from typing import Literal, Optional

import pydantic
import pytest

from core.terminal import exit_codes
from core.errors import ToolArgumentError
from core.llm import text_tool_calls
from core.memory_manager import MemoryManager
from core.terminal.reply_display import ReplyDisplay
from core.skills.arguments import Arguments
from tests.engine.conftest import run_cli, write_config

OFFERED = ("save_fact", "get_fact", "recall_memory")


@pytest.mark.parametrize(
    "text",
    [
        # llama3.2: a bare object with "parameters"
        '{"name": "save_fact", "parameters": {"key": "city", "value": "Lisbon", "category": "personal"}}',
        # qwen2.5: <tool_call> tags with "arguments"
        '<tool_call>\n{"name": "save_fact", "arguments": {"key": "city", "value": "Lisbon", "category": '
        '"personal"}}\n</tool_call>',
        # a ```json fence
        '```json\n{"name": "save_fact", "arguments": {"key": "city", "value": "Lisbon", '
        '"category": "personal"}}\n```',
        # mistral: [TOOL_CALLS] and a list
        '[TOOL_CALLS] [{"name": "save_fact", "arguments": {"key": "city", "value": "Lisbon", "category": '
        '"personal"}}]',
        # the OpenAI shape, arguments as a JSON string
        '{"type": "function", "function": {"name": "save_fact", '
        '"arguments": "{\\"key\\": \\"city\\", \\"value\\": \\"Lisbon\\", \\"category\\": \\"personal\\"}"}}',
    ],
)
def test_each_text_form_is_read_as_a_tool_call(text):
    rest, calls = text_tool_calls.parse(text, OFFERED)
    assert rest == ""
    assert [(c.name, c.arguments) for c in calls] == [
        ("save_fact", {"key": "city", "value": "Lisbon", "category": "personal"})]


def test_a_remark_around_tags_stays_text_and_several_calls_are_read():
    text = ('I will save both.\n<tool_call>{"name": "save_fact", "arguments": {"key": "a", "value": '
            '"1"}}</tool_call><tool_call>{"name": "get_fact", "arguments": {"key": "b"}}</tool_call>')
    rest, calls = text_tool_calls.parse(text, OFFERED)
    assert rest == "I will save both."
    assert [c.name for c in calls] == ["save_fact", "get_fact"]


@pytest.mark.parametrize("text", [
    'Here is an example config: {"name": "save_fact", "arguments": {"key": "a"}} as you asked.',
    '{"name": "delete_everything", "arguments": {}}',               # not an offered tool
    '{"name": "save_fact", "arguments": {"key": "a"}, "note": 1}',  # not only a call
    '```json\n{"city": "Lisbon"}\n```',                             # JSON that is an answer
    '{"name": "save_fact", "arguments": "not json"}',
    'plain words',
    '```json\n{"name": ' + "[" * 5000 + "]" * 5000 + '}\n```',        # deeper than the parser follows
    '{"name": "save_fact", "arguments": "' + "[" * 5000 + '"}',
])
def test_text_that_only_shows_json_stays_text(text):
    assert text_tool_calls.parse(text, OFFERED) == (text, ())


def test_streamed_call_arguments_nested_too_deep_are_a_tool_argument_error():
    """An OpenAI-compatible server's call whose arguments nest deeper than the parser follows is refused as
    arguments that are not JSON (the engine shows the model the error); it was a RecursionError."""
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall, ChoiceDeltaToolCallFunction

    from core.llm.openai_backend import StreamedCalls

    calls = StreamedCalls()
    for piece in ('{"key": ', "[" * 5000, "]" * 5000 + "}"):
        calls.add(ChoiceDeltaToolCall(index=0, function=ChoiceDeltaToolCallFunction(
            name="save_fact" if piece.startswith("{") else None, arguments=piece)))
    with pytest.raises(ToolArgumentError, match="save_fact has arguments that are not JSON"):
        calls.finish()


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(pydantic.BaseModel):
    x: float
    y: float


def sample(agent_name: str, mode: Literal["fast", "slow"], colour: Colour, weights: dict[str, float],
           where: Point, tags: Optional[list[str]] = None, limit: int = 3) -> None:
    """A tool with every kind of argument."""


def test_pydantic_schema_describes_and_enforces_each_type():
    arguments = Arguments.of_function(sample, "sample", {"mode": "how fast"})
    schema = arguments.schema
    props = schema["properties"]
    assert "agent_name" not in props and "anyOf" not in json.dumps(schema), (
        "optional arguments are plain types"
    )
    assert sorted(schema["required"]) == ["colour", "mode", "weights", "where"]
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["description"] == "how fast"
    assert props["colour"]["enum"] == ["red", "blue"]
    assert props["weights"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["where"]["properties"] == {"x": {"type": "number"}, "y": {"type": "number"}}
    assert "$ref" not in json.dumps(schema) and "$defs" not in schema
    assert props["limit"] == {"type": "integer"}, "no default, no title: every token is sent with every call"
    left_out = arguments.validate({"mode": "fast", "colour": "red", "weights": {}, "where": {"x": 1, "y": 2}})
    assert left_out["limit"] == 3 and left_out["tags"] is None, "an argument left out takes its default"
    good = arguments.validate({"mode": "fast", "colour": "red", "weights": {"a": "0.5"},
                               "where": {"x": 1, "y": 2}, "limit": "7"})
    assert good["colour"] is Colour.RED and good["weights"] == {"a": 0.5} and good["limit"] == 7
    assert good["where"] == Point(x=1, y=2) and good["tags"] is None
    for bad, expected in [
        ({"mode": "medium", "colour": "red", "weights": {}, "where": {"x": 1, "y": 2}}, "mode"),
        ({"mode": "fast", "colour": "green", "weights": {}, "where": {"x": 1, "y": 2}}, "colour"),
        ({"mode": "fast", "colour": "red", "weights": {"a": "heavy"}, "where": {"x": 1, "y": 2}},
         "weights.a"),
        ({"mode": "fast", "colour": "red", "weights": {}, "where": {"x": 1}}, "where.y"),
        ({"mode": "fast", "colour": "red", "weights": {}, "where": {"x": 1, "y": 2}, "extra": 1}, "extra"),
        ({"mode": "fast", "colour": "red", "weights": {}, "where": {"x": 1, "y": 2}, "agent_name": "x"},
         "agent_name"),
        (["fast"], "JSON object"),
    ]:
        with pytest.raises(ToolArgumentError, match=expected):
            arguments.validate(bad)


def test_a_hand_written_schema_is_checked_with_jsonschema():
    arguments = Arguments.of_schema("shout", {"type": "object", "properties": {"text": {"type": "string"}},
                                              "required": ["text"], "additionalProperties": False})
    assert arguments.validate({"text": "hi"}) == {"text": "hi"}
    with pytest.raises(ToolArgumentError, match="required"):
        arguments.validate({})
    with pytest.raises(ToolArgumentError, match="not a valid JSON schema"):
        Arguments.of_schema("broken", {"type": "no-such-type"})


def test_a_tool_call_written_as_text_is_run_by_the_engine(server, api, make_engine):
    """The server's model writes the call as text in <tool_call> tags (qwen2.5): the fact is saved."""
    server.enqueue({"content": '<tool_call>{"name": "save_fact", "arguments": {"key": "city", "value": '
                               '"Lisbon", "category": "personal"}}</tool_call>'},
                   "Saved: your city is Lisbon.")
    engine = make_engine(backend_name=api)
    result = engine.run("Remember that I live in Lisbon")
    assert result.ok and result.tool_calls == 1
    assert engine.manager.facts.get("city").value == "Lisbon"


def test_an_invalid_call_is_answered_with_the_error_and_corrected(server, api, make_engine):
    """Bad arguments go back to the model as a tool result naming the field; its corrected call runs."""
    server.enqueue({"content": '{"name": "save_fact", "parameters": {"key": "city", "value": "Porto", '
                               '"category": "weird"}}'},
                   {"content": '{"name": "save_fact", "parameters": {"key": "city", "value": "Porto", '
                               '"category": "personal"}}'},
                   "Saved.")
    engine = make_engine(backend_name=api)
    result = engine.run("Remember that I live in Porto")
    assert result.ok and result.tool_calls == 2
    tool_results = [m for m in server.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert "category" in tool_results[0]["content"] and "error" in tool_results[0]["content"]
    assert engine.manager.facts.get("city").value == "Porto"


def test_the_reply_streams_and_the_spinner_stops_at_the_first_token(server, api, make_engine):
    """The backend asks for a stream; the display gets the text in pieces, a text tool call is held back."""
    server.enqueue({"content": '{"name": "get_fact", "arguments": {"key": "city"}}'},
                   "Your city is not saved yet, " + "and here is a long answer. " * 20)
    engine = make_engine(backend_name=api)
    out = io.StringIO()
    pieces: list[str] = []
    display = ReplyDisplay(out)

    def sink(piece: str) -> None:
        pieces.append(piece)
        display(piece)

    sink.end_reply = display.end_reply  # type: ignore[attr-defined]
    engine.runtime.on_text = sink
    result = engine.run("Where do I live?")
    display.finish(result.response)
    assert all(body.get("stream") is True for body in server.chat_requests)
    assert len(pieces) > 2, "the reply arrived in several chunks"
    assert '"get_fact"' not in out.getvalue(), "a tool call written as text is not shown"
    assert out.getvalue().count("Your city is not saved yet") == 1


def test_offline_open_task_is_blocked_and_resumed_with_a_model(agents_home, server):
    """Offline: RUN_END blocked, NOW blocked with the objective and a hint, exit 3; --resume with a model goes
    on."""
    blocked = run_cli("--agent", "finn", "--offline", "Write a market report on copper")
    assert blocked.returncode == exit_codes.BLOCKED == 3, blocked.stderr
    assert "blocked" in blocked.stderr
    memory = MemoryManager("finn")
    now = memory.now_state()
    assert now.status == "blocked" and "copper" in now.objective
    assert "run with a model" in memory.paths.now_file.read_text(encoding="utf-8")
    ends = [e for e in memory.read_log(50) if e["type"] == "RUN_END"]
    assert ends[-1]["metadata"]["outcome"] == "blocked"
    memory.close()
    server.enqueue("Here is the copper report.")
    write_config(agents_home, "llm:\n  backend: ollama\n")
    resumed = run_cli("--agent", "finn", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "copper report" in resumed.stdout
    system = server.rendered_prompts()[-1]
    assert "copper" in system, "the model was given the blocked objective"


def test_an_agents_own_system_md_replaces_the_built_in_instructions(server, agents_home, make_engine):
    from core.engine import prompts

    server.enqueue("Arr.")
    engine = make_engine()
    engine.paths.config_dir.mkdir(parents=True, exist_ok=True)
    (engine.paths.config_dir / "SYSTEM.md").write_text("You are a pirate archivist. Answer in one line.\n")
    assert engine.run("Hello").ok
    system = server.system_prompts()[-1]
    assert system.startswith("You are a pirate archivist.")
    assert prompts.load("SYSTEM")[:80] not in system


def test_recall_memory_skill_requires_the_agent():
    from core.skills.memory.scripts import recall_memory

    with pytest.raises(TypeError):
        recall_memory.execute(query="anything")


def test_a_reply_s_escape_sequences_are_shown_not_obeyed():
    """A model (perhaps led by a memory it read) replying with escape sequences: the terminal is shown them as
    ``\\x1b...``, whether streamed or printed at the end; the reply itself is kept whole."""
    out = io.StringIO()
    display = ReplyDisplay(out)
    reply = "Done.\x1b]52;c;ZXZpbA==\x07\x1b[2J Bye\tnow\n"
    for piece in (reply[:7], reply[7:20], reply[20:]):
        display(piece)
    display.finish(reply)
    assert out.getvalue() == "Done.\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J Bye\tnow\n"
    late = io.StringIO()
    ReplyDisplay(late).finish("\x1b]0;title\x07ok")
    assert late.getvalue() == "\\x1b]0;title\\x07ok\n"
