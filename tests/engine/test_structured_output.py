"""Summaries asked in a JSON shape (Ollama's ``format``, the OpenAI API's ``response_format``), read from the
replies small local models give;
``<think>`` blocks kept out of every text a model's reply becomes."""

from __future__ import annotations

import json

import pytest

from core.engine.conversation import handoff_summary
from core.llm.backend import generate_with
from core.llm.ollama_backend import OllamaBackend
from core.llm.openai_backend import OpenAIBackend
from core.llm.shapes import SummaryReply
from core.llm.structured import StructuredReplyError, ThinkFilter, parse_reply, strip_think
from core.memory.compaction.summarizer import LogSummarizer
from core.memory.files.log_format import LogEntry
from core.memory.provider import SummarizeOptions
from core.plugins.memory.lcm.summarizer import LLMSummarizer
from tests.ollama_server import ScriptedOllama, echo_schema, raw, verbatim

SCHEMA = SummaryReply.model_json_schema()
GOOD = "The user planned raised tomato beds."
SMALL_MODEL_REPLIES = {
    "bare": json.dumps({"summary": GOOD}),
    "fenced": f'```json\n{{"summary": "{GOOD}"}}\n```',
    "prose around": f'Sure! Here is the JSON you asked for:\n{{"summary": "{GOOD}"}}\nLet me know if you '
    f"need more.",
    "think first": f'<think>The user wants a summary. I should be brief.</think>\n{{"summary": "{GOOD}"}}',
    "think, fence": '<think>\nhmm {"summary": "not this"}\n</think>\n'
    f'```json\n{{"summary": "{GOOD}"}}\n```',
    "schema then answer": json.dumps(SCHEMA) + f'\n{{"summary": "{GOOD}"}}',
    "too deep, then answer": '{"summary": ' + "[" * 5000 + f'\n{{"summary": "{GOOD}"}}',
}


@pytest.mark.parametrize("kind", sorted(SMALL_MODEL_REPLIES))
def test_the_shape_is_read_from_what_small_models_write(kind):
    assert parse_reply(SMALL_MODEL_REPLIES[kind], SummaryReply).summary == GOOD


@pytest.mark.parametrize("reply, reason", [
    (json.dumps(SCHEMA), "echoed the JSON schema"),
    ("The user planned raised tomato beds.", "no JSON object"),
    ('{"summary": "<think>only thinking</think>  "}', "blank"),
    ('{"text": "wrong key"}', "summary: Field required"),
    ("<think>I will answer {\"summary\": \"x\"}</think>", "no JSON object"),
    ('{"summary": ' + "[" * 5000 + "]" * 5000 + "}", "no JSON object"),  # deeper than the parser follows
])
def test_a_reply_that_does_not_fit_the_shape_is_refused_with_the_reason(reply, reason):
    with pytest.raises(StructuredReplyError, match=reason):
        parse_reply(reply, SummaryReply)


def test_think_blocks_are_stripped_closed_unclosed_and_half():
    assert strip_think("<think>plan</think>Answer.") == "Answer."
    assert strip_think("Answer.<THINK>still thinking") == "Answer."
    assert strip_think("the template opened it</think>\nAnswer.") == "Answer."


def test_a_streamed_think_block_split_across_pieces_is_never_shown():
    text = "<think>secret plan</think>Hello there, <b>friend</b>."
    for size in (1, 2, 3, 5, 8):
        shown = ThinkFilter()
        out = "".join(shown.feed(text[i:i + size]) for i in range(0, len(text), size)) + shown.flush()
        assert out == "Hello there, <b>friend</b>.", size


@pytest.fixture(params=("ollama", "openai"))
def backend(request):
    """The scripted server and a backend on it: Ollama's API, then the OpenAI-compatible one
    (``response_format``)."""
    with ScriptedOllama() as server:
        kind = OllamaBackend if request.param == "ollama" else OpenAIBackend
        yield server, kind("llama3.1", host=server.host)


def _summary_requests(server):
    return [p for p in server.prompts if not p.tools]


def test_a_summary_is_asked_with_the_schema_as_format(backend):
    server, chat_backend = backend
    server.enqueue(verbatim(SMALL_MODEL_REPLIES["think, fence"]))
    assert generate_with(chat_backend)("Summarise: tomatoes.") == GOOD
    [asked] = _summary_requests(server)
    assert asked.format == SCHEMA
    assert '{"summary":' in asked.messages[-1]["content"], "the prompt names the shape too"


def test_a_reply_that_fails_the_shape_is_asked_again_once(backend):
    server, chat_backend = backend
    server.enqueue(echo_schema, verbatim(SMALL_MODEL_REPLIES["prose around"]))
    assert generate_with(chat_backend)("Summarise: tomatoes.") == GOOD
    assert [p.format for p in _summary_requests(server)] == [SCHEMA, SCHEMA]


