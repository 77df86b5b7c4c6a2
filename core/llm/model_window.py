"""Choosing a model's window and learning how its tokenizer counts.

The window is min(the model's trained context length, a ``num_ctx`` set in its
Modelfile, the configured ``llm.num_ctx``). After every reply the prompt size the
server reports (``prompt_eval_count``) is compared with the engine's own
estimate: the characters-per-token ratio is learned from it (smoothed and
bounded, kept per model in ``$AGENTOS_HOME/token_ratios.json``). A count that
fills the window, or one far below the estimate near the window's size (older
messages dropped), means the server cut the prompt: a WARNING with both numbers,
and the ratio is lowered (at least to the safe starting ratio) so later budgets are smaller.

Ollama keeps the previous prompt's KV cache and counts in ``prompt_eval_count`` only the tokens after
the prefix a prompt shares with the previous one. The meter therefore remembers the last prompt's text
(in the order the chat templates render it: system messages, tool definitions, the rest) and compares
the count with whichever of the whole prompt and its part after that prefix the learned ratio explains
better, since a server whose cache was taken by another request (a summary) counts the whole prompt.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from core.errors import StorageError
from core.llm.window import ContextWindow, tools_text
from core.durable import atomic_write
from core.paths import agents_home

log = logging.getLogger(__name__)

RATIOS_FILE = "token_ratios.json"
MIN_RATIO = 1.5
"""Fewest characters per token believed (below that a count is taken for noise)."""
MAX_RATIO = 8.0
SMOOTHING = 0.5
"""Weight of a new observation in the learned ratio."""
TRUNCATION_SHARE = 0.8
"""A reported count below this share of the estimate, for a prompt near the window, means it was cut."""
FULL_WINDOW = 0.98
"""A reported count this close to the window means the server cut the prompt to fit (a prompt the engine
sized itself always leaves room for the reply)."""
NEAR_WINDOW = 0.85
"""An estimate above this share of the window counts as "near" it."""
MIN_LEARN_CHARS = 200
"""Prompts shorter than this teach nothing (the template's fixed tokens dominate)."""

KEPT_REPORTS = 1000
UNLEARNED_CHARS_PER_TOKEN = 3.0
"""The ratio a model starts with before its first reply is measured: on the safe side of most
tokenizers (English prose is 3.5-4.5 characters a token, code and JSON fewer), so the first prompts
are not cut; the first replies correct it."""

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def model_limits(show: Mapping[str, Any] | Any) -> tuple[int | None, int | None]:
    """``(context_length, modelfile_num_ctx)`` from an ``/api/show`` answer (None when it says nothing)."""
    info = _field(show, "modelinfo") or _field(show, "model_info") or {}
    length = None
    arch = info.get("general.architecture")
    keys = [f"{arch}.context_length"] if arch else []
    keys += [k for k in info if k.endswith(".context_length")]
    for key in keys:
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            length = value
            break
    match = _NUM_CTX.search(_field(show, "parameters") or "")
    return length, int(match.group(1)) if match else None


def choose_num_ctx(configured: int, context_length: int | None, modelfile_num_ctx: int | None) -> int:
    """The window: the smallest of the model's length, the Modelfile's ``num_ctx`` and the configured one."""
    return min(v for v in (configured, context_length, modelfile_num_ctx) if v)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


class RatioStore:
    """Learned characters-per-token ratios by model, in ``$AGENTOS_HOME/token_ratios.json``."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or agents_home() / RATIOS_FILE
        self._lock = threading.Lock()

    def get(self, model: str) -> float | None:
        """The ratio learned for ``model``, or None."""
        value = self._read().get(model)
        return float(value) if isinstance(value, (int, float)) and MIN_RATIO <= value <= MAX_RATIO else None

    def put(self, model: str, ratio: float) -> None:
        """Record ``ratio`` for ``model`` (atomic replace of the file)."""
        with self._lock:
            data = self._read()
            data[model] = round(ratio, 4)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StorageError(f"cannot read {self.path}: {exc}; delete it to relearn the token "
                               "ratios") from exc
        return data if isinstance(data, dict) else {}


@dataclass
class PromptReport:
    """The last prompt: the engine's estimate against what the server counted."""

    chars: int = 0
    estimated: int = 0
    reported: int = 0
    truncated: bool = False

    @property
    def error(self) -> float:
        """Relative error of the estimate (+0.2: the estimate was 20% too high)."""
        return (self.estimated - self.reported) / self.reported if self.reported else 0.0


class WindowMeter:
    """Compares each prompt's estimate with the reported count; learns the ratio; spots cut prompts."""

    def __init__(self, window: ContextWindow, model: str, store: RatioStore | None = None) -> None:
        self.window = window
        self.model = model
        self.store = store
        self.last: PromptReport | None = None
        self.reports: deque[PromptReport] = deque(maxlen=KEPT_REPORTS)
        """The latest prompts learned from, oldest first (for benchmarks)."""
        self.previous = ""
        """The last prompt's text as :func:`prompt_text` renders it (what the server's cache may hold)."""
        self.saved: float | None = window.chars_per_token
        """The ratio last saved (or loaded)."""

    def observe_prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       reported: int | None) -> PromptReport | None:
        """Take the server's count for this chat request, knowing what it shares with the previous one."""
        text = prompt_text(messages, tools)
        shared = len(os.path.commonprefix([self.previous, text]))
        self.previous = text
        chars = prompt_chars(messages, tools)
        return self.observe(chars, reported, cached_chars=int(chars * shared / len(text)) if text else 0)

    def observe(self, chars: int, reported: int | None, cached_chars: int = 0,
                cuts: bool = True) -> PromptReport | None:
        """Take the server's count for a prompt of ``chars`` characters, of which the first ``cached_chars``
        the server may have kept in its cache; return the comparison. ``cuts``: the server cuts a prompt over
        its window (Ollama) rather than refuse it, so a count well below a near-window estimate is a cut."""
        if not reported or chars <= 0:
            return None
        fresh = chars - cached_chars
        ratio = self.window.chars_per_token
        if cached_chars and fresh > 0 and abs(fresh / reported - ratio) < abs(chars / reported - ratio):
            chars = fresh  # the server counted only what was not in its cache
        num_ctx = self.window.num_ctx
        estimated = max(1, int(chars / self.window.chars_per_token))
        report = PromptReport(chars=chars, estimated=estimated, reported=reported)
        near = estimated >= NEAR_WINDOW * num_ctx or reported >= NEAR_WINDOW * num_ctx
        full = reported >= FULL_WINDOW * num_ctx
        if cuts and (full or (near and reported < TRUNCATION_SHARE * estimated)):
            report.truncated = True
            log.warning("the model saw %d tokens of a prompt estimated at %d (window %d): the server cut it; "
                        "budgets are lowered for the next calls", reported, estimated, num_ctx)
            # The prompt's real size is unknown (only that it exceeded the window): back to the safe
            # starting ratio at least; uncut replies then relearn it.
            self._set_ratio(min(self.window.chars_per_token, chars / max(num_ctx, reported) * 0.95,
                                UNLEARNED_CHARS_PER_TOKEN))
        elif chars >= MIN_LEARN_CHARS and MIN_RATIO <= chars / reported <= MAX_RATIO:
            # (a count outside the bounds is not learned from: some Ollama versions counted only the
            # tokens not already in the prompt cache)
            self.reports.append(report)
            self._set_ratio((1 - SMOOTHING) * self.window.chars_per_token + SMOOTHING * chars / reported)
        self.last = report
        return report

    def refused(self, chars: int, tokens: int | None) -> PromptReport:
        """The server refused a prompt of ``chars`` characters as too long for the window (``tokens``: its
        count, if it said): the ratio is lowered as for a cut prompt, so the next prompts are smaller."""
        num_ctx = self.window.num_ctx
        estimated = max(1, int(chars / self.window.chars_per_token))
        report = PromptReport(chars=chars, estimated=estimated, reported=tokens or 0, truncated=True)
        log.warning("the server refused a prompt of %s tokens estimated at %d (window %d) as too long: "
                    "budgets are lowered for the next calls", tokens or "more than the window's", estimated,
                    num_ctx)
        self._set_ratio(min(self.window.chars_per_token, chars / max(num_ctx, tokens or 0) * 0.95,
                            UNLEARNED_CHARS_PER_TOKEN))
        self.last = report
        return report

    def _set_ratio(self, ratio: float) -> None:
        ratio = min(MAX_RATIO, max(MIN_RATIO, ratio))
        # Against the last saved value, so that many small steps are saved once they add up.
        changed = abs(ratio - (self.saved or 0.0)) >= 0.01
        self.window.chars_per_token = ratio
        if changed and self.store is not None:
            self.saved = ratio
            try:
                self.store.put(self.model, ratio)
            except (OSError, StorageError) as exc:
                log.warning("cannot save the learned token ratio of %s: %s", self.model, exc)

    def describe(self) -> str:
        """One line for ``/status``."""
        head = f"window {self.window.num_ctx} tokens, {self.window.chars_per_token:.2f} chars/token"
        if self.last is None:
            return f"{head}; no prompt measured yet"
        last = self.last
        cut = " (CUT by the server)" if last.truncated else ""
        return (f"{head}; last prompt {last.reported} tokens (estimated {last.estimated}, "
                f"error {last.error:+.0%}){cut}")


