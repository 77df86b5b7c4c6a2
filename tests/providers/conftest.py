"""Provider fixtures: the conformance suite runs against every factory listed here."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from core.config import ProviderConfig
from core.memory.provider import Message, Session, ToolCall
from core.plugins.memory import PROVIDERS, open_provider
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider

# Every registered provider (core.plugins.memory.PROVIDERS): adding one there adds it to the contract.
PROVIDER_FACTORIES: dict[str, Callable[[Path, ProviderConfig], object]] = {
    name: lambda db, config,
    name=name: open_provider(name, db, summarizer=DeterministicSummarizer(), config=config)
    for name in PROVIDERS
}

# Adding a database to the contract is one line here (and a fixture).
DATABASES = ("sqlite", "postgres")

SMALL_CONFIG = ProviderConfig(
    fresh_tail=4, leaf_chunk_size=4, leaf_chunk_max_tokens=300, leaf_target_tokens=60,
    condensed_target_tokens=80
)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh memory.db path."""
    return tmp_path / "memory.db"


@pytest.fixture(params=DATABASES)
def database(request: pytest.FixtureRequest, db_path: Path):
    """Each database in turn: a fresh memory.db path, or a fresh schema on the test PostgreSQL server."""
    return db_path if request.param == "sqlite" else request.getfixturevalue("postgres_db")


@pytest.fixture(params=sorted(PROVIDER_FACTORIES))
def provider(request: pytest.FixtureRequest, database):
    """Each provider in turn, over each database."""
    opened = PROVIDER_FACTORIES[request.param](database, SMALL_CONFIG)
    yield opened
    opened.close()


@pytest.fixture
def lcm(db_path: Path):
    """An LCM provider with the deterministic summarizer and small chunks."""
    opened = LCMProvider(db_path, summarizer=DeterministicSummarizer(), config=SMALL_CONFIG)
    yield opened
    opened.close()


@pytest.fixture
def session() -> Session:
    return Session("finn:cli:main", agent_id="finn", user_id="ada", channel="cli")


def turn(n: int, with_tool: bool = False) -> list[Message]:
    """One turn of a conversation: a question, optionally a tool call and result, an answer."""
    messages = [Message("user", f"Question {n}: how do we handle case {n}? Please explain the details.")]
    if with_tool:
        messages += [
            Message("assistant", "", tool_calls=(ToolCall("lookup", {"case": n}),)),
            Message("tool", f"case {n} is handled by module m{n}", tool_name="lookup"),
        ]
    messages.append(Message("assistant", f"Answer {n}: case {n} goes through module m{n}. It is tested."))
    return messages


def conversation(turns: int, with_tools: bool = True) -> list[list[Message]]:
    """``turns`` turns; every third one uses a tool."""
    return [turn(n, with_tool=with_tools and n % 3 == 0) for n in range(turns)]


def same(a: Message, b: Message) -> bool:
    """Equal as stored content (ignoring timestamps)."""
    return a.to_ollama() == b.to_ollama()
