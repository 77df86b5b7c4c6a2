"""Shared fixtures: every test gets its own agents home (embedding with the test embedder unless it asks
for the real model) and a one-thread torch; which tests the default run leaves to ``--full``."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Torch threads collapse when the other core is busy; child processes inherit these.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


from faults import full_disk  # noqa: E402,F401 - a fixture for every test: the agents home on a small tmpfs


SLOW_FOLDERS = ("torture", "postgres")
"""Folders of tests/ whose every test is slow: the torture campaigns, the PostgreSQL server's trials."""
POSTGRES_FIXTURES = {"postgres_server", "postgres_db", "pg_home"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="run every test, the slow ones too (crash and torture trials, processes, the "
                          "browser, PostgreSQL, the real model's quality): what CI runs")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests (besides those marked in their modules: the folders of SLOW_FOLDERS, the browser
    and PostgreSQL tests, the tests of the real embedding model, which use the ``minilm`` fixture, and those
    of the real chat model on llama.cpp's server, which use ``llama_server``); a plain
    ``pytest`` (no --full, no -m, no paths named) leaves them out."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
    if not fast_set_only(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def fast_set_only(config: pytest.Config) -> bool:
    """Whether this run is the default fast set: ``pytest`` alone (the same in xdist's workers, which get
    the command's own arguments)."""
    return (not config.getoption("full") and not config.option.markexpr
            and config.args_source == pytest.Config.ArgsSource.TESTPATHS)


def _is_slow(item: pytest.Item) -> bool:
    parts = Path(str(item.path)).relative_to(ROOT / "tests").parts
    params = getattr(item, "callspec", None)
    return (parts[0] in SLOW_FOLDERS or item.get_closest_marker("browser") is not None
            or bool(POSTGRES_FIXTURES & set(item.fixturenames)) or "minilm" in item.fixturenames
            or "llama_server" in item.fixturenames
            or (params is not None and "postgres" in params.params.values()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker: hand the torture campaigns' results to the controller, which prints the table."""
    if hasattr(session.config, "workeroutput"):
        from tests.torture.harness import RESULTS

        session.config.workeroutput["torture_results"] = [dataclasses.asdict(r) for r in RESULTS]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """In xdist's controller: collect a worker's torture results."""
    from tests.torture.harness import RESULTS, Result

    RESULTS.extend(Result(**row) for row in getattr(node, "workeroutput", {}).get("torture_results", []))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The torture campaigns' table, at the end of a run that ran any (and in ``torture.md`` of pytest's
    temp folder)."""
    from tests.torture.harness import RESULTS, table

    if not RESULTS or hasattr(config, "workeroutput"):
        return
    text = table(RESULTS)
    terminalreporter.write_sep("=", "torture campaigns")
    terminalreporter.write_line(text)
    basetemp = config._tmp_path_factory.getbasetemp() if hasattr(config, "_tmp_path_factory") else None
    if basetemp is not None:
        (Path(basetemp) / "torture.md").write_text(text + "\n", encoding="utf-8")


@pytest.fixture(autouse=True)
def agents_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                request: pytest.FixtureRequest) -> Iterator[Path]:
    """Point ``AGENTOS_HOME`` at a fresh folder and keep model servers unreachable unless a test says so.

    Its ``config.yaml`` sets ``cold.embedder: fake`` (hashed words, :mod:`core.llm.embedding.hashed_embedder`)
    and
    ``reflect.enabled: false``, except
    for tests that use the ``minilm`` fixture (the real model, for what depends on meaning) and tests
    marked ``bare_home`` (the home starts missing).
    """
    home = tmp_path / "agents"
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nor an OpenAI-compatible server
    for name in ("AGENTOS_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AGENTOS_DSN", raising=False)  # a developer's server is never a test's
    if "minilm" not in request.fixturenames and request.node.get_closest_marker("bare_home") is None:
        home.mkdir()
        (home / "config.yaml").write_text(FAKE_EMBEDDER_CONFIG, encoding="utf-8")
    yield home
    from core.memory.shared import close_shared_managers
    from core.memory.spaces.opened import close_all

    close_all()  # the spaces recall kept open in this home
    close_shared_managers(home)  # the engine's and the skills' managers: their threads end with the test


FAKE_EMBEDDER_CONFIG = "cold:\n  embedder: fake\nreflect:\n  enabled: false\n"
"""The agents home's config.yaml in a test: the test embedder, no model to load, and no reflection (whose
model calls would take the replies a test scripts for its engine; the reflection tests turn it on)."""
KEPT_SECTIONS = ("storage", "cold", "reflect")
"""What a test's config.yaml keeps from the fixtures unless it sets them itself: the database a fixture
chose (``pg_home``), the embedder and reflection."""


def write_home_config(home: Path, data: dict) -> None:
    """Write ``<home>/config.yaml`` with ``data``, keeping the sections of KEPT_SECTIONS it does not set."""
    import yaml

    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    before = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    if isinstance(before, dict):
        data = {**{key: before[key] for key in KEPT_SECTIONS if key in before}, **data}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server of this test run; without one the tests that need it skip and say why.

    ``AGENTOS_TEST_POSTGRES=require`` (set by .ci/run) makes that a failure instead.
    """
    from core.memory.storage.postgres.pool import close_pools
    from tests.postgres_server import PostgresServer, ServerUnavailable

    try:
        server = PostgresServer.start()
    except ServerUnavailable as exc:
        if os.environ.get("AGENTOS_TEST_POSTGRES") == "require":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    yield server
    close_pools()
    server.stop()


@pytest.fixture
def postgres_db(postgres_server):
    """A PostgresDatabase in a fresh schema of the test server, dropped afterwards."""
    import uuid

    import psycopg

    from core.memory.storage.postgres.database import PostgresDatabase
    from core.memory.storage.postgres.pool import close_pools

    schema = f"test_{uuid.uuid4().hex[:12]}"
    db = PostgresDatabase(postgres_server.dsn, schema)
    yield db
    db.close()
    close_pools(schema)
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def llama_server():
    """``start(ctx_size=8192, cache_ram=0, max_reply=512)``: llama.cpp's llama-server running
    SmolLM2-135M-Instruct on 127.0.0.1 (:class:`tests.llama_server.LlamaServer`), one per window and options
    for the session. Without one (``scripts/setup.sh --model-server`` installs it) the test skips and says
    why; ``AGENTOS_TEST_MODEL_SERVER=require`` (set by .ci/run) makes that a failure instead."""
    from tests.llama_server import LlamaServer, ServerUnavailable

    started: dict[tuple, LlamaServer] = {}

    def start(ctx_size: int = 8192, cache_ram: int = 0, max_reply: int = 512) -> LlamaServer:
        key = (ctx_size, cache_ram, max_reply)
        if key not in started:
            try:
                started[key] = LlamaServer.start(ctx_size, cache_ram=cache_ram, max_reply=max_reply)
            except ServerUnavailable as exc:
                if os.environ.get("AGENTOS_TEST_MODEL_SERVER") == "require":
                    pytest.fail(str(exc))
                pytest.skip(str(exc))
        return started[key]

    yield start
    for server in started.values():
        server.stop()


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 model, loaded once for the whole session."""
    from core.llm.embedding.embedders import load_minilm

    return load_minilm()


@pytest.fixture
def manager(agents_home: Path):
    """A MemoryManager for agent ``finn`` in the test's home."""
    from core.memory_manager import MemoryManager

    mm = MemoryManager("finn")
    yield mm
    mm.close()


@pytest.fixture(params=("sqlite", "postgres"))
def storage_backend(request: pytest.FixtureRequest, agents_home: Path) -> str:
    """Each database in turn for the agents of the test's home: their memory.db files, then schemas on the
    test PostgreSQL server (through ``$AGENTOS_DSN``, see ``pg_home``)."""
    if request.param == "postgres":
        request.getfixturevalue("pg_home")
    return request.param


@pytest.fixture
def pg_home(agents_home: Path, postgres_server, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's agents home, on PostgreSQL through ``$AGENTOS_DSN`` with a schema prefix of its own."""
    import uuid

    import psycopg

    from core.memory.storage.postgres.pool import close_pools

    import yaml

    prefix = f"t{uuid.uuid4().hex[:8]}_"
    agents_home.mkdir(parents=True, exist_ok=True)
    config = agents_home / "config.yaml"
    data = (yaml.safe_load(config.read_text(encoding="utf-8")) if config.exists() else None) or {}
    data.setdefault("storage", {})["schema_prefix"] = prefix
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setenv("AGENTOS_DSN", postgres_server.dsn)
    yield agents_home
    from core.memory.shared import close_shared_managers

    close_shared_managers(agents_home)  # their background threads stop before the pools close
    close_pools()
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                      (prefix + "%",)):
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def make_engine():
    """Open engines for agent finn on the backend the test's home configures; closed after the test."""
    from core.engine import Engine

    opened = []

    def make(**kwargs):
        engine = Engine("finn", **kwargs)
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        engine.close()
        engine.manager.close()  # waits for a background LOG.md compaction before the test's home goes
