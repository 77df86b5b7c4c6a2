"""The model is asked the user's request, not the memory block: read back from the template the server
renders."""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime, timezone

import pytest

from core.engine.prompting.system_prompt import PromptExtras
from core.llm.openai_backend import openai_messages
from tests.real_model.conftest import configure, stop_clock

pytestmark = pytest.mark.timeout(1800)  # a real model on 2 cores: minutes, not seconds

REQUEST = "What is the capital of France? Answer in one word."
WRITTEN_AT = datetime(2026, 11, 29, 9, 30, tzinfo=timezone.utc)
"""The one moment every entry and NOW.md are written at: the memory block shows their times, and a 135M
model's answer moves with any change of its prompt (at another minute it once wrote headings instead of an
answer), so the prompt is the same at every run."""


def test_the_request_is_the_last_text_the_model_reads_and_it_answers_it(llama_server, agents_home,
                                                                        make_engine, monkeypatch):
    """The engine's planner prompt, as llama-server renders it (/apply-template): the system prompt and the
    tool definitions, the memory block as a user-side message, then the request as the last user turn before
    the assistant's: the text the model answers. SmolLM2 asked with the memory block after the request
    answered the block (Markdown headings, '#\\n\\n##...'); asked this way it answers the question."""
    stop_clock(monkeypatch, WRITTEN_AT)
    server = llama_server(8192)
    configure(agents_home, server)
    engine = make_engine()
    engine.manager.save_fact("city", "Lisbon", "personal")
    state = {"messages": [{"role": "user", "content": REQUEST}], "turn_id": "t1", "task": REQUEST}
    prompt = engine.runtime.context.build(state, PromptExtras(request=REQUEST))
    messages = openai_messages(prompt.messages)

    rendered = server.apply_template(messages, prompt.tools)
    turns = rendered.split("<|im_start|>")
    assert turns[-1] == "assistant\n", "the prompt ends where the model's reply begins"
    assert turns[-2] == f"user\n{REQUEST}<|im_end|>\n", "the request is the last turn the model reads"
    assert turns[-3].startswith("user\n# Memory") and "city (personal): Lisbon" in turns[-3]
    assert turns[1].startswith("system\n# AgentOS") and "<tools>" in turns[1]

    # Evaluated whole (no cache of an earlier test's prompt): the same prompt, the same answer.
    body = {"model": server.model, "messages": messages, "max_tokens": 24, "temperature": 0,
            "cache_prompt": False}
    request = urllib.request.Request(f"{server.url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        reply = json.loads(response.read())["choices"][0]["message"]["content"]
    assert "Paris" in reply, reply
