"""Fixtures of the tests on a real model: llama.cpp's llama-server running SmolLM2-135M-Instruct (the
``llama_server`` fixture of tests/conftest.py) and agents configured for it (``make_engine`` opens
engines)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import write_home_config


MODEL_TIMEOUT_S = 1500.0
"""Seconds a model call may take: a bound for a hung server, not a speed target. With the machine's cores busy
(the other test worker, other processes) llama-server on one thread evaluated 5 to 25 prompt tokens a second,
so a cold prompt of a few thousand tokens took minutes, past the configured defaults (120 s)."""


def configure(home: Path, server, **sections) -> None:
    """``llm`` of the agents home for ``server`` (backend openai, its URL, its model, its reply cap,
    :data:`MODEL_TIMEOUT_S`), the summaries' timeouts as long, plus ``sections``."""
    memory = {"compact_timeout_s": MODEL_TIMEOUT_S, "compact_deadline_s": 2 * MODEL_TIMEOUT_S,
              **sections.pop("memory", {})}
    provider = {"summarizer_timeout_s": MODEL_TIMEOUT_S, "deadline_s": 2 * MODEL_TIMEOUT_S,
                **sections.pop("provider", {})}
    write_home_config(home, {"llm": {"backend": "openai", "host": server.url, "model": server.model,
                                     "timeout_s": MODEL_TIMEOUT_S, "max_reply_tokens": server.max_reply},
                             "memory": memory, "provider": provider, **sections})



def stop_clock(patch: pytest.MonkeyPatch, moment: datetime) -> None:
    """Every LOG.md entry, NOW.md and conversation message written from now on (``patch`` undoes it) is
    written at ``moment``: the model's input shows their times, and a 135M model's reply moves with any
    change of its input, so the input is the same at every run."""
    from core.memory.files import log_format

    class Stopped(datetime):
        @classmethod
        def now(cls, tz=None):
            return moment if tz is None else moment.astimezone(tz)

    patch.setattr(log_format, "datetime", Stopped)
