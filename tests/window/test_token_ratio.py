"""What the model really got: the learned characters-per-token ratio, its file, and cut prompts."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.llm.model_window import RatioStore
from tests.ollama_server import count_tokens, tokenize
from tests.window.conftest import write_config

ROOT = Path(__file__).resolve().parents[2]
PROSE = ("The harbour lantern glowed over the gravel path while the copper kettle sang in the orchard; "
         "nobody knew why the meadow smelled of pepper and thistle that evening. ")


def test_the_ratio_is_learned_from_prompt_eval_count_and_kept_per_model(make_server, agents_home, make_engine,
                                                                        api):
    """After a few calls the estimate matches the server's count within 5% (Ollama's prompt_eval_count, of the
    part after the cached prefix; the OpenAI API's usage.prompt_tokens, of the whole prompt), the ratio is
    saved, and a new engine starts from it."""
    server = make_server(default="Noted.")
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    engine = make_engine()
    assert engine.backend.window.chars_per_token == 3.0, "an unmeasured model starts on the safe side"
    for turn in range(4):
        assert engine.run(f"Point {turn}. " + PROSE * 3).ok
    learned = engine.backend.window.chars_per_token
    assert learned < 3.6, "learned from the server's counts, not chars/4"
    last = engine.backend.meter.last
    # The server counted only what its cache did not hold (the new request: the prompt repeats the
    # previous one and adds to it); the engine sizes that part from the prefix the prompt shares with the
    # previous one, less exactly than a whole prompt (a few hundred characters of prose, at a ratio
    # learned mostly on JSON).
    counted = server.prompts[-1].evaluated if api == "ollama" else server.prompts[-1].rendered_tokens
    assert last.reported == counted and abs(last.error) < 0.10
    from core.engine.cli import command

    status = command(engine, "/status")
    assert "window 131072 tokens" not in status and "window 16384 tokens" in status
    assert "last prompt" in status and "error" in status
    saved = json.loads((agents_home / "token_ratios.json").read_text())
    assert abs(saved["llama3.1"] - learned) < 0.01
    engine.close()
    engine.manager.close()
    again = make_engine()
    assert abs(again.backend.window.chars_per_token - learned) < 0.01


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_a_prompt_cut_by_the_server_is_a_warning_with_both_numbers(make_server, agents_home, make_engine,
                                                                   caplog, api):
    """A wrong learned ratio (8 chars/token) makes the engine overfill the window with a long request: the
    server cuts the prompt (Ollama; of the OpenAI-compatible servers, LM Studio and Ollama's /v1), the engine
    logs both counts and lowers the ratio, and the next request fits."""
    server = make_server(context_length=8192, default="Noted.", overflow="truncate", flavour="lmstudio")
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    (agents_home / "token_ratios.json").write_text(json.dumps({"llama3.1": 8.0}))
    engine = make_engine()
    caplog.set_level(logging.WARNING, logger="core.llm.model_window")
    document = PROSE * 150  # ~25,000 characters: ~3,100 tokens at 8 a token, ~7,000 really
    assert engine.run("Read this. " + document + " What is it about?").ok
    assert len(server.truncated) == 1
    cut = server.truncated[0]
    warnings = [r.getMessage() for r in caplog.records if "cut it" in r.getMessage()]
    assert warnings and f"saw {cut.tokens} tokens" in warnings[0] and "estimated at" in warnings[0]
    assert engine.backend.window.chars_per_token < 8.0 / 1.5  # lowered well below the wrong ratio
    assert "CUT" in engine.window_status()
    assert engine.run("Read this too. " + document + " What is it about?").ok
    # (LCM's summary of the long first turn is one summarizer call: splitting it to fit is another change's)
    assert [p for p in server.truncated if p.tools] == [cut], "after the warning the planner's prompts fit"
    request = [m for m in server.planner_prompts()[-1].messages
               if str(m.get("content")).startswith("Read this too.")]
    assert request[0]["content"].rstrip().endswith("What is it about?")
    assert "left out to fit the model's window" in request[0]["content"]


def test_count_tokens_is_not_chars_over_four():
    """The test server's tokenizer is what makes learning matter."""
    ratio = len(PROSE * 10) / count_tokens(PROSE * 10)
    assert 3.0 < ratio < 3.8


@pytest.mark.slow
def test_a_killed_writer_leaves_the_ratio_file_whole(tmp_path):
    """SIGKILL during a stream of ratio updates, before and after a replace of the file: it is the old or the
    new JSON, never torn."""
    path = tmp_path / "token_ratios.json"
    code = ("import sys\nfrom pathlib import Path\nfrom core.llm.model_window import RatioStore\n"
            "store = RatioStore(Path(sys.argv[1]))\ni = 0\n"
            "while True:\n    store.put(f'model{i % 50}', 2.0 + (i % 100) / 50)\n    i += 1\n")
    for point in ("file.replace@40", "file.replaced@80", "file.replace@120"):
        child = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT,
                                 env=dict(os.environ, AGENTOS_FAULT_POINT=point))
        assert child.wait(timeout=120) == -signal.SIGKILL
        data = json.loads(path.read_text())
        assert data and all(2.0 <= v <= 4.0 for v in data.values())
        assert RatioStore(path).get("model0") is not None


def test_prompt_eval_count_is_what_follows_the_cached_prefix_however_many_messages(make_server):
    """Through the real ollama client: a chat of 40 messages, then the same chat and two more messages; the
    second prompt_eval_count is the rendering's tokens after the part it shares with the first (the
    template's markers counted once each on both sides), at least the new messages' text."""
    import ollama

    server = make_server(default="Noted.")
    client = ollama.Client(host=server.host)
    chat = [{"role": "system", "content": "You keep notes."}]
    for n in range(20):
        chat += [{"role": "user", "content": f"Note {n}: {PROSE}"},
                 {"role": "assistant", "content": "Noted."}]
    client.chat(model="llama3.1", messages=chat)
    new = [{"role": "user", "content": "Note 21: " + PROSE}]
    reply = client.chat(model="llama3.1", messages=[*chat, *new])

    first, second = server.prompts
    shared = 0
    for mine, theirs in zip(tokenize(second.rendered), tokenize(first.rendered)):
        if mine != theirs:
            break
        shared += 1
    assert second.cached_tokens == shared
    assert (
        reply.prompt_eval_count == count_tokens(second.rendered) - shared >= count_tokens(new[0]["content"])
    )
