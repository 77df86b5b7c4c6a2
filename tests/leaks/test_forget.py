"""Forgetting holds for everything derived after it: a forgotten fact's value, and the entries and messages a
FORGET named, reach no later LOG.md summary, LCM summary, NOW.md, prompt or recall result; LOG.md and the
archives keep them as the record until ``purge_forgotten`` takes the value out of them too."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.llm.backend import generate_with
from core.llm.ollama_backend import OllamaBackend
from core.memory.files.log_file import scan_bytes
from core.memory.provider import ListOptions, Message, Session
from core.memory.provider.types import CompactionMode
from core.memory.secrets.redaction import REDACTED
from core.memory.storage import title_of
from core.memory_manager import MemoryManager
from core.memory.secrets.forgotten import FORGOTTEN
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider, LLMSummarizer
from core.plugins.memory.simple import SimpleProvider
from tests.leaks.conftest import database_of
from tests.leaks.leak_check import holds, leaks

VALUE = "teal with copper trim"
KEY = "favourite_colour"
ROOT = Path(__file__).resolve().parents[2]
GARDEN = "The garden tools need oil, the hoses need new washers and the shed door sticks in the rain. " * 3
SESSION = Session("finn:main", agent_id="finn", user_id="local", channel="cli")


def _remember_and_forget(manager) -> None:
    """The value as a fact, in a thought and in NOW.md's plan; then the fact is forgotten."""
    manager.save_fact(KEY, VALUE)
    manager.append_log("THOUGHT", f"the user decided the hallway will be {VALUE}")
    manager.update_now("Painting", [f"buy {VALUE} paint"])
    assert manager.forget_memory(f"fact:{KEY}")


def _summaries(manager) -> list[str]:
    summaries = [row[0] for row in manager.db.conn.execute("SELECT summary FROM compaction_history")]
    return summaries + [e.content for e in manager.log.scan().entries if e.type == "SUMMARY"]


def _archived(manager) -> bytes:
    return b"".join(p.read_bytes() for p in manager.paths.archive_dir.glob("LOG-*.md"))


def test_a_forgotten_fact_is_not_in_the_deterministic_summary_nor_in_prompts(finn):
    """save_fact, forget_memory, compact_log(force=True) with the extractive summarizer: the SUMMARY lists no
    "Saved facts" entry for it and shows the value nowhere, nor do NOW.md and the prompt context; the archive
    keeps the FACT entry as the record."""
    _remember_and_forget(finn)
    assert not holds(finn.paths.now_file.read_bytes(), VALUE), "NOW.md (in every prompt) is rewritten at once"

    report = finn.compact_log(force=True)

    assert report.done and report.summary_method == "deterministic"
    summaries = _summaries(finn)
    assert summaries and not any(holds(s.encode(), VALUE) for s in summaries)
    assert not any(f"fact {KEY}" in s for s in summaries), "the forgotten fact's FACT entry was summarised"
    assert REDACTED in summaries[0], "the thought is summarised with the value hidden"
    prompt = finn.format_context_for_prompt()
    assert not holds(prompt.encode(), VALUE) and KEY not in prompt
    assert holds(_archived(finn), VALUE), "the archive is the immutable record: it keeps the FACT entry"


def test_an_llm_summarizer_is_never_shown_the_value_and_its_answer_is_checked(finn, ollama):
    """Through the real ollama client: no summarizer prompt holds the forgotten value, and a model that
    writes it anyway (it knew it from elsewhere) has it hidden in the SUMMARY entry."""
    _remember_and_forget(finn)
    for n in range(12):
        finn.append_log("THOUGHT", f"step {n}: measured the hallway walls and the window frames again")
    ollama.enqueue(f"Painting the hallway {VALUE}; walls measured.")
    finn.compaction.summary_llm = generate_with(OllamaBackend("llama3.1", host=ollama.host))

    report = finn.compact_log(force=True)

    assert report.summary_method == "llm"
    prompts = [json.dumps(r["messages"]) for r in ollama.chat_requests]
    assert prompts and not any(holds(p.encode(), VALUE) for p in prompts)
    summaries = _summaries(finn)
    assert not any(holds(s.encode(), VALUE) for s in summaries)
    assert any(f"Painting the hallway {REDACTED}" in s for s in summaries)


