"""The OpenAI chat-completions face of the scripted server (:mod:`tests.ollama_server`), answering as
llama.cpp's ``llama-server`` does, so that one script serves both backends.

- ``GET /v1/models`` lists the server's models; ``GET /props`` gives ``default_generation_settings.n_ctx``
  (flavour ``llamacpp``); flavour ``vllm`` has no ``/props`` and gives ``max_model_len`` in the model list;
  flavour ``lmstudio`` answers ``/api/v0/models/<model>`` with ``loaded_context_length``; flavour ``plain``
  says nothing of its window (as Ollama's ``/v1`` or LocalAI).
- ``POST /v1/chat/completions``: the request is turned into the shape the Ollama face works on (tool-call
  arguments parsed from their JSON text, a tool result named by the call its id answers) and recorded so;
  the original body is kept under ``"openai"``. A JSON schema in ``response_format`` is its ``format``.
- The window is the server's ``n_ctx`` whatever the request says. A prompt of ``n_ctx`` tokens or more is
  refused with HTTP 400 ``exceed_context_size_error``, as llama-server refuses it (``overflow="refuse"``),
  or cut as Ollama cuts it (``overflow="truncate"``: LM Studio's and Ollama's ``/v1`` way).
- The reply streams as server-sent events: the text in pieces, each tool call as its name and then its
  arguments' JSON in fragments, the finish reason, and (with ``stream_options.include_usage``) a last
  chunk with ``usage`` (``prompt_tokens`` the whole prompt, ``prompt_tokens_details.cached_tokens`` what
  the cache held) and llama.cpp's ``timings`` (``cache_n``, ``prompt_n``, ``predicted_n``).
- Errors come as ``{"error": {"code", "message", "type"}}``; a model the server does not serve is a 404.
"""

from __future__ import annotations

import json
from typing import Any

CREATED = 1769860800
ARGUMENT_PIECE = 7
"""Characters of a tool call's arguments per streamed chunk."""


def models(server: Any) -> dict[str, Any]:
    """The ``/v1/models`` answer."""
    entries = []
    for name in sorted(server.models):
        entry: dict[str, Any] = {"id": name, "object": "model", "created": CREATED,
                                 "owned_by": {"llamacpp": "llamacpp", "vllm": "vllm"}.get(server.flavour,
                                                                                          "organization")}
        if server.flavour == "llamacpp":
            entry["meta"] = {"n_ctx_train": server.context_length, "vocab_type": 2}
        if server.flavour == "vllm":
            entry["max_model_len"] = server.n_ctx
        entries.append(entry)
    return {"object": "list", "data": entries}


def props(server: Any) -> dict[str, Any] | None:
    """llama.cpp's ``/props`` (None: the server has no such endpoint)."""
    if server.flavour != "llamacpp":
        return None
    return {"default_generation_settings": {"n_ctx": server.n_ctx, "params": {"cache_prompt": True}},
            "total_slots": 1, "model_path": f"/models/{sorted(server.models)[0]}.gguf",
            "chat_template": "{# ChatML #}", "build_info": "scripted"}


def studio_model(server: Any, name: str) -> dict[str, Any] | None:
    """LM Studio's ``/api/v0/models/<name>`` (None: the server has no such endpoint or model)."""
    if server.flavour != "lmstudio" or name not in server.models:
        return None
    return {"id": name, "object": "model", "type": "llm", "state": "loaded", "arch": "llama",
            "max_context_length": server.context_length, "loaded_context_length": server.n_ctx}


def internal(body: dict[str, Any]) -> dict[str, Any]:
    """The request in the Ollama face's shape (the original kept under ``"openai"``)."""
    names: dict[str, str] = {}
    messages = []
    for message in body.get("messages") or []:
        out: dict[str, Any] = {"role": message.get("role"), "content": _text(message.get("content"))}
        if message.get("tool_calls"):
            out["tool_calls"] = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[str(call.get("id"))] = str(function.get("name"))
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = function.get("arguments")
                out["tool_calls"].append({"function": {"name": function.get("name"), "arguments": arguments}})
        if message.get("role") == "tool":
            out["tool_name"] = names.get(str(message.get("tool_call_id")), "")
        messages.append(out)
    return {"model": body.get("model"), "messages": messages, "tools": body.get("tools") or [],
            "format": _format(body.get("response_format")), "stream": bool(body.get("stream")),
            "openai": body}


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return str(content or "")


def _format(response_format: Any) -> Any:
    """The JSON schema a ``response_format`` asks for (``"json"`` for any object; None for none)."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema") or "json"
    if response_format.get("type") == "json_object":
        return response_format.get("schema") or "json"
    return None


def error(status: int, message: str, kind: str = "") -> dict[str, Any]:
    """An error body as llama-server writes it."""
    kinds = {400: "invalid_request_error", 404: "not_found_error", 500: "server_error",
             503: "unavailable_error"}
    return {"error": {"code": status, "message": message, "type": kind or kinds.get(status, "server_error")}}


def usage(prompt: Any, completion: int) -> dict[str, Any]:
    """The ``usage`` of a reply to ``prompt`` (a :class:`tests.ollama_server.Prompt`)."""
    return {"prompt_tokens": prompt.rendered_tokens, "completion_tokens": completion,
            "total_tokens": prompt.rendered_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": prompt.cached_tokens}}


def timings(prompt: Any, completion: int) -> dict[str, Any]:
    """llama.cpp's ``timings``."""
    return {"cache_n": prompt.cached_tokens, "prompt_n": prompt.evaluated, "prompt_ms": 1.0,
            "predicted_n": completion, "predicted_ms": 1.0}


def completion(model: str, message: dict[str, Any], prompt: Any, completion_tokens: int) -> dict[str, Any]:
    """The non-streamed answer."""
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": CREATED, "model": model,
            "choices": [{"index": 0, "message": _wire_message(message), "finish_reason": _finish(message)}],
            "usage": usage(prompt, completion_tokens), "timings": timings(prompt, completion_tokens)}


def chunks(model: str, message: dict[str, Any], prompt: Any, completion_tokens: int, include_usage: bool,
           piece: int) -> list[dict[str, Any]]:
    """The streamed answer's chunks, in order (without the closing ``[DONE]``)."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": CREATED,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": None})]
    text = str(message.get("content") or "")
    out += [chunk({"content": text[i:i + piece]}) for i in range(0, len(text), piece)]
    for index, call in enumerate(_wire_message(message).get("tool_calls") or []):
        function = call["function"]
        out.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                          "function": {"name": function["name"], "arguments": ""}}]}))
        arguments = function["arguments"]
        out += [chunk({"tool_calls": [{"index": index,
                                       "function": {"arguments": arguments[i:i + ARGUMENT_PIECE]}}]})
                for i in range(0, len(arguments), ARGUMENT_PIECE)]
    out.append(chunk({}, _finish(message)))
    last = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": CREATED, "model": model,
            "choices": []}
    if include_usage:
        last["usage"] = usage(prompt, completion_tokens)
    last["timings"] = timings(prompt, completion_tokens)
    out.append(last)
    return out


def _wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message as the API writes it: tool-call arguments as JSON text (a string stays as it
    is)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or None}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = []
        for n, call in enumerate(calls):
            function = call.get("function") or {}
            arguments = function.get("arguments")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            out["tool_calls"].append({"id": f"call_{n}", "type": "function",
                                      "function": {"name": function.get("name"), "arguments": text}})
    return out


def _finish(message: dict[str, Any]) -> str:
    if message.get("cut"):
        return "length"
    return "tool_calls" if message.get("tool_calls") else "stop"
