"""Benchmark the engine's own work beside the model and print the figures beside their targets.

- start-up and offline turns: ``import core.engine`` < 2.5 s without torch; opening
  an agent < 1 s; engine overhead per offline turn (memory, prompt, checkpoints,
  logging) < 250 ms; building a system prompt < 20 ms;
- per-turn overhead: building one planner prompt (system prompt with the memory
  context, the compaction check, the assembled history within the window) on an
  LCM session of 1,000 messages; target p50 <= 5 ms;
- the token estimate's error against the server's ``prompt_eval_count``: the
  first prompt (chars/4, or the ratio already learned) and after learning;
- prompt-cache reuse on the window tests' 42-turn conversation of ~1,200-character notes, on a 4k, an 8k
  and a 131k model (``tests/window/conversation.py``): the share of each planner prompt that the
  previous one left in the server's cache (planner prompts that follow one another with no summary
  call between): the steps of a run (three turns save a fact first; target >= 85% for every one), and
  every pair (target: a median >= 85%); the tokens the server evaluated per turn (``prompt_eval_count``
  of every call, summaries included) beside those of the whole prompts.

The model is the project's Ollama-compatible test server (``tests/ollama_server.py``:
real HTTP, the real ``ollama`` client, a word-piece tokenizer), or a real server with ``--host URL --model
NAME``: Ollama (``--backend ollama``), or any OpenAI-compatible one (``--backend openai``: llama.cpp's
llama-server, LM Studio, vLLM, ...). On an OpenAI-compatible server the prompt-cache figures are the
server's own counts (``usage.prompt_tokens_details.cached_tokens``, llama.cpp's ``timings.cache_n``) for
the 42-turn conversation at the server's window, the model's own replies, beside what the test server
reports for the same prompts (each request replayed to it in order). Against a real server the model's replies
are capped (``--reply-tokens``, the requests' ``max_tokens``): the figures are about prompts, and a small
model may otherwise write until its window is full; each turn's progress is printed. Reflection is off (its
calls would take the server's cache between the measured prompts).

    .venv/bin/python scripts/bench_engine.py [--turns 20] [--messages 1000] [--runs 200] [--window-turns 20]
                                             [--no-reuse] [--backend openai --host URL --model NAME]
                                             [--timeout-s 600] [--reply-tokens 64] [--conversation-turns 42]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.errors import AgentOSError  # noqa: E402

OVERHEAD_TARGET_MS = 5.0
REUSE_TARGET = 0.85
REUSE_WINDOWS = ((4096, "4k"), (8192, "8k"), (131072, "131k"))
NO_REFLECTION = "reflect:\n  enabled: false\n"
"""Reflection's model calls would take the server's prompt cache between the prompts measured."""
WORDS = ("harbour", "lantern", "orchard", "gravel", "copper", "meadow", "ribbon", "thistle", "canvas",
         "pepper",
         "deploy", "service", "error", "warning", "/var/log/app.log", "retry", "timeout", "42", "2026-01-31",
         "ok")


def startup_rows(turns: int) -> list[tuple[str, float, int, str]]:
    """Start-up and offline-turn timings: ``(measure, ms, target ms, note)``."""
    from tqdm import tqdm

    code = (
        "import time, sys; t=time.perf_counter(); import core.engine; print(time.perf_counter()-t, 'torch' "
        "in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    rows = [("import core.engine", float(out[0]) * 1000, 2500, f"torch loaded: {out[1]}")]
    with tempfile.TemporaryDirectory() as home:
        os.environ["AGENTOS_HOME"] = home
        from core.engine import Engine
        from core.engine.prompting.system_prompt import PromptExtras, build_system_prompt

        started = time.perf_counter()
        engine = Engine("bench", offline=True)
        rows.append(("open agent (Engine)", (time.perf_counter() - started) * 1000, 1000, ""))
        timings = []
        for turn in tqdm(range(turns), desc="offline turns", file=sys.stderr):
            task = (
                f"remember that my item {turn} is value {turn}"
                if turn % 2 == 0
                else f"what is my item {turn - 1}"
            )
            started = time.perf_counter()
            engine.run(task)
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        rows.append(("offline turn (median)", timings[len(timings) // 2], 250,
                     f"p90 {timings[int(len(timings) * 0.9)]:.0f} ms"))
        started = time.perf_counter()
        for _ in range(20):
            build_system_prompt(engine.manager, engine.conversation.identity(), PromptExtras(), 2000)
        rows.append(("build system prompt", (time.perf_counter() - started) * 1000 / 20, 20, ""))
        engine.close()
        engine.manager.close()
    return rows


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def fill_session(engine, messages: int, rng: random.Random) -> None:
    """Store ``messages`` messages in the engine's session, then compact it fully (deterministic
    summaries)."""
    from core.memory.provider import CompactionMode, Message
    from core.plugins.memory.lcm import DeterministicSummarizer

    provider, session = engine.provider, engine.session
    for n in range(0, messages, 2):
        provider.append(session, [Message("user", f"Turn {n}: " + sentence(rng, rng.randint(20, 60))),
                                  Message("assistant", sentence(rng, rng.randint(5, 30)))])
    summarizer, provider.engine.summarizer = provider.engine.summarizer, DeterministicSummarizer()
    try:
        provider.compact(session, CompactionMode.FULL)
    finally:
        provider.engine.summarizer = summarizer


def overhead(engine, runs: int) -> list[float]:
    """Milliseconds to build one planner prompt, ``runs`` times."""
    from core.engine.prompting.system_prompt import PromptExtras

    state = {"messages": [{"role": "user", "content": "What happened to service s7 yesterday?"}],
             "turn_id": "bench"}
    engine.runtime.context.build(state, PromptExtras())  # the window is asked once, outside the timing
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        engine.runtime.context.build(state, PromptExtras())
        times.append((time.perf_counter() - started) * 1000)
    return times


def estimate_reports(engine, turns: int, rng: random.Random) -> list:
    """The engine's estimate against ``prompt_eval_count``, turn by turn."""
    from tqdm import tqdm

    for turn in tqdm(range(turns), desc="estimate turns", file=sys.stderr):
        engine.run(f"Note {turn}. "
                   + " ".join(sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(3, 12))))
    return list(engine.backend.meter.reports)


