"""Benchmark reflection on the project's scripted model server and print the figures beside their targets.

- throughput: a conversation of ``--entries`` user turns (a third state a fact in passing) reflected by
  a model that always answers well: entries reflected per second (the pipeline's own cost: the scripted
  server answers at once), model calls per 100 entries at the model's window (``--num-ctx``);
- the failure mix of local models (``tests/reflection/model.py``: realistic, then a model that fails one
  reply in two), on 150 turns read 5 at a time (as a small window reads them): the share of stated
  facts learned in one pass, of entries quarantined, of unusable
  replies and of values rejected (not in their entries); none lost: every stated fact is learned or its
  entry quarantined, and a second pass with a model that answers well learns the rest;
- the cost a turn pays: an ``append_log`` and an ``update_now`` while reflection idles and while its model
  call hangs (the call holds no lock: the figures should match), and ``reflect_soon()`` itself.

The model is the scripted Ollama-compatible server of the tests (real HTTP, the real ``ollama`` client);
the recall quality reflection adds on real conversations needs a real model: ``scripts/bench_longmemeval.py
--backend ollama --host URL --model NAME``.

    .venv/bin/python scripts/bench_reflect.py [--entries 400] [--num-ctx 4096] [--turns 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tests.ollama_server import Block, ScriptedOllama, verbatim  # noqa: E402
from tests.reflection.corpus import conversation  # noqa: E402
from tests.reflection.model import HARSH, REALISTIC, ReflectingModel  # noqa: E402

MODEL = "qwen2.5"
THROUGHPUT_TARGET = 50.0
"""Entries reflected per second on the scripted server (the pipeline's own cost), at least."""
CALLS_TARGET = 10.0
"""Model calls per 100 entries at a 4,096-token window, at most."""
TURN_COST_TARGET = 1.5
"""An append's p50 while a reflection call hangs, at most this many times its p50 with reflection idle."""


def home_with(config: str) -> str:
    home = tempfile.mkdtemp(prefix="bench-reflect-")
    Path(home, "config.yaml").write_text(config, encoding="utf-8")
    os.environ["AGENTOS_HOME"] = home
    return home


def config(num_ctx: int, timeout_s: float = 2.0, batch: int = 40) -> str:
    return (
        "cold: {embedder: fake}\nmemory: {auto_compact: false}\n"
        f"llm: {{backend: ollama, model: {MODEL}, num_ctx: {num_ctx}}}\n"
        f"reflect: {{enabled: 'true', timeout_s: {timeout_s}, interval_s: 3600, batch_entries: {batch}}}\n"
    )


def reflect_corpus(server: ScriptedOllama, model: ReflectingModel, entries: int, num_ctx: int, seed: int,
                   batch: int = 40) -> dict:
    """Reflect a fresh conversation once (at most ``batch`` entries a call); its figures."""
    from core.llm.ollama_backend import OllamaBackend
    from core.memory_manager import MemoryManager

    home_with(config(num_ctx, timeout_s=0.5, batch=batch))
    backend = OllamaBackend(MODEL, server.host, timeout_s=10.0, num_ctx=num_ctx)
    turns, stated = conversation(entries, seed=seed, facts=min(20, entries // 3))
    with MemoryManager("bench") as manager:
        seqs = {text: manager.append_log("USER_FEEDBACK", text) for text in turns}
        began = time.perf_counter()
        report = manager.reflection.run(backend)
        seconds = time.perf_counter() - began
        facts = {f["key"]: f["value"] for f in manager.list_facts()}
        held = {q["item"] for q in manager.reflection.status()["quarantined"]}
        learned = sum(facts.get(s.key) == s.value for s in stated)
        lost = [s for s in stated if facts.get(s.key) != s.value and f"log:{seqs[s.text]}" not in held]
        model.use({"valid": 1.0})
        manager.reflection.run(backend, retry_all=True)
        after = {f["key"]: f["value"] for f in manager.list_facts()}
    return {"entries": report.entries, "seconds": seconds, "calls": report.calls, "failed": report.failed,
            "rejected": report.rejected, "quarantined": len(held), "stated": len(stated), "learned": learned,
            "lost": len(lost), "after_retry": sum(after.get(s.key) == s.value for s in stated),
            "batches": report.batches, "split": report.split}


def turn_cost(server: ScriptedOllama, turns: int) -> dict[str, float]:
    """Median and p99 of an append and a NOW.md update, reflection idle and with its model call hanging."""
    from core.llm.ollama_backend import OllamaBackend
    from core.memory_manager import MemoryManager

    home_with(config(4096, timeout_s=600.0))
    backend = OllamaBackend(MODEL, server.host, timeout_s=600.0, num_ctx=4096)
    out: dict[str, float] = {}
    with MemoryManager("bench") as manager:
        manager.append_log("USER_FEEDBACK", "my editor is Helix")
        out["idle"], out["idle_p99"] = _timed(manager, turns)
        server.forget_requests()  # and quiet about the held request the close abandons
        held = Block(then=verbatim('{"facts": [], "events": [], "contradictions": []}'))
        server.enqueue(held)
        began = time.perf_counter()
        manager.reflect_soon(backend)
        out["reflect_soon_ms"] = (time.perf_counter() - began) * 1000
        held.entered.wait(60)
        out["held"], out["held_p99"] = _timed(manager, turns)
        held.release()
    return out


def _timed(manager, turns: int) -> tuple[float, float]:
    times = []
    for n in range(turns):
        began = time.perf_counter()
        manager.append_log("THOUGHT", f"step {n}: still working")
        manager.update_now(f"Step {n}")
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=400, help="user turns in the throughput conversation")
    parser.add_argument("--num-ctx", type=int, default=4096, help="the model's window")
    parser.add_argument("--turns", type=int, default=300, help="appends timed for the turn cost")
    parser.add_argument("--mix-batch", type=int, default=5,
                        help="entries a call under the failure mixes (small, as a small window makes them)")
    args = parser.parse_args(argv)
    model = ReflectingModel()
    with ScriptedOllama(models=(MODEL,), default=model) as server:
        fast = reflect_corpus(server, model, args.entries, args.num_ctx, seed=1)
        mixes = {}
        for name, mix, seed in (("realistic", REALISTIC, 11), ("harsh", HARSH, 15)):
            model.use(mix, seed=seed)
            mixes[name] = reflect_corpus(server, model, 150, args.num_ctx, seed=11, batch=args.mix_batch)
        model.use({"valid": 1.0})
        cost = turn_cost(server, args.turns)
        model.release()
    rate = fast["entries"] / fast["seconds"]
    calls = 100 * fast["calls"] / max(1, fast["entries"])
    print(f"\nreflection on the scripted server, window {args.num_ctx} tokens, {fast['entries']} entries")
    print(f"{'measure':<58} {'value':>10} {'target':>10}")
    print(f"{'entries reflected per second':<58} {rate:>10.1f} {'>= ' + str(THROUGHPUT_TARGET):>10}")
    print(f"{'model calls per 100 entries':<58} {calls:>10.2f} {'<= ' + str(CALLS_TARGET):>10}")
    for name, figures in mixes.items():
        stated = figures["stated"]
        print(f"\nfailure mix {name!r}: {figures['entries']} entries, {figures['batches']} batches, "
              f"{figures['calls']} calls")
        print(f"{'  stated facts learned in one pass':<58} {100 * figures['learned'] / stated:>9.1f}%")
        print(f"{'  entries quarantined':<58} {100 * figures['quarantined'] / figures['entries']:>9.1f}%")
        print(f"{'  batches split after a retry failed':<58} {figures['split']:>10}")
        print(f"{'  replies unusable (asked again, split or quarantined)':<58} "
              f"{100 * figures['failed'] / figures['calls']:>9.1f}%")
        print(f"{'  values rejected (not in their entries)':<58} {figures['rejected']:>10}")
        print(f"{'  stated facts lost (neither learned nor quarantined)':<58} {figures['lost']:>10} "
              f"{'0':>10}")
        print(f"{'  learned after one retry with a model that answers well':<58} "
              f"{100 * figures['after_retry'] / stated:>9.1f}% {'100%':>10}")
    ratio = cost["held"] / cost["idle"]
    print(f"\nthe cost a turn pays (append_log + update_now, {args.turns} each)")
    print(f"{'  p50 / p99 with reflection idle (ms)':<58} {cost['idle']:>5.2f} / {cost['idle_p99']:.2f}")
    print(f"{'  p50 / p99 while a reflection call hangs (ms)':<58} {cost['held']:>5.2f} / "
          f"{cost['held_p99']:.2f}")
    print(f"{'  ratio of the p50s':<58} {ratio:>10.2f} {'<= ' + str(TURN_COST_TARGET):>10}")
    print(f"{'  reflect_soon() itself (ms)':<58} {cost['reflect_soon_ms']:>10.3f}")
    ok = (rate >= THROUGHPUT_TARGET and calls <= CALLS_TARGET and ratio <= TURN_COST_TARGET
          and all(f["lost"] == 0 and f["after_retry"] == f["stated"] for f in mixes.values()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
