"""Summaries that fit the window: LOG.md compaction, LCM summaries and the session handoff against a small
model, through the real ``ollama`` client and a server that cuts prompts as Ollama does."""

from __future__ import annotations

import re
import threading

import pytest

from core.errors import BackendUnavailableError
from core.llm.fitting import BoundedModel, pack, reduce, room_chars
from core.memory.files.log_format import LogEntry
from core.memory.compaction.summarizer import LogSummarizer
from core.llm.window import ContextWindow
from core.errors import SummarizerError
from tests.engine.conftest import write_config
from tests.ollama_server import ScriptedOllama
from tests.window.conversation import summarising_model

FILLER = ("The agent read the quarterly notes, compared the supplier list with the ledger and wrote "
          "a short remark about the layout of the warehouse shelves and the colour of the labels")
MARKERS = [f"Decision {n}: the budget code is BX-{n}{n}{n}7" for n in range(1, 7)]


_INPUT = re.compile(r"^(?:Entries|Partial summaries|# Conversation[^\n]*|## (?:Messages|Summaries)):?\s*$",
                    re.MULTILINE)
_AT_MOST = re.compile(r"(?:at most|about)\s+(\d+)\s+tokens", re.IGNORECASE)


def small_model_reply(prompt: str) -> str:
    """What a small model answers to a summary prompt: it follows the instructions (length asked for) and
    summarises the text after the prompt's input heading, as far as the server let it see it."""
    starts = list(_INPUT.finditer(prompt))
    body = prompt[starts[-1].end():] if starts else prompt
    asked = _AT_MOST.search(prompt)
    target = int(asked.group(1)) if asked else 500
    return summarising_model(f"about {target * 3 // 4} tokens\n## Messages\n{body}")


@pytest.fixture
def small_model(monkeypatch):
    """A 4,096-token model that summarises what it was shown, as a small model does."""
    with ScriptedOllama(context_length=4096, default="Noted.") as server:
        server.summarizer = small_model_reply
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        yield server


def test_a_50kb_log_against_a_4096_token_model_is_summarised_whole(small_model, agents_home, manager):
    """50 KB of LOG.md: every summarizer prompt fits (none is cut), and facts from the first, middle and last
    entries are in the SUMMARY."""
    write_config(agents_home, "llm:\n  backend: ollama\nmemory:\n  auto_compact: false\n")
    from core.memory_manager import MemoryManager

    manager.close()
    memory = MemoryManager("finn")
    try:
        written = n = 0
        while written < 50 * 1024:
            marker_at = {0: 0, 35: 1, 70: 2, 105: 3, 140: 4}
            text = MARKERS[marker_at[n]] + ". " + FILLER if n in marker_at else f"Another step. {FILLER}."
            memory.append_log("THOUGHT", text)
            written += len(text) + 80
            n += 1
        memory.append_log("THOUGHT", MARKERS[5] + ". " + FILLER)
        report = memory.compact_log()
        assert report.summary_method == "llm"
        prompts = small_model.summarizer_prompts()
        assert len(prompts) >= 4, "50 KB does not fit one 4,096-token prompt: it was read in pieces"
        assert not [p for p in small_model.prompts if p.truncated], "no summarizer prompt was cut"
        assert all(p.num_ctx == 4096 for p in prompts)
        summary = memory.read_log(5)[0]
        assert summary["type"] == "SUMMARY"
        for marker in MARKERS:
            assert marker.split(": ")[1] in summary["content"], f"{marker} is covered by the summary"
    finally:
        memory.close()


def test_a_long_lcm_leaf_is_summarised_in_pieces_that_fit(small_model):
    """An LCM leaf of ~20,000 characters on a 4,096-token model: several calls, none cut, one summary."""
    from core.llm.backend import generate_with
    from core.llm.ollama_backend import OllamaBackend
    from core.memory.provider import SummarizeOptions
    from core.plugins.memory.lcm.summarizer import LLMSummarizer

    backend = OllamaBackend("llama3.1", host=small_model.host)
    text = "\n".join(f"user: a note. {FILLER}." if n % 40 else f"user: {MARKERS[n // 40]}."
                     for n in range(200))
    summary = LLMSummarizer(generate_with(backend)).summarize(text, SummarizeOptions(target_tokens=400))
    prompts = small_model.summarizer_prompts()
    assert len(prompts) > 2 and not small_model.truncated
    assert len(summary) < len(text) // 4
    assert "BX-1117" in summary and "BX-5557" in summary


