"""The memory message: before the turn's request, read at every call, and saying each thing once."""

from __future__ import annotations

from tests.window.conftest import write_config

REQUEST = ("Please plan the orchard harvest: the north rows ripen first, the pickers arrive on Monday, "
           "and the cider press needs a new belt before Thursday.")
FOLLOW_UP = "Also book the van for Friday morning, the big one with the ramp, and tell the pickers."
THIRD = "And order lunch for the pickers on Monday: sandwiches, apples from the north rows, and cider."


def test_the_request_is_sent_once_and_comes_after_the_memory(make_server, agents_home, make_engine, api):
    """NOW's objective and the RUN_START and USER_FEEDBACK entries repeat the user's request: the memory
    message points to it instead (NOW's objective to this turn's request, the entries to the conversation,
    where the requests stay after the memory in the prompts of later turns), and it comes right before the
    request, the prompt's last message; NOW.md and LOG.md themselves keep the text. A third turn's prompt
    keeps that memory message and the requests after it."""
    server = make_server(context_length=8192, default="Noted.")
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    engine = make_engine()
    assert engine.run(REQUEST).ok
    assert engine.run(FOLLOW_UP).ok
    assert engine.run(THIRD).ok

    for body, request in zip(server.chat_requests, (REQUEST, FOLLOW_UP)):
        messages = body["messages"]
        assert messages[-2]["content"].startswith("# Memory") and messages[-1]["content"] == request
        rendered = "\n".join(str(m["content"]) for m in messages)
        assert rendered.count(REQUEST[:60]) == 1, rendered
        assert "objective: (this turn's request: the user's newest message)" in messages[-2]["content"]
    memory = server.chat_requests[1]["messages"][-2]["content"]
    assert memory.count("USER_FEEDBACK: (that turn's request: the user's message in the conversation)") == 2
    assert "USER_FEEDBACK: (this turn's request" not in memory
    assert "RUN_START: (the request logged in #" in memory
    third = server.chat_requests[2]["messages"]
    assert third[-4:] == [{"role": "user", "content": memory}, {"role": "user", "content": FOLLOW_UP},
                          {"role": "assistant", "content": "Noted."}, {"role": "user", "content": THIRD}]
    assert engine.manager.now_state().objective.startswith(THIRD[:60])
    logged = [e.content for e in engine.manager.scan_log().entries if e.type == "USER_FEEDBACK"]
    assert logged == [REQUEST, FOLLOW_UP, THIRD]


def test_a_request_that_could_fill_the_window_comes_after_the_memory(make_server, agents_home, make_engine,
                                                                     api):
    """A request that alone could take half the window goes last too, as every request: a server that must
    drop a message to fit (Ollama always keeps the last one) drops the memory, not the request."""
    server = make_server(context_length=131072, default="Noted.")  # a 16,384-token window (llm.num_ctx)
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    engine = make_engine()
    document = "The orchard has forty rows of apple trees. " * 600  # ~26,000 characters: fits, whole
    assert engine.run("Read this. " + document + " What is it about?").ok
    assert engine.run("Thanks, and how many rows are there?").ok

    messages = server.chat_requests[0]["messages"]
    assert server.truncated == [] and messages[-1]["content"].endswith("What is it about?")
    assert messages[-2]["content"].startswith("# Memory")
    assert messages[-1]["content"].startswith("Read this.")
    later = server.chat_requests[1]["messages"]
    assert later[-2]["content"].startswith("# Memory") and later[-1]["content"].startswith("Thanks")


def test_a_runs_later_step_is_the_first_steps_prompt_and_the_step(make_server, agents_home, make_engine, api):
    """At a run's second step the prompt is the first step's with the step's tool call and result added: the
    memory message stays as it was (the conversation shows the fact the step saved), so the server's cache
    holds all of the first step's prompt. The fact is in the memory when it is next read (the next turn: NOW
    changed)."""
    from tests.ollama_server import tool_call

    server = make_server(context_length=8192, default="Noted.")
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    server.enqueue(tool_call("save_fact", key="van", value="the big one", category="general"), "Saved.")
    engine = make_engine()
    assert engine.run(FOLLOW_UP).ok
    assert engine.run(THIRD).ok

    first, second, third = (body["messages"] for body in server.chat_requests)
    assert second[:len(first)] == first and [m["role"] for m in second[len(first):]] == ["assistant", "tool"]
    assert first[-2]["content"].startswith("# Memory") and "van (general)" not in first[-2]["content"]
    assert server.prompts[1].cached_tokens >= server.prompts[0].rendered_tokens - 1
    assert third[-2]["content"].startswith("# Memory") and third[-1]["content"] == THIRD
    assert "van (general): the big one" in third[-2]["content"].split("## Facts")[1]
