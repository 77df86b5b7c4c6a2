"""LLM backends and what the memory and the engine need of a model.

    from core.llm import choose_backend, generate_with
    backend = choose_backend(config.llm).backend      # Ollama, or the offline backend when none answers
    reply = backend.chat(messages, tools=[...])

The engine talks to a model only through :class:`Backend`; a model's window is a
:class:`ContextWindow` (token estimates: :func:`estimate_tokens`), text too long for it is read in
pieces that fit (:func:`pack`, :func:`map_reduce`), and the embedders turn text into vectors
(:func:`make_embedder`). Import the names below from here; the modules of this package import each
other directly.

:class:`OllamaBackend` and :func:`ollama_errors` import the ``ollama`` client and httpx, and
:class:`SummaryReply` pydantic, which every process that imports the memory would otherwise pay for at
start-up although most never ask a model (a recall, an MCP server's reads): they load on first use (a type
checker sees them as usual).
"""

from __future__ import annotations

import importlib
import typing

from core.llm.backend import (
    DEFAULT_HOST,
    HANDOFF_OPENING,
    THIS_REQUEST,
    Backend,
    BackendGenerate,
    ChatReply,
    TextSink,
    ToolCall,
    generate_with,
    resolve_host,
)
from core.llm.embedding.embedders import MiniLMEmbedder, OllamaEmbedder, make_embedder
from core.llm.embedding.token_batches import MAX_WORKERS, embed_texts, workers
from core.llm.embedding.vectors import Embedder, checked_vectors
from core.llm.fitting import BoundedModel, map_reduce, pack, reduce, room_chars, window_of_generate
from core.llm.model_window import RatioStore, WindowMeter, choose_num_ctx, initial_ratio, model_limits
from core.llm.offline import OfflineBackend
from core.llm.select import Choice, choose_backend
from core.llm.structured import StructuredReplyError, ThinkFilter, parse_reply, strip_think
from core.llm.templates import fill, load_prompt
from core.llm.window import ContextWindow, estimate_tokens, tools_text

if typing.TYPE_CHECKING:
    from core.llm.ollama_backend import OllamaBackend, ollama_errors
    from core.llm.shapes import SummaryReply

from core.llm.served import PromptCounts

__all__ = [
    "DEFAULT_HOST", "HANDOFF_OPENING", "MAX_WORKERS", "THIS_REQUEST", "Backend", "BackendGenerate",
    "BoundedModel", "ChatReply", "Choice", "ContextWindow", "Embedder", "MiniLMEmbedder", "OfflineBackend",
    "OllamaBackend", "OllamaEmbedder", "PromptCounts", "RatioStore", "StructuredReplyError", "SummaryReply",
    "TextSink", "ThinkFilter", "ToolCall", "WindowMeter", "checked_vectors", "choose_backend",
    "choose_num_ctx", "embed_texts", "estimate_tokens", "fill", "generate_with", "initial_ratio",
    "load_prompt", "make_embedder", "map_reduce", "model_limits", "ollama_errors", "pack", "parse_reply",
    "reduce", "resolve_host", "room_chars", "strip_think", "tools_text", "window_of_generate", "workers",
]

_ON_FIRST_USE = {"OllamaBackend": "core.llm.ollama_backend", "ollama_errors": "core.llm.ollama_backend",
                 "SummaryReply": "core.llm.shapes"}


def __getattr__(name: str) -> typing.Any:
    if name in _ON_FIRST_USE:
        return getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