def test_recall_shows_neither_the_fact_nor_the_value_in_older_entries(finn):
    """The forgotten fact leaves recall; an entry written before the forget that holds the value is recalled
    with it hidden, and an entry forgotten by id is not shown in the prompt context."""
    finn.append_log("USER_FEEDBACK", "remember the hallway colour for the painter")
    forgotten_seq = finn.append_log("THOUGHT", "the painter comes on Tuesday with the copper samples")
    _remember_and_forget(finn)
    assert finn.forget_memory(f"log:{forgotten_seq}")

    hits = finn.recall_memory("hallway copper trim", n_results=10, min_score=0)

    assert hits and not holds(json.dumps(hits).encode(), VALUE)
    assert all(h["id"] not in (f"fact:{KEY}", f"log:{forgotten_seq}") for h in hits)
    assert any(REDACTED in h["content"] for h in hits)
    prompt = finn.format_context_for_prompt()
    assert "painter comes on Tuesday" not in prompt and "remember the hallway colour" in prompt


def test_a_fact_saved_again_after_the_forget_is_live(finn):
    """Saving the fact again with the value makes it live: prompts and the next summary show it again."""
    _remember_and_forget(finn)
    finn.save_fact(KEY, VALUE)

    assert VALUE in finn.format_context_for_prompt()
    finn.compact_log(force=True)
    assert any(VALUE in s for s in _summaries(finn))


def test_an_lcm_summary_leaves_out_forgotten_messages_and_values(finn, ollama):
    """LCM leaf summaries through an LLM: a message forgotten by id is not in the summarizer's input (it stays
    reachable by expand), and the forgotten fact's value is in neither the input nor the stored summary."""
    finn.save_fact(KEY, VALUE)
    provider = LCMProvider(database_of(finn), summarizer=LLMSummarizer(
        generate_with(OllamaBackend("llama3.1", host=ollama.host))))
    try:
        said = [Message("user", f"my favourite colour is {VALUE}, please remember it"),
                Message("assistant", "Noted, I will keep that in mind for the hallway."),
                Message("user", "the painter's phone number is 0170 555 0199, call him on Monday"),
                Message("assistant", "I will call the painter on Monday morning.")]
        said += [Message("user" if n % 2 else "assistant", f"turn {n}: more on the hallway lights and rugs")
                 for n in range(8)]
        provider.append(SESSION, said)
        rows = finn.db.conn.execute("SELECT id, content FROM ctx_messages ORDER BY id").fetchall()
        phone = next(r[0] for r in rows if "0170 555 0199" in r[1])
        finn.recall_memory("painter phone")  # indexes the messages, so they can be forgotten by id
        assert finn.forget_memory(f"msg:{phone}") and finn.forget_memory(f"fact:{KEY}")
        ollama.default = f"They like {VALUE} and talked about the hallway."

        provider.compact(SESSION, CompactionMode.FULL, fresh_tail=2)

        prompts = [json.dumps(r["messages"]) for r in ollama.chat_requests]
        assert prompts and not any(holds(p.encode(), VALUE) or "0170 555 0199" in p for p in prompts)
        stored = [r[0] for r in finn.db.conn.execute("SELECT content FROM ctx_summaries")]
        assert stored and not any(holds(s.encode(), VALUE) for s in stored)
        linked = finn.db.conn.execute("SELECT 1 FROM ctx_summary_messages WHERE message_id = ?", (phone,))
        assert linked.fetchone(), "the forgotten message is still reachable from its summary (lossless)"
    finally:
        provider.close()


def test_purge_takes_the_value_out_of_log_md_archives_and_indexes(finn):
    """purge_forgotten rewrites LOG.md and the archives (their sha256 chain kept) and scrubs memory.db and the
    cold store: the value is left only in forgotten_values, kept there to hide it from what comes later."""
    _remember_and_forget(finn)
    finn.compact_log(force=True)
    finn.append_log("THOUGHT", f"again: {VALUE} for the hallway")  # after the forget: a record like any other
    assert holds(_archived(finn), VALUE) and holds(finn.paths.log_file.read_bytes(), VALUE)

    report = finn.purge_forgotten()

    assert report.keys == [KEY] and report.archives and report.log_lines >= 1
    assert finn.read_log(1)[0]["metadata"]["kind"] == "forget_purge"
    assert VALUE not in json.dumps(finn.read_log(1)), "the purge's own record names keys, never the value"
    assert finn.cold.background.wait_idle(60)
    finn.close()
    with MemoryManager("finn") as reopened:  # finishes what a reader kept the purge from (memory.db's WAL)
        assert reopened.scrubber.pending_purges() == []
        history = dict(reopened.db.conn.execute("SELECT archive_id, archive_sha256 FROM compaction_history"))
        log_md = reopened.paths.log_file
    assert leaks(finn.paths.root, VALUE, kept=("forgotten_values",)) == []
    for entry in scan_bytes(log_md.read_bytes(), log_md).entries:
        if entry.type == "SUMMARY":
            assert entry.metadata["sha256"] == history[Path(entry.metadata["archive"]).stem]