def cap_replies(backend, tokens: int) -> None:
    """Ask ``backend``'s server for replies of at most ``tokens`` tokens (``max_tokens``) unless a call sets
    its own."""
    chat = backend.chat

    def capped(messages, tools, on_text=None, **options):
        options.setdefault("max_tokens", tokens)
        return chat(messages, tools, on_text, **options)

    backend.chat = capped


def reuse_figures(context_length: int, model: str) -> dict[str, float]:
    """The 42-turn conversation on the test server for a model of ``context_length`` tokens: cache shares
    of consecutive planner prompts and tokens evaluated per turn."""
    from core.engine import Engine
    from tests.ollama_server import ScriptedOllama
    from tests.window.conversation import (
        TURNS,
        consecutive_pairs,
        in_run,
        replies,
        summarising_model,
        tell_notes,
    )

    server = ScriptedOllama(models=(model,), default="Noted.", context_length=context_length).start()
    server.summarizer = summarising_model
    server.enqueue(*replies())
    try:
        with tempfile.TemporaryDirectory() as home:
            os.environ["AGENTOS_HOME"], os.environ["OLLAMA_HOST"] = home, server.host
            Path(home, "config.yaml").write_text(
                f"llm:\n  backend: ollama\n  model: {model}\nmemory:\n  compact_summarizer: deterministic\n"
                + NO_REFLECTION)
            with Engine("bench") as engine:
                tell_notes(engine)
                num_ctx = engine.backend.window.num_ctx
                engine.manager.close()
    finally:
        server.stop()
    pairs = consecutive_pairs(server)
    shares = [after.cached_share for _, after in pairs]
    steps = [pair[1].cached_share for pair in pairs if in_run(pair)]
    planner = server.planner_prompts()
    prompts = list(server.prompts)
    return {"num_ctx": num_ctx, "min": min(shares), "median": statistics.median(shares),
            "steps": min(steps) if steps else 0.0,
            "every": statistics.median(p.cached_share for p in planner[1:]),
            "evaluated": sum(p.evaluated for p in prompts) / TURNS,
            "whole": sum(p.rendered_tokens for p in prompts) / TURNS,
            "summaries": len(server.summarizer_prompts())}