def initial_ratio(store: RatioStore | None, model: str) -> float:
    """The learned ratio of ``model`` if any, else :data:`UNLEARNED_CHARS_PER_TOKEN`."""
    if store is None:
        return UNLEARNED_CHARS_PER_TOKEN
    try:
        return store.get(model) or UNLEARNED_CHARS_PER_TOKEN
    except StorageError as exc:
        log.warning("%s; starting from %.1f characters per token", exc, UNLEARNED_CHARS_PER_TOKEN)
        return UNLEARNED_CHARS_PER_TOKEN


def prompt_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Characters of a chat request as the engine counts them: message texts, tool calls, tool definitions."""
    total = len(tools_text(tools))
    for message in messages:
        total += len(str(message.get("content") or ""))
        if message.get("tool_calls"):
            total += len(json.dumps(message["tool_calls"], ensure_ascii=False, default=str))
    return total


def prompt_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """A chat request in the order Ollama's templates render it: every system message first (Ollama
    gathers them into ``.System``), the tool definitions, then the other messages."""
    system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    rest = [str(m.get("content") or "") + (json.dumps(m["tool_calls"], ensure_ascii=False, default=str)
                                           if m.get("tool_calls") else "")
            for m in messages if m.get("role") != "system"]
    return "\n".join([*system, tools_text(tools), *rest])