def test_two_unfit_replies_fall_back_to_a_plain_request(backend):
    server, chat_backend = backend
    server.enqueue(echo_schema, verbatim("Just prose, no JSON."),
                   verbatim("<think>ok, plain text then</think>Raised tomato beds."))
    assert generate_with(chat_backend)("Summarise: tomatoes.") == "Raised tomato beds."
    asked = _summary_requests(server)
    assert [p.format for p in asked] == [SCHEMA, SCHEMA, None]
    assert '{"summary":' not in asked[-1].messages[-1]["content"]


def test_a_reply_cut_at_the_token_limit_is_not_asked_again_in_the_shape(backend):
    """A reply that stopped at the token limit (a small model's JSON summary that does not close in time)
    would stop there again: the prompt goes as plain text at once, one call saved."""
    server, chat_backend = backend
    server.enqueue(raw({"content": '{"summary": "Tomatoes want sun, deep watering and', "cut": True}),
                   verbatim("Raised tomato beds."))
    assert generate_with(chat_backend)("Summarise: tomatoes.") == "Raised tomato beds."
    assert [p.format for p in _summary_requests(server)] == [SCHEMA, None]


def test_a_constrained_server_reply_is_read(backend):
    """What Ollama's constrained decoding sends: the words in the shape."""
    server, chat_backend = backend
    server.enqueue("Raised tomato beds, planned.")
    assert generate_with(chat_backend)("Summarise: tomatoes.") == "Raised tomato beds, planned."


def test_log_md_summary_through_the_shape(backend):
    server, chat_backend = backend
    entries = [LogEntry(seq=i, ts="2026-01-31T12:00:00.000Z", type="observation",
                        content=(f"Step {i}: the garden needs sun, water, soil and compost to grow "
                                 "tomatoes. ") * 3)
               for i in range(1, 6)]
    server.enqueue(verbatim(SMALL_MODEL_REPLIES["think first"]))
    made = LogSummarizer(generate_with(chat_backend), target_tokens=60).summarize(entries)
    assert (made.text, made.method) == (GOOD, "llm")
    assert _summary_requests(server)[0].format == SCHEMA


def test_lcm_summary_through_the_shape(backend):
    server, chat_backend = backend
    text = "\n".join(f"user: step {i}, the garden needs sun, water and soil for tomatoes" for i in range(30))
    server.enqueue(verbatim(SMALL_MODEL_REPLIES["fenced"]))
    summary = LLMSummarizer(generate_with(chat_backend)).summarize(text, SummarizeOptions(target_tokens=40))
    assert summary == GOOD
    assert _summary_requests(server)[0].format == SCHEMA


def test_handoff_summary_through_the_shape(backend):
    server, chat_backend = backend
    server.enqueue(verbatim('<think>sections</think>```json\n{"summary": "## Goal\\nPlan a garden"}\n```'))
    assert handoff_summary(generate_with(chat_backend),
                           "user: plan a garden\nassistant: ok") == "## Goal\nPlan a garden"
    assert _summary_requests(server)[0].format == SCHEMA


def test_a_planner_reply_shows_and_keeps_no_think_block(backend):
    server, chat_backend = backend
    server.enqueue("<think>The user greets me; no tool is needed.</think>Hello! How can I help?")
    shown: list[str] = []
    reply = chat_backend.chat([{"role": "user", "content": "hi"}],
                                [{"type": "function", "function": {"name": "get_fact", "parameters": {}}}],
                                shown.append)
    assert reply.text == "Hello! How can I help?"
    assert "".join(shown) == "Hello! How can I help?"
    assert server.prompts[0].format is None, "a planner turn asks for no shape"


def test_a_server_that_refuses_response_format_is_asked_in_the_prompt_and_read(monkeypatch):
    """An OpenAI-compatible server without schemas answers ``response_format`` with HTTP 400: the same request
    goes again without it, the summary is read from the text the model wrote (the prompt asks for the shape),
    and the backend stops sending it."""
    with ScriptedOllama(response_format=False) as server:
        chat_backend = OpenAIBackend("llama3.1", host=server.host)
        server.enqueue(verbatim(SMALL_MODEL_REPLIES["prose around"]), verbatim(SMALL_MODEL_REPLIES["fenced"]))
        assert generate_with(chat_backend)("Summarise: tomatoes.") == GOOD
        assert chat_backend.constrained is False and chat_backend.structured
        assert generate_with(chat_backend)("Summarise: beans.") == GOOD
        bodies = [body["openai"] for body in server.chat_requests]
    assert ["response_format" in body for body in bodies] == [True, False, False]
    assert all('{"summary":' in body["messages"][-1]["content"]
               for body in bodies), "the prompt names the shape"