def served_reuse_figures(host: str, model: str, turns: int, timeout_s: float,
                         reply_tokens: int) -> dict[str, float]:
    """The conversation of ``turns`` turns on a real OpenAI-compatible server, its replies the model's own (at
    most ``reply_tokens`` tokens): the share of each planner prompt the server took from its cache (its own
    counts), and the test server's reckoning of the same prompts."""
    from tqdm import tqdm

    from core.engine import Engine
    from tests.window.conversation import record_requests, replay, tell_notes

    with tempfile.TemporaryDirectory() as home:
        os.environ["AGENTOS_HOME"] = home
        Path(home, "config.yaml").write_text(f"llm:\n  backend: openai\n  host: {host}\n  model: {model}\n"
                                             f"  timeout_s: {timeout_s}\n"
                                             "memory:\n  compact_summarizer: deterministic\n" + NO_REFLECTION)
        with Engine("bench") as engine, tqdm(total=turns, desc="conversation", file=sys.stderr) as bar:
            cap_replies(engine.backend, reply_tokens)
            requests = record_requests(engine.backend)

            def progress(_turn: int) -> None:
                bar.set_postfix(calls=len(requests), cached=f"{_share(engine.backend.calls[-1].usage):.0%}")
                bar.update()

            results = tell_notes(engine, turns, check=False, progress=progress)
            calls = list(engine.backend.calls)[-len(requests):]
            num_ctx = engine.backend.window.num_ctx
            engine.manager.close()
    scripted = replay(requests, num_ctx)
    real = [_share(call.usage) for call in calls]
    pairs = [i for i in range(1, len(calls)) if calls[i].tools and calls[i - 1].tools]
    planner = [i for i in range(len(calls)) if calls[i].tools][1:]
    steps = [real[i] for i in pairs if calls[i].continues]
    return {"num_ctx": num_ctx, "pairs": len(pairs), "min": min(real[i] for i in pairs) if pairs else 0.0,
            "median": statistics.median(real[i] for i in pairs) if pairs else 0.0,
            "every": statistics.median(real[i] for i in planner) if planner else 0.0,
            "scripted_every": statistics.median(scripted[i].cached_share for i in planner) if planner
            else 0.0,
            "steps": min(steps) if steps else float("nan"), "step_count": len(steps),
            "scripted_median": statistics.median(scripted[i].cached_share for i in pairs) if pairs else 0.0,
            "evaluated": sum(c.usage.get("evaluated_tokens", 0) for c in calls) / turns,
            "whole": sum(c.usage.get("prompt_tokens", 0) for c in calls) / turns,
            "cached": sum(c.usage.get("cached_tokens", 0) for c in calls) / turns,
            "scripted_cached": sum(p.cached_tokens for p in scripted) / turns,
            "scripted_evaluated": sum(p.evaluated for p in scripted) / turns,
            "summaries": sum(not c.tools for c in calls), "done": sum(r.ok for r in results)}


def _share(usage: dict[str, int]) -> float:
    return usage.get("cached_tokens", 0) / usage["prompt_tokens"] if usage.get("prompt_tokens") else 0.0


def served_reuse_rows(host: str, model: str, turns: int, timeout_s: float,
                      reply_tokens: int) -> tuple[list[tuple[str, str, str]], bool]:
    """The rows of :func:`served_reuse_figures`, and whether the steps of a run and the pairs met the
    target."""
    f = served_reuse_figures(host, model, turns, timeout_s, reply_tokens)
    label = f"{model} (window {f['num_ctx']})"
    steps = "none" if f["step_count"] == 0 else f"{f['steps']:.1%}"
    rows = [
        (f"prompt cache share, {label}: steps of a run, min", steps,
         f">= {REUSE_TARGET:.0%} ({f['step_count']} steps: the model's own tool calls)"),
        (f"prompt cache share, {label}: every pair, min", f"{f['min']:.1%}",
         f"(reported; {f['pairs']} pairs)"),
        (f"prompt cache share, {label}: every pair, median", f"{f['median']:.1%}",
         f">= {REUSE_TARGET:.0%} (test server, same prompts: {f['scripted_median']:.1%})"),
        (f"prompt cache share, {label}: every planner prompt, median", f"{f['every']:.1%}",
         f"(reported: summary calls between; test server, one slot: {f['scripted_every']:.1%})"),
        (f"tokens from the cache per turn, {label}", f"{f['cached']:.0f}",
         f"(server's count; test server: {f['scripted_cached']:.0f})"),
        (f"tokens evaluated per turn, {label}", f"{f['evaluated']:.0f}",
         f"(of {f['whole']:.0f} sent; test server: {f['scripted_evaluated']:.0f}; {f['summaries']} summary "
         f"calls, {f['done']} of {turns} runs done, replies <= {reply_tokens} tokens)"),
    ]
    met = (f["step_count"] == 0 or f["steps"] >= REUSE_TARGET) and f["median"] >= REUSE_TARGET
    return rows, met


