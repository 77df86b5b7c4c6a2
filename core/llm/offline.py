"""The offline backend: a deterministic stand-in for a model, needing no server.

It understands a few explicit requests and drives the memory skills for them:

- "remember that my X is Y" / "my X is Y"  → ``save_fact`` (credentials as ``secret``)
- "what is my X?"                          → ``get_fact``, then answers with the value
- "continue"                               → reads NOW from the prompt, marks the run resumed, names the next
step
- "status"                                 → reports NOW from the prompt
- "publish to space X: TEXT"               → ``publish_memory`` (also "share with space X: TEXT")
- anything else                            → says what it knows from memory and ends the run ``blocked``

It reads memory the way a model does: from the system prompt and the memory message the engine builds.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from core.llm.backend import HANDOFF_OPENING, THIS_REQUEST, ChatReply, TextSink, ToolCall

NOTICE = (
    "WARNING: running with the OFFLINE backend (no model server). It only handles simple explicit "
    "requests (remember/what is my/publish to space/continue/status). For real answers start Ollama, or "
    "name a running server with --host URL or llm.host (llama.cpp's llama-server, LM Studio, vLLM: "
    "--backend openai --model NAME)."
)

BLOCKED_REASON = "the offline backend cannot carry out open-ended tasks: run with a model"

_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember(?:\s+that)?\s+)?my\s+(?P<key>[\w\s-]{1,60}?)\s+is\s+(?P<value>.+?)\.?$",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"^(?:what(?:'s| is)|tell me)\s+my\s+(?P<key>[\w\s-]{1,60}?)\s*\??$", re.IGNORECASE)
_PUBLISH = re.compile(r"^(?:please\s+)?(?:publish|share)\s+(?:to|with|in)\s+(?:the\s+)?(?:space\s+)?"
                      r"(?P<space>[a-z0-9][a-z0-9_-]{0,63})(?:\s+space)?\s*:\s*(?P<content>\S.*)$",
                      re.IGNORECASE | re.DOTALL)
_CONTINUE = re.compile(r"^(?:continue|resume|go on|carry on)\b", re.IGNORECASE)
_STATUS = re.compile(r"^(?:status|what are you doing|where are we)\b", re.IGNORECASE)
_WRITTEN_PATH = re.compile(r'"name": "write_file", "arguments": \{"path": "([^"]+)"')
_FINISHED = ("done", "idle")
"""NOW statuses with nothing left to continue."""
_OBJECTIVE_CHARS = 300
_SECRET_WORDS = ("key", "password", "passwd", "token", "secret", "pin", "passphrase", "credential")


def fact_key(words: str) -> str:
    """``API key`` → ``api_key``, ``café`` → ``café``: the key a phrase is saved under (the letters and digits
    of any script, in Unicode's composed form)."""
    return "_".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFC", words).lower())) or "fact"


def is_secret(key: str) -> bool:
    """True for keys that name credentials (stored in the ``secret`` category)."""
    return any(word in key.split("_") or key.endswith(word) for word in _SECRET_WORDS)


class OfflineBackend:
    """Deterministic rules over the conversation; see the module docstring."""

    name = "offline"
    model = "offline-rules"

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             on_text: TextSink | None = None) -> ChatReply:
        """Answer the last user message, or conclude after the tool results that follow it."""
        reply = self._answer(messages, tools)
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    def _answer(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        offered = {t["function"]["name"] for t in tools}
        # The instructions and the memory message (a user-side message headed "# Memory") are its context.
        system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system"
                             or _is_memory(m))
        user, results = _last_request(messages)
        if user.startswith(HANDOFF_OPENING):
            return ChatReply(text=handoff_summary(user))
        if results:
            return ChatReply(text=_conclude(user, results, system))
        return self._respond(unicodedata.normalize("NFC", user.strip()), system, offered)

    def _respond(self, text: str, system: str, offered: set[str]) -> ChatReply:
        if match := _QUESTION.match(text):
            key = fact_key(match["key"])
            if "get_fact" in offered:
                return _call("get_fact", key=key)
            return ChatReply(text=f"I cannot look up {key}: the get_fact skill is not available.")
        if match := _REMEMBER.match(text):
            key = fact_key(match["key"])
            if "save_fact" in offered:
                category = "secret" if is_secret(key) else "personal"
                return _call("save_fact", key=key, value=match["value"].strip(), category=category)
        if match := _PUBLISH.match(text):
            if "publish_memory" in offered:
                return _call("publish_memory", space=match["space"].lower(), content=match["content"].strip())
            return ChatReply(text="I cannot publish: the publish_memory skill is not offered here.")
        now = read_now_section(system, request=text)
        if _CONTINUE.match(text):
            if "update_status" in offered and now.get("next") and _status(now) not in _FINISHED:
                return _call("update_status", new_status=f"Resumed: {now['next']}")
            return ChatReply(text=_continue_text(now))
        if _STATUS.match(text):
            return ChatReply(text=_status_text(now))
        return ChatReply(text=(
            "I am the offline backend and cannot carry out open-ended tasks. "
            + _status_text(now)
            + " Ask me to remember a fact, ask for a saved fact, publish to a space ('publish to space NAME: "
            "TEXT'), or say 'continue' or 'status'."
        ), blocked=BLOCKED_REASON)