FAULT_POINTS = (
    "core.memory.secrets.scrub._write_durably",  # the archives' side files not all written: nothing committed
    "core.memory.secrets.scrub._install",  # their sha256 committed, the archives not replaced yet
    "core.memory.secrets.scrub._scrub_tables",  # LOG.md and the archives done, memory.db not yet
)


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_a_purge_killed_at_a_fault_point_is_finished_by_the_next_open(home, manager, point):
    """SIGKILL inside a purge (before its commit, between the commit and the archives' replace, before
    memory.db): the next open finishes it; every archive verifies, only forgotten_values holds the value."""
    _remember_and_forget(manager)
    assert manager.compact_log(force=True).done
    manager.append_log("THOUGHT", f"later: {VALUE} again")
    assert manager.compact_log(force=True).done
    manager.close()

    child = subprocess.run([sys.executable, str(Path(__file__).with_name("purge_child.py")), point],
                           cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300)

    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    with MemoryManager("finn") as reopened:
        assert reopened.scrubber.pending_purges() == []
        history = dict(reopened.db.conn.execute("SELECT archive_id, archive_sha256 FROM compaction_history"))
        assert reopened.cold.background.wait_idle(60)
    archives = {p.stem: p for p in (home / "finn" / "memory" / "archive").glob("LOG-*.md")}
    assert set(archives) == set(history) and len(archives) == 2
    for archive_id, path in archives.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == history[archive_id], archive_id
    assert not list((home / "finn" / "memory" / "archive").glob(".*.scrub"))
    assert leaks(home / "finn", VALUE, kept=("forgotten_values",)) == []


def test_forgotten_values_come_back_with_a_memory_db_rebuilt_from_log_md(home, manager):
    """memory.db lost: the rebuild replays the FACT and FORGET entries in seq order, so the value the fact
    held is forgotten again and the next summary and prompt still hide it."""
    _remember_and_forget(manager)
    assert manager.compact_log(force=True).done
    manager.append_log("THOUGHT", f"the hallway will still be {VALUE}")
    manager.close()
    for path in manager.paths.memory_dir.glob("memory.db*"):
        path.unlink()

    with MemoryManager("finn") as rebuilt:
        assert rebuilt.get_fact(KEY) is None
        assert not holds(rebuilt.format_context_for_prompt().encode(), VALUE)
        assert rebuilt.compact_log(force=True).done
        assert not any(holds(s.encode(), VALUE) for s in _summaries(rebuilt))


@pytest.mark.parametrize("provider_class", [LCMProvider, SimpleProvider], ids=["lcm", "simple"])
def test_a_forgotten_message_is_not_shown_in_context_history_or_expand(finn, provider_class):
    """A conversation message forgotten by id stays stored (the record; LCM's DAG stays lossless) but what
    assemble, load_history (the handoff's input) and expand give the model only says it was forgotten; the
    session is no longer titled with it."""
    provider = provider_class(database_of(finn), **({"summarizer": DeterministicSummarizer()}
                                                    if provider_class is LCMProvider else {}))
    try:
        provider.append(SESSION, [Message("user", "the alarm code of the shed is 4471, keep it"),
                                  Message("assistant", "Kept.")]
                        + [Message("user" if n % 2 else "assistant", f"turn {n}: {GARDEN}")
                           for n in range(10)])
        rows = finn.db.conn.execute("SELECT id, content FROM ctx_messages ORDER BY id").fetchall()
        code = next(r[0] for r in rows if "4471" in r[1])
        finn.recall_memory("shed alarm")  # indexes the messages, so they can be forgotten by id
        assert provider.load_info(SESSION.id).title.startswith("the alarm code of the shed is 4471")
        assert finn.forget_memory(f"msg:{code}")
        titles = [provider.load_info(SESSION.id).title] + [i.title for i in provider.list_info(ListOptions())]
        assert titles == [title_of(f"turn 1: {GARDEN}")] * 2

        shown = provider.assemble(SESSION, 100_000, 2) + provider.load_history(SESSION.id)
        if provider_class is LCMProvider:
            provider.compact(SESSION, CompactionMode.FULL, fresh_tail=2)
            leaf = finn.db.conn.execute("SELECT summary_id FROM ctx_summary_messages WHERE message_id = ?",
                                        (code,)).fetchone()[0]
            expanded = provider.expand(leaf, 10_000)
            assert f"msg_{code}" in [m.id for m in expanded.messages], "still reachable: the DAG is lossless"
            shown += [m.message for m in expanded.messages] + provider.assemble(SESSION, 100_000, 2)

        texts = [m.content for m in shown]
        assert FORGOTTEN in texts and not any("4471" in t for t in texts)
        assert finn.db.conn.execute("SELECT content FROM ctx_messages WHERE id = ?", (code,)).fetchone()[0] \
            == "the alarm code of the shed is 4471, keep it", "the stored message is the record"
    finally:
        provider.close()