def test_a_long_handoff_transcript_is_read_in_pieces(small_model, agents_home):
    """The Simple provider's handoff of a long session: every prompt fits, each carries the summary so far."""
    from core.engine.conversation import handoff_summary
    from core.llm.backend import generate_with
    from core.llm.ollama_backend import OllamaBackend

    backend = OllamaBackend("llama3.1", host=small_model.host)
    transcript = "\n".join(f"user: {FILLER} number {n}." for n in range(150))
    small_model.summarizer = lambda prompt: "## Goal\nKeep notes\n## Progress\n- read part"
    summary = handoff_summary(generate_with(backend), transcript)
    prompts = small_model.summarizer_prompts()
    assert len(prompts) > 1 and not small_model.truncated
    assert "Summary so far" in prompts[-1].text and summary.startswith("## Goal")


def entries(count: int = 40) -> list[LogEntry]:
    return [LogEntry(n, "2026-01-31T12:00:00.000Z", "THOUGHT",
                     f"step {n}: {FILLER}") for n in range(1, count + 1)]


def test_a_hanging_summarizer_is_abandoned_after_its_timeout():
    """A model that never answers: the call gives up after compact_timeout_s and the extract is used."""
    release, returned = threading.Event(), threading.Event()

    def hang(prompt: str) -> str:
        release.wait(60)
        returned.set()
        return "late"

    result = LogSummarizer(hang, 100, timeout_s=0.5).summarize(entries())
    assert not returned.is_set(), "the summarizer waited for the hanging call"
    release.set()
    assert result.method == "deterministic"


def test_a_summarizer_raising_outside_the_tree_escalates_to_the_extract():
    def broken(prompt: str) -> str:
        raise RuntimeError("CUDA out of memory")

    assert LogSummarizer(broken, 100).summarize(entries()).method == "deterministic"


def test_a_think_only_reply_and_a_reply_longer_than_its_input_are_rejected():
    think = LogSummarizer(lambda p: "<think>I should summarise the log carefully.</think>", 100)
    assert think.summarize(entries()).method == "deterministic"
    verbose = LogSummarizer(lambda p: p + " and more", 100)
    assert verbose.summarize(entries()).method == "deterministic"
    kept = LogSummarizer(lambda p: "<think>hmm</think>\nThe agent took 40 steps.", 100).summarize(entries())
    assert (kept.method, kept.text) == ("llm", "The agent took 40 steps.")


def test_closing_abandons_a_call_it_waits_for():
    cancel, release, returned = threading.Event(), threading.Event(), threading.Event()

    def hang(prompt: str) -> str:
        cancel.set()  # closing starts while the call runs
        release.wait(60)
        returned.set()
        return "late"

    model = BoundedModel(hang, timeout_s=60, deadline_s=60, cancel=cancel)
    with pytest.raises(SummarizerError, match="abandoned"):
        model("summarise")
    assert not returned.is_set(), "closing waited for the call"
    release.set()


def test_the_deadline_bounds_a_whole_compaction():
    model = BoundedModel(lambda p: "ok", timeout_s=60, deadline_s=0.0)
    with pytest.raises(SummarizerError, match="deadline"):
        model("summarise")


def test_backend_errors_become_summarizer_errors():
    def down(prompt: str) -> str:
        raise BackendUnavailableError("no server")

    with pytest.raises(SummarizerError, match="no server"):
        BoundedModel(down, 5, 5)("summarise")


def test_pieces_fit_the_room_and_keep_order():
    window = ContextWindow(4096)
    room = room_chars(window, 1500)
    assert 8000 < room < 14000
    parts = [f"line {n} " + "x" * (n * 37 % 900) for n in range(200)] + ["y" * (3 * room)]
    pieces = pack(parts, room)
    assert all(len("\n".join(p)) <= room for p in pieces)
    assert "".join("".join(p) for p in pieces).replace(" ", "") == "".join(parts).replace(" ", "")
    merged, calls = reduce(["a" * 600] * 30, 2000, lambda text, round_: text[: len(text) // 4])
    assert calls > 1 and len(merged) <= 2000