def _call(name: str, **arguments: Any) -> ChatReply:
    return ChatReply(tool_calls=(ToolCall(name=name, arguments=arguments),))


def _is_memory(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and str(message.get("content") or "").startswith("# Memory")


def _last_request(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The last user message and the tool results after it."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message["role"] == "tool":
            results.insert(0, message)
        elif message["role"] == "user" and not _is_memory(message):
            return str(message.get("content") or ""), results
    return "", results


def _conclude(user: str, results: list[dict[str, Any]], system: str) -> str:
    last = results[-1]
    try:
        data = json.loads(last.get("content") or "")
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return f"The tool {last.get('tool_name')} answered: {last.get('content')}"
    if "error" in data:
        return f"The tool {last.get('tool_name')} failed: {data['error']}"
    if last.get("tool_name") == "get_fact":
        if data.get("found"):
            return f"Your {data['key'].replace('_', ' ')} is {data['value']}."
        known = ", ".join(data.get("known_keys") or []) or "none"
        return f"I have no fact saved under {data.get('key')}. Known facts: {known}."
    if last.get("tool_name") == "save_fact":
        return f"Saved {data.get('saved')} ({data.get('category')}). I will remember it."
    if last.get("tool_name") == "publish_memory":
        return f"Published {data.get('id')}: the space's members can recall it now."
    if last.get("tool_name") == "update_status":
        return _continue_text(read_now_section(system), resumed=True)
    return f"Done: {last.get('tool_name')} returned {json.dumps(data)[:300]}"


def read_now_section(system: str, request: str = "") -> dict[str, str]:
    """Status, objective, current step and next open step from the prompt's NOW section (an objective that
    points to this turn's request is ``request``)."""
    now: dict[str, str] = {}
    for line in system.splitlines():
        for field in ("status", "objective", "current step"):
            if line.startswith(f"{field}: ") and field not in now:
                now[field] = line.split(": ", 1)[1].strip()
        if line.startswith("- [ ] ") and "next" not in now:
            now["next"] = line[6:].strip()
    if now.get("objective") == THIS_REQUEST:
        text = " ".join(request.split())
        now["objective"] = text if len(text) <= _OBJECTIVE_CHARS else text[:_OBJECTIVE_CHARS - 1] + "…"
    return now


def _status(now: dict[str, str]) -> str:
    """NOW's lifecycle status alone (the line reads e.g. ``active (version 7, updated 00:24:39)``)."""
    return now.get("status", "").split(" ", 1)[0]


def _status_text(now: dict[str, str]) -> str:
    if not now:
        return "I have no current status."
    return (f"Status: {now.get('status', 'idle')}. Objective: {now.get('objective', '(none)')}. "
            f"Current step: {now.get('current step', '(none)')}.")


def _continue_text(now: dict[str, str], resumed: bool = False) -> str:
    if not now.get("objective") or now.get("objective") == "(none)":
        return "There is nothing to continue: NOW.md has no objective."
    if _status(now) in _FINISHED and not resumed:
        return (f"There is nothing to continue: the last request ('{now['objective']}') is finished. "
                "Say what to do next.")
    step = now.get("next") or "(no open step in the plan)"
    verb = "Resumed" if resumed else "Continuing"
    return f"{verb} '{now['objective']}'. Next step: {step}. (A model is needed to carry it out.)"


def handoff_summary(prompt: str) -> str:
    """A deterministic handoff summary (seed 002 sections) extracted from the transcript in ``prompt``."""
    transcript = prompt.split("# Conversation", 1)[-1]
    lines = [line.strip() for line in transcript.splitlines() if line.strip()]
    users = [line[6:] for line in lines if line.startswith("user: ")]
    answers = [line[11:] for line in lines if line.startswith("assistant: ") and line[11:].strip()]
    files = sorted(set(_WRITTEN_PATH.findall(transcript)))
    failures = [line for line in lines if '"error"' in line][-3:]
    return "\n".join([
        "## Goal", users[0][:300] if users else "(unknown)",
        "## Progress", *(f"- {a[:200]}" for a in answers[-5:]), *([] if answers else ["(nothing yet)"]),
        "## Key Decisions", "(not recorded by the offline backend)",
        "## Files Changed", *(f"- {f}" for f in files), *([] if files else ["(none)"]),
        "## Current State", answers[-1][:300] if answers else "(no answer yet)",
        "## Blockers / Gotchas", *(f"- {f[:200]}" for f in failures), *([] if failures else ["(none)"]),
        "## Next Steps",
        f"- Continue from the last request: {users[-1][:200]}" if users else "- Ask the user",
    ])
