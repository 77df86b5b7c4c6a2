"""Faults: a failing, hanging or babbling summarizer changes nothing; a killed compaction leaves a consistent
DB."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from core.errors import BackendError, SummarizerError
from core.memory.provider import CompactionMode
from core.plugins.memory.lcm import LCMProvider, LLMSummarizer
from tests.providers.conftest import SMALL_CONFIG, conversation
from tests.providers.test_concurrency import ROOT, SESSION, assert_lossless
from tests.providers.test_lossless import expand_all, key
from tests.providers.workers import CONFIG, SlowSummarizer, append


class Raising:
    def summarize(self, text, options):
        raise RuntimeError("model crashed")


class Hanging:
    def summarize(self, text, options):
        time.sleep(5)
        return "late"


class Returning:
    def __init__(self, value):
        self.value = value

    def summarize(self, text, options):
        return self.value if self.value != "LONGER" else text + " and more"


def snapshot(provider: LCMProvider) -> tuple:
    conn = provider.db.conn
    return tuple(
        tuple(tuple(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2"))
        for table in ("ctx_items", "ctx_summaries", "ctx_summary_messages", "ctx_summary_parents")
    )


@pytest.mark.parametrize("summarizer", [
    Raising(), Hanging(), Returning(""), Returning("   "), Returning(None), Returning(42),
    Returning("LONGER"),
    LLMSummarizer(lambda prompt: ""),
    LLMSummarizer(lambda prompt: (_ for _ in ()).throw(BackendError("Ollama is down"))),
], ids=["raises", "times-out", "empty", "blank", "none", "number", "longer-than-source", "llm-empty",
        "llm-down"])
def test_bad_summarizer_changes_nothing(db_path, session, summarizer):
    """A summarizer that fails, times out or returns unusable text raises SummarizerError and leaves the
    session as it was."""
    config = dataclasses.replace(SMALL_CONFIG, summarizer_timeout_s=0.3)
    provider = LCMProvider(db_path, summarizer=summarizer, config=config)
    for messages in conversation(20):
        provider.append(session, messages)
    before = snapshot(provider)
    with pytest.raises(SummarizerError):
        provider.compact(session, CompactionMode.FULL)
    assert snapshot(provider) == before
    provider.close()


def test_failure_midway_keeps_committed_summaries_consistent(db_path, session):
    """When the summarizer fails after some summaries, those stay complete and every message stays
    reachable."""
    calls = []

    class FailsThird:
        def summarize(self, text, options):
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("boom")
            return text[: len(text) // 4]

    provider = LCMProvider(db_path, summarizer=FailsThird(), config=SMALL_CONFIG)
    for messages in conversation(40):
        provider.append(session, messages)
    with pytest.raises(SummarizerError, match="boom"):
        provider.compact(session, CompactionMode.FULL)
    assert provider.stats(session).summary_count == 2
    provider.close()
    provider = LCMProvider(db_path, config=SMALL_CONFIG)
    context = provider.assemble(session, 10**9, 4)
    flat = [key(m) for item in context for m in expand_all(provider, item)]
    assert flat == [key(m) for m in provider.load_history(session.id)]
    provider.close()


@pytest.mark.slow
def test_sigkill_during_compaction_leaves_consistent_db(db_path):
    """A compaction process killed with SIGKILL at one of its commits (drawn at random) leaves a consistent,
    lossless DB that compacts again."""
    append(str(db_path), SESSION.id, "k", 150)
    expected = 300
    rng = random.Random(4)
    for attempt in range(3):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.providers.workers", "compact", str(db_path), SESSION.id, "1", "0"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, AGENTOS_FAULT_POINT=f"db.commit@{rng.randint(1, 12)}"),
        )
        assert child.wait(timeout=300) == -signal.SIGKILL, child.stdout.read()
        child.stdout.close()
        assert_lossless(db_path, expected)
        append(str(db_path), SESSION.id, f"after{attempt}", 40)
        expected += 80
        assert_lossless(db_path, expected)
    provider = LCMProvider(db_path, summarizer=SlowSummarizer(0), config=CONFIG)
    result = provider.compact(SESSION, CompactionMode.FULL)
    assert result.stopped in ("done", "no_progress") and result.tokens_after <= result.tokens_before
    provider.close()
    assert_lossless(db_path, expected)