def reuse_rows(model: str) -> tuple[list[tuple[str, str, str]], bool]:
    """The rows of :func:`reuse_figures` for each window, and whether every share met the target."""
    rows, ok = [], True
    for context_length, name in REUSE_WINDOWS:
        figures = reuse_figures(context_length, model)
        ok = ok and figures["steps"] >= REUSE_TARGET and figures["median"] >= REUSE_TARGET
        label = f"{name} model (num_ctx {figures['num_ctx']})"
        rows += [
            (f"prompt cache share, {label}: steps of a run, min", f"{figures['steps']:.1%}",
             f">= {REUSE_TARGET:.0%}"),
            (f"prompt cache share, {label}: every pair, min", f"{figures['min']:.1%}", "(reported)"),
            (f"prompt cache share, {label}: every pair, median", f"{figures['median']:.1%}",
             f">= {REUSE_TARGET:.0%}"),
            (f"prompt cache share, {label}: every planner prompt, median", f"{figures['every']:.1%}",
             "(reported: a summary call between takes the one slot)"),
            (f"tokens evaluated per turn, {label}", f"{figures['evaluated']:.0f}",
             f"(of {figures['whole']:.0f} sent; {figures['summaries']} summary calls in 42 turns)"),
        ]
    return rows, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20, help="offline turns to time (default 20)")
    parser.add_argument("--window-turns", type=int, default=20,
                        help="turns measured against prompt_eval_count")
    parser.add_argument("--backend", choices=("ollama", "openai"), default="ollama",
                        help="the API of the server at --host (default ollama)")
    parser.add_argument("--host", default="", help="a real server (default: the test server)")
    parser.add_argument("--model", default="llama3.1")
    parser.add_argument("--no-reuse", action="store_true", help="skip the prompt-cache reuse runs")
    parser.add_argument("--conversation-turns", type=int, default=42,
                        help="turns of the conversation told to a real OpenAI-compatible server (default 42)")
    parser.add_argument("--reply-tokens", type=int, default=64,
                        help="most tokens of a reply from a real server (max_tokens; default 64): the "
                             "figures are about prompts, and a small model may write until its window is "
                             "full")
    parser.add_argument("--timeout-s", type=float, default=600.0,
                        help="llm.timeout_s for a real server: seconds a reply may take (default 600: a "
                             "small machine evaluates a long prompt slowly)")
    args = parser.parse_args()
    rng = random.Random(7)
    print(f"{'measure':28} {'measured':>10} {'target':>10}  note")
    for name, measured, target, note in startup_rows(args.turns):
        flag = "ok" if measured <= target else "SLOW"
        print(f"{name:28} {measured:8.1f}ms {target:8d}ms  {flag} {note}")
    print()
    with tempfile.TemporaryDirectory() as home:
        os.environ["AGENTOS_HOME"] = home
        server = None
        if args.host:
            os.environ["OLLAMA_HOST" if args.backend == "ollama" else "OPENAI_BASE_URL"] = args.host
        else:
            from tests.ollama_server import ScriptedOllama

            server = ScriptedOllama(models=(args.model,), default="Noted.", context_length=32768).start()
            server.summarizer = lambda prompt: "- " + prompt.strip().splitlines()[-3][:200]
            os.environ["OLLAMA_HOST"] = server.host
        backend = args.backend if args.host else "ollama"
        Path(home, "config.yaml").write_text(
            f"llm:\n  backend: {backend}\n  model: {args.model}\n  timeout_s: {args.timeout_s}\n"
            "memory:\n  compact_summarizer: deterministic\n" + NO_REFLECTION)
        from core.engine import Engine

        try:
            with Engine("bench") as engine:
                if args.host:
                    cap_replies(engine.backend, args.reply_tokens)
                fill_session(engine, args.messages, rng)
                times = overhead(engine, args.runs)
                reports = estimate_reports(engine, args.window_turns, rng)
                window = engine.backend.window
                engine.manager.close()
        except AgentOSError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            if server is not None:
                server.stop()
    p50, p95 = statistics.median(times), sorted(times)[int(len(times) * 0.95) - 1]
    if not reports:
        print("error: the server reported no prompt_eval_count", file=sys.stderr)
        return 1
    first = abs(reports[0].error)
    quarter = statistics.mean(abs(r.chars / 4 - r.reported) / r.reported for r in reports)
    learned = statistics.mean(abs(r.error) for r in reports[len(reports) // 2:])
    model = "test server tokenizer" if not args.host else f"{args.model} at {args.host}"
    rows = [
        (f"planner prompt build p50, {args.messages}-message session", f"{p50:.2f} ms",
         f"<= {OVERHEAD_TARGET_MS} ms"),
        ("planner prompt build p95", f"{p95:.2f} ms", "(reported)"),
        (f"estimate error of chars/4 ({model})", f"{quarter:.1%}", "(mean |err| over every prompt)"),
        ("estimate error, first prompt", f"{first:.1%}", "(3 chars/token before learning)"),
        ("estimate error after learning (mean |err|, 2nd half)", f"{learned:.1%}", "<= 10%"),
        ("learned characters per token", f"{window.chars_per_token:.2f}",
         f"(window {window.num_ctx} tokens)"),
    ]
    reused = True
    if not args.no_reuse and not args.host:
        more, reused = reuse_rows(args.model)
        rows += more
    elif not args.no_reuse and args.backend == "openai":  # Ollama's API does not count the cached tokens
        more, reused = served_reuse_rows(args.host, args.model, args.conversation_turns, args.timeout_s,
                                         args.reply_tokens)
        rows += more
    width = max(len(r[0]) for r in rows)
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>10}  {target}")
    ok = p50 <= OVERHEAD_TARGET_MS and learned <= 0.10 and reused
    print("OK" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
