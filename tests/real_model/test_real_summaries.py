"""LOG.md compaction and an LCM compaction summarised by a real model, constrained to the summary's JSON
schema."""

from __future__ import annotations

import pytest

from core.llm.backend import generate_with
from core.llm.openai_backend import OpenAIBackend
from core.memory.provider import CompactionMode, Message, Session
from tests.real_model.conftest import MODEL_TIMEOUT_S, configure

pytestmark = pytest.mark.timeout(3600)  # a real model on 2 cores: minutes, not seconds

SAID_ON = "2026-11-29"
"""The day of the conversation's messages, each at a fixed minute: the summarizer's input shows each message's
time, and a 135M model's summary moves with any change of its input (at some moments it wrote timestamps
until its reply was cut, and nothing was summarised), so the input is the same at every run."""

STEPS = ["Read the asyncio documentation: the event loop runs coroutines and callbacks.",
         "Wrote notes on async and await: a coroutine pauses at await until the awaited task is done.",
         "Compared asyncio.gather and asyncio.wait for running tasks at the same time.",
         "Tried asyncio.run in a small script: it creates the loop, runs main() and closes the loop.",
         "Listed pitfalls: blocking calls freeze the loop; use run_in_executor for them."]


def test_a_log_md_compaction_is_summarised_by_the_model(llama_server, agents_home):
    """LOG.md compacted with the run's model: the SUMMARY entry holds the model's own text (asked with
    response_format and the summary's schema, which llama-server enforces), the method recorded is ``llm`` (or
    ``llm-aggressive`` when its first answer was empty or past 150% of the target length: the prompt holds the
    entries' times, so the model's text differs from run to run)."""
    server = llama_server(8192)
    configure(agents_home, server, memory={"auto_compact": False})
    from core.memory_manager import MemoryManager

    memory = MemoryManager("finn")
    backend = OpenAIBackend(server.model, server.url, timeout_s=MODEL_TIMEOUT_S,
                            max_reply_tokens=server.max_reply)
    memory.compaction.summary_llm = generate_with(backend)
    for step in STEPS * 4:
        memory.append_log("THOUGHT", step)
    report = memory.compact_log()
    memory.close()

    assert report.done and report.summary_method in ("llm", "llm-aggressive")
    summary = MemoryManager("finn").read_log(5)[0]
    assert summary["type"] == "SUMMARY" and summary["content"].strip()
    assert backend.constrained, "llama-server took response_format"
    assert backend.calls and all(call.usage.get("prompt_tokens") for call in backend.calls)


def test_an_lcm_compaction_is_summarised_by_the_model(llama_server, agents_home):
    """The LCM provider compacts a conversation with the real model: each summary is the model's text, every
    message stays reachable from the summaries, and the compaction's outcome says what it did."""
    from core.config import load_config
    from core.memory.storage import open_database
    from core.paths import AgentPaths
    from core.plugins.memory import open_provider
    from core.plugins.memory.lcm import LLMSummarizer

    server = llama_server(8192)
    configure(agents_home, server)
    backend = OpenAIBackend(server.model, server.url, timeout_s=MODEL_TIMEOUT_S,
                            max_reply_tokens=server.max_reply)
    paths = AgentPaths.for_agent("finn")
    paths.memory_dir.mkdir(parents=True, exist_ok=True)
    provider = open_provider("lcm", open_database(paths), summarizer=LLMSummarizer(generate_with(backend)),
                             config=load_config(paths).provider)
    session = Session(id="finn:main", agent_id="finn", user_id="local", channel="cli")
    try:
        provider.bootstrap(session)
        for n, step in enumerate(STEPS * 3):  # at fixed times: the summarizer reads them
            said, noted = f"{SAID_ON}T09:{n:02d}:00.000Z", f"{SAID_ON}T09:{n:02d}:30.000Z"
            provider.append(session, [Message("user", f"Turn {n}: {step}", created_at=said),
                                      Message("assistant", "Noted.", created_at=noted)])
        result = provider.compact(session, CompactionMode.FULL)
        summaries = [m for m in provider.assemble(session, 100_000, 2) if m.summary_id]
    finally:
        provider.close()

    assert result.messages_compacted > 0 and result.leaf_summaries_created > 0
    assert result.tokens_after < result.tokens_before
    assert summaries and all(m.content.strip() for m in summaries)
    assert backend.constrained and len(backend.calls) >= result.leaf_summaries_created
