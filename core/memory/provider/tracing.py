"""A tracing wrapper: reports each provider call's operation, duration, counts and error.

The wrapper has exactly the methods of the provider it wraps, so capability
checks (``isinstance(traced, Searcher)``) give the same answer as on the
inner provider; :func:`unwrap` returns the innermost provider.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from core.memory.provider.capabilities import CAPABILITIES, Provider
from core.memory.provider.types import CompactionResult, ExpandResult


@dataclass(frozen=True)
class TraceEvent:
    """One traced provider call."""

    op: str
    """The method called, e.g. ``assemble``."""
    provider: str
    """The provider's name."""
    duration_s: float
    counts: dict[str, int] = field(default_factory=dict)
    """What went in or came out, e.g. ``{"messages": 12}``."""
    error: str = ""
    """``ErrorType: message`` when the call raised (the error is re-raised)."""


def _method_names() -> tuple[str, ...]:
    names: list[str] = []
    for proto in (Provider, *CAPABILITIES.values()):
        for member in proto.__dict__:
            if not member.startswith("_") and callable(proto.__dict__[member]) and member not in names:
                names.append(member)
    return tuple(names)


class TracedProvider:
    """Base of the generated tracing wrappers."""

    def __init__(self, inner: Any, hook: Callable[[TraceEvent], None]) -> None:
        self.inner = inner
        self.hook = hook

    @property
    def name(self) -> str:
        return self.inner.name

    def unwrap(self) -> Any:
        """The wrapped provider."""
        return self.inner


def _traced(op: str) -> Callable:
    def method(self: TracedProvider, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            result = getattr(self.inner, op)(*args, **kwargs)
        except BaseException as exc:
            self.hook(TraceEvent(op, self.inner.name, time.perf_counter() - started, _counts(op, args, None),
                                 f"{type(exc).__name__}: {exc}"))
            raise
        self.hook(TraceEvent(op, self.inner.name, time.perf_counter() - started, _counts(op, args, result)))
        return result

    method.__name__ = op
    return method


def _counts(op: str, args: tuple, result: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    if op == "append" and len(args) > 1:
        counts["messages_in"] = len(args[1])
    if isinstance(result, list):
        counts["results"] = len(result)
    elif isinstance(result, CompactionResult):
        counts.update(leaf=result.leaf_summaries_created, condensed=result.condensed_summaries_created,
                      messages=result.messages_compacted, tokens_before=result.tokens_before,
                      tokens_after=result.tokens_after)
    elif isinstance(result, ExpandResult):
        counts.update(messages=len(result.messages), children=len(result.children))
    return counts


@functools.lru_cache(maxsize=None)
def _wrapper_class(inner_class: type) -> type:
    methods = {
        op: _traced(op) for op in _method_names() if callable(getattr(inner_class, op, None))
    }
    return type(f"Traced{inner_class.__name__}", (TracedProvider,), methods)


def with_tracing(provider: Any, hook: Callable[[TraceEvent], None]) -> TracedProvider:
    """Wrap ``provider`` so ``hook`` receives a :class:`TraceEvent` after every call."""
    return _wrapper_class(type(provider))(provider, hook)


def unwrap(provider: Any) -> Any:
    """The innermost provider under any number of tracing wrappers."""
    while isinstance(provider, TracedProvider):
        provider = provider.unwrap()
    return provider
