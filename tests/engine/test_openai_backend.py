"""The OpenAI-compatible backend's key and timeout: the key from the environment, a clear error without it,
and a server that does not answer in time."""

from __future__ import annotations

import pytest

from core.errors import BackendError
from core.llm.openai_backend import OpenAIBackend
from tests.ollama_server import Block, ScriptedOllama

HELLO = [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize(("variables", "answered"), [
    ({}, False),
    ({"OPENAI_API_KEY": "sk-local"}, True),
    ({"AGENTOS_LLM_API_KEY": "sk-local"}, True),
    ({"AGENTOS_LLM_API_KEY": "sk-local", "OPENAI_API_KEY": "sk-other"}, True),
    ({"AGENTOS_LLM_API_KEY": "sk-other", "OPENAI_API_KEY": "sk-local"}, False),
])
def test_the_api_key_comes_from_agentos_llm_api_key_then_openai_api_key(monkeypatch, variables, answered):
    """A server started with a key (``llama-server --api-key``) answers the key of $AGENTOS_LLM_API_KEY, else
    of $OPENAI_API_KEY; without the right one the error names both variables and nothing is answered."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with ScriptedOllama(apis=("openai",), api_key="sk-local", default="Hello.") as server:
        backend = OpenAIBackend("llama3.1", server.host)
        if answered:
            assert backend.chat(HELLO, []).text == "Hello."
        else:
            with pytest.raises(BackendError,
                               match=r"refused the request \(HTTP 401: Invalid API Key\): set its API "
                                     r"key in AGENTOS_LLM_API_KEY \(or OPENAI_API_KEY\)"):
                backend.chat(HELLO, [])
            assert server.prompts == []


def test_a_server_that_does_not_answer_in_time_is_an_error_naming_llm_timeout_s():
    """A reply that does not come within ``llm.timeout_s`` ends the call with an error that names the setting
    (the server holds the request open until the test ends)."""
    held = Block(then="Too late.")
    with ScriptedOllama(apis=("openai",)) as server:
        server.enqueue(held)
        backend = OpenAIBackend("llama3.1", server.host, timeout_s=1.0)
        try:
            with pytest.raises(BackendError, match=r"did not answer within 1s: raise llm.timeout_s"):
                backend.chat(HELLO, [])
            assert held.entered.is_set() or server.chat_requests, "the request reached the server"
        finally:
            held.release()
