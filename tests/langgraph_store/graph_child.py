"""A small LangGraph app whose nodes write and read memories through ``runtime.store``.

    python -m tests.langgraph_store.graph_child write|read   (AGENTOS_HOME set by the caller)
"""

from __future__ import annotations

import json
import sys
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from core.langgraph_store import AgentOSStore

NAMESPACE = ("memories", "ada")


class State(TypedDict, total=False):
    facts: list[str]
    question: str
    found: list[dict]


def remember(state: State, runtime: Runtime) -> State:
    for i, fact in enumerate(state["facts"]):
        runtime.store.put(NAMESPACE, f"fact-{i}",
                          {"content": fact, "kind": "preference" if "prefers" in fact else "other"})
    return {}


def recall(state: State, runtime: Runtime) -> State:
    found = runtime.store.search(NAMESPACE, query=state["question"], limit=2)
    return {"found": [{"key": item.key, "content": item.value["content"],
                       "score": item.score} for item in found]}


def graph(node):
    builder = StateGraph(State)
    builder.add_node("step", node)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(store=AgentOSStore("finn", index={"fields": ["content"]}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        graph(remember).invoke({"facts": ["Ada prefers tea over coffee", "Ada's cat is called Pixel",
                                          "Ada works on compilers in Rust"]})
        print("written")
    else:
        result = graph(recall).invoke({"question": "what does Ada like to drink?"})
        print(json.dumps(result["found"]))
