"""Choosing the window from /api/show, and the meter's rules (without a server)."""

from __future__ import annotations

import logging

from core.llm.model_window import WindowMeter, choose_num_ctx, model_limits
from core.llm.window import ContextWindow


def test_model_limits_read_the_architecture_length_and_the_modelfile_num_ctx():
    show = {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
            "parameters": 'num_ctx 8192\nstop "<|im_end|>"'}
    assert model_limits(show) == (32768, 8192)
    assert model_limits({"model_info": {}, "parameters": ""}) == (None, None)
    assert choose_num_ctx(16384, 131072, None) == 16384
    assert choose_num_ctx(16384, 32768, 8192) == 8192
    assert choose_num_ctx(16384, None, None) == 16384


def test_meter_learns_skips_implausible_counts_and_spots_cuts(caplog):
    window = ContextWindow(4096)
    meter = WindowMeter(window, "m")
    meter.observe(3000, 1000)  # 3 chars a token
    assert 3.0 < window.chars_per_token < 4.0 and not meter.last.truncated
    ratio = window.chars_per_token
    meter.observe(3000, 5)  # a count from a prompt cache: ignored
    assert window.chars_per_token == ratio
    caplog.set_level(logging.WARNING)
    meter.observe(12000, 4096)  # estimated to fit, but it filled the window: the server cut it
    assert meter.last.truncated and "saw 4096 tokens" in caplog.text and window.chars_per_token < ratio
    lowered = window.chars_per_token
    meter.observe(40000, 4096)  # known to be too long (not sized by the engine): the ratio stays
    assert meter.last.truncated and window.chars_per_token == lowered
    meter.observe(14000, 2000)  # far below an estimate near the window: older messages were dropped
    assert meter.last.truncated


def test_a_server_that_refuses_overflow_never_cut_a_prompt(caplog):
    """llama-server and vLLM refuse a prompt over their window (``cuts=False``): a count far below a
    near-window estimate (seen on llama-server: 2,631 tokens of a prompt estimated at 3,693 in 4,096) is an
    estimate to learn from, not a cut; LM Studio and Ollama cut, and the same count is a cut there."""
    caplog.set_level(logging.WARNING)
    for cuts in (False, True):
        window = ContextWindow(4096)
        meter = WindowMeter(window, "m")
        ratio = window.chars_per_token
        meter.observe(int(3693 * ratio), 2631, cuts=cuts)
        assert meter.last.truncated is cuts and ("cut it" in caplog.text) is cuts
        assert (window.chars_per_token > ratio) is not cuts  # learned from the refusing server's count
