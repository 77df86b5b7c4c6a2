"""The message type of conversation memory, convertible to and from Ollama chat dicts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from core.durable import load_json
from core.errors import ValidationError, shown
from core.llm import estimate_tokens

ROLES = ("system", "user", "assistant", "tool")
MAX_MESSAGE_BYTES = 1024 * 1024
"""Largest message a provider stores (content plus tool calls, UTF-8): 1 MiB."""
MAX_ID_CHARS = 256
"""Longest session, agent, user or channel id a provider accepts."""
MAX_NAME_CHARS = 128
"""Longest tool name in a message."""


def check_id(value: object, what: str, required: bool = False) -> str:
    """Raise ValidationError unless ``value`` is an id a provider can store: text of at most
    ``MAX_ID_CHARS`` characters with no control characters (and not empty when ``required``)."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if required and not value:
        raise ValidationError(f"{what} must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise ValidationError(f"{what} is {len(value)} characters; the most allowed is {MAX_ID_CHARS}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValidationError(f"{what} {value[:40]!r} contains a control character")
    return value


@dataclass(frozen=True)
class ToolCall:
    """One function call requested by the assistant."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments as a JSON object."""

    def to_ollama(self) -> dict[str, Any]:
        """``{"function": {"name": ..., "arguments": {...}}}``."""
        return {"function": {"name": self.name, "arguments": dict(self.arguments)}}


@dataclass(frozen=True)
class Message:
    """One conversation message: user or system text, assistant text with tool calls, or a tool result."""

    role: str
    """``user``, ``assistant``, ``tool`` or ``system``."""
    content: str = ""
    """The text (for a tool message: the tool's result)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls requested by an assistant message."""
    tool_name: str = ""
    """For a tool message: the tool whose result this is."""
    created_at: str = ""
    """UTC ISO-8601 time; set on append when empty."""
    summary_id: str = ""
    """Set on messages that render a stored summary in assembled context (not sent to a model)."""

    def __post_init__(self) -> None:
        if isinstance(self.tool_calls, list):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        check_message(self)

    def to_ollama(self) -> dict[str, Any]:
        """The message as an Ollama chat dict."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_ollama() for call in self.tool_calls]
        if self.tool_name:
            out["tool_name"] = self.tool_name
        return out

    @classmethod
    def from_ollama(cls, data: Mapping[str, Any] | Any, created_at: str = "") -> "Message":
        """Build a message from an Ollama chat dict (or an ``ollama.Message`` object).

        Raises:
            ValidationError: the dict has no valid role or malformed tool calls.
        """
        if not isinstance(data, Mapping):
            data = _object_to_dict(data)
        calls = tuple(_tool_call(raw) for raw in data.get("tool_calls") or ())
        return cls(
            role=data.get("role", ""),
            content=data.get("content") or "",
            tool_calls=calls,
            tool_name=data.get("tool_name") or "",
            created_at=created_at,
        )

    def text(self) -> str:
        """The text a summarizer or search sees: content plus the tool calls as JSON."""
        if not self.tool_calls:
            return self.content
        calls = json.dumps([c.to_ollama()["function"] for c in self.tool_calls], ensure_ascii=False)
        return f"{self.content}\n[tool calls] {calls}" if self.content else f"[tool calls] {calls}"

    def tokens(self) -> int:
        """Estimated tokens of this message."""
        return estimate_tokens(self.text())


def check_message(message: Message) -> None:
    """Raise ValidationError unless ``message`` can be stored and sent."""
    if message.role not in ROLES:
        raise ValidationError(f"message role must be one of {', '.join(ROLES)}, got {shown(message.role)}")
    if not isinstance(message.content, str):
        raise ValidationError(f"message content must be a string, got {type(message.content).__name__}")
    try:
        size = len(message.content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValidationError(f"message content is not valid UTF-8 text: {exc}") from exc
    if not isinstance(message.tool_name, str) or len(message.tool_name) > MAX_NAME_CHARS:
        raise ValidationError(f"message tool_name must be a string of at most {MAX_NAME_CHARS} characters")
    if message.tool_calls and message.role != "assistant":
        raise ValidationError("only assistant messages may carry tool calls")
    for call in message.tool_calls:
        if not isinstance(call, ToolCall) or not isinstance(call.name, str) or not call.name:
            raise ValidationError(f"malformed tool call {call!r}: it needs a non-empty name")
        if not isinstance(call.arguments, dict):
            raise ValidationError(f"tool call {call.name!r}: arguments must be an object")
        if len(call.name) > MAX_NAME_CHARS:
            raise ValidationError(f"tool call name is {len(call.name)} characters; the most allowed is "
                                  f"{MAX_NAME_CHARS}")
        try:
            size += len(json.dumps(call.arguments, allow_nan=False).encode("utf-8", "surrogatepass"))
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"tool call {call.name!r}: arguments must be JSON data: {exc}") from exc
    if size > MAX_MESSAGE_BYTES:
        raise ValidationError(f"the message is {size} bytes; a provider stores at most {MAX_MESSAGE_BYTES} "
                              "(1 MiB): save large content to a workspace file and send its path")


def _tool_call(raw: Any) -> ToolCall:
    if not isinstance(raw, Mapping):
        raw = _object_to_dict(raw)
    function = raw.get("function") or {}
    if not isinstance(function, Mapping):
        function = _object_to_dict(function)
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        try:
            arguments = load_json(arguments)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"tool call arguments are not JSON: {exc}") from exc
    if not isinstance(arguments, Mapping):
        raise ValidationError(f"tool call arguments must be an object, got {shown(arguments)}")
    return ToolCall(name=function.get("name") or "", arguments=dict(arguments))


def _object_to_dict(obj: Any) -> dict[str, Any]:
    # ollama's pydantic models expose model_dump(); anything else must already be a mapping.
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise ValidationError(f"cannot read a chat message from {type(obj).__name__}")
    return dump()


def tool_calls_to_json(calls: tuple[ToolCall, ...]) -> str | None:
    """Serialise tool calls for storage (None when there are none)."""
    if not calls:
        return None
    return json.dumps([{"name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False)


def tool_calls_from_json(text: str | None) -> tuple[ToolCall, ...]:
    """Read tool calls stored by :func:`tool_calls_to_json`."""
    if not text:
        return ()
    return tuple(ToolCall(name=c["name"], arguments=c["arguments"]) for c in json.loads(text))
