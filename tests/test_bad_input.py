"""Bad input gets a clear ValidationError and changes no file of the agent (issue item 9)."""

from __future__ import annotations

import pytest

from core.errors import ValidationError
from core.memory.files.log_format import ENTRY_TYPES
from core.memory_manager import MemoryManager

LIMIT = 64 * 1024  # MemoryConfig.max_entry_bytes, the documented default


def _self_referential() -> dict:
    loop: dict = {}
    loop["again"] = loop
    return loop


def snapshot(manager: MemoryManager) -> dict[str, bytes]:
    """The bytes of every memory file that a write would change (SQLite's -shm index excluded),
    once background indexing of earlier writes has caught up and stopped writing."""
    manager.cold.catch_up()
    assert manager.cold.background.wait_idle(60)
    files = {}
    for path in sorted(manager.paths.memory_dir.rglob("*")):
        if path.is_file() and path.name not in {".lock", "memory.db-shm"}:
            files[str(path.relative_to(manager.paths.memory_dir))] = path.read_bytes()
    return files


@pytest.fixture
def used_manager(manager: MemoryManager) -> MemoryManager:
    """An agent with some history, so that 'unchanged' is checked against real content."""
    manager.update_now("active", ["Load CSV"], objective="Analyse")
    manager.append_log("THOUGHT", "thinking", {"k": 1})
    manager.save_fact("name", "Ada", "personal")
    return manager


BAD_APPENDS = [
    (("NOTE", "x"), "unknown LOG entry type 'NOTE'; valid types: TOOL_USE, THOUGHT"),
    (("thought", "x"), "unknown LOG entry type 'thought'"),
    ((None, "x"), "unknown LOG entry type None"),
    (("THOUGHT", "x" * (LIMIT + 1)), f"{LIMIT + 1} bytes exceeds the limit of {LIMIT} bytes"),
    (("THOUGHT", "é" * (LIMIT // 2 + 1)), f"exceeds the limit of {LIMIT} bytes"),
    (("THOUGHT", b"\xff\xfe bad"), "not valid UTF-8"),
    (("THOUGHT", "a\x00b"), "contains a NUL byte"),
    (("THOUGHT", b"a\x00b"), "contains a NUL byte"),
    (("THOUGHT", "half \ud800 pair"), "not valid UTF-8"),
    (("THOUGHT", None), "must be a string, got NoneType"),
    (("THOUGHT", 42), "must be a string, got int"),
    (("THOUGHT", "x", ["not", "a", "dict"]), "metadata must be a dict, got list"),
    (("THOUGHT", "x", {"k": "a\x00b"}), "metadata contains a NUL byte"),
    (("THOUGHT", "x", {"k": ["\udc80"]}), "metadata is not valid UTF-8"),
    (("THOUGHT", "x", {"k": {1, 2}}), "metadata must be JSON-serialisable"),
    (("THOUGHT", "x", {"k": float("nan")}), "metadata must be JSON-serialisable"),
    (("THOUGHT", "x", {"k": "y" * (2 * LIMIT)}), "metadata of .* bytes .* exceeds the limit"),
    (("THOUGHT", "x", _self_referential()), "nests deeper than"),
]


@pytest.mark.parametrize("args, message", BAD_APPENDS, ids=[m[:30] for _, m in BAD_APPENDS])
def test_bad_append_is_refused_and_writes_nothing(used_manager: MemoryManager, args, message) -> None:
    """append_log with bad input raises ValidationError with a clear message; no file changes."""
    before = snapshot(used_manager)
    with pytest.raises(ValidationError, match=message):
        used_manager.append_log(*args)
    assert snapshot(used_manager) == before


def test_unknown_type_message_lists_every_valid_type(used_manager: MemoryManager) -> None:
    """The unknown-type error names every valid entry type."""
    with pytest.raises(ValidationError) as caught:
        used_manager.append_log("NOTE", "x")
    assert all(name in str(caught.value) for name in ENTRY_TYPES)


BAD_FACTS = [
    ((1, "v"), "fact key must be a string, got int"),
    ((None, "v"), "fact key must be a string, got NoneType"),
    ((b"key", "v"), "fact key must be a string, got bytes"),
    (("", "v"), "fact key must be 1-200 characters"),
    (("   ", "v"), "fact key must be 1-200 characters"),
    (("k" * 201, "v"), "fact key must be 1-200 characters"),
    (("k\x00", "v"), "fact key contains a NUL byte"),
    (("editor\n## NOW\nstatus: done", "v"), r"control character '\\n' at position 6: a key is one line"),
    (("a\rb", "v"), r"control character '\\r' at position 1"),
    (("a\tb", "v"), r"control character '\\t' at position 1"),
    (("title\x1b]0;pwned\x07", "v"), r"control character '\\x1b' at position 5"),
    (("a\u2028b", "v"), r"control character '\\u2028'"),
    (("a\x85b", "v"), r"control character '\\x85'"),
    (("k", "v", "secrets"),
     "unknown fact category 'secrets'; valid: general, preference, personal, config, secret"),
    (("k", "v", None), "unknown fact category None"),
    (("k", None), "fact value must be a string, got NoneType"),
    (("k", 5), r"fact value must be a string, got int: pass str\(5\) to save it as text"),
    (("k", 2.5), r"fact value must be a string, got float: pass str\(2.5\)"),
    (("k", True), r"fact value must be a string, got bool: pass str\(True\)"),
    (("k", ["a"]), "fact value must be a string, got list"),
    (("k", b"\xc3\x28"), "fact value is not valid UTF-8"),
    (("k", "a\x00b"), "fact value contains a NUL byte"),
    (("k", "x" * (16 * 1024 + 1)), "fact value exceeds 16384 bytes"),
]


@pytest.mark.parametrize("args, message", BAD_FACTS, ids=[m[:30] for _, m in BAD_FACTS])
def test_bad_fact_is_refused_and_writes_nothing(used_manager: MemoryManager, args, message) -> None:
    """save_fact with a bad key, value or category raises ValidationError; no file changes."""
    before = snapshot(used_manager)
    with pytest.raises(ValidationError, match=message):
        used_manager.save_fact(*args)
    assert snapshot(used_manager) == before


@pytest.mark.parametrize("key", ["user.editor", "favourite_drink", "deploy target", "issue #12 (50%)",
                                 "Café/straße", "名前", " padded "])
def test_every_key_of_one_line_is_saved_and_read_back(used_manager: MemoryManager, key: str) -> None:
    used_manager.save_fact(key, "helix")
    assert used_manager.get_fact(key.strip()) == "helix"


def test_a_key_with_a_newline_saved_before_it_was_refused_is_still_read_and_deleted(
        used_manager: MemoryManager) -> None:
    """A memory.db of an earlier version may hold such a key: it is listed, read and deleted as it is."""
    with used_manager.db.transaction() as conn:
        conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?)",
                     ("old\nkey", "v", "general", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"))
    assert used_manager.get_fact("old\nkey") == "v"
    assert used_manager.delete_fact("old\nkey") is True
    assert used_manager.get_fact("old\nkey") is None


@pytest.mark.parametrize("call", ["get_fact", "delete_fact"])
def test_non_string_fact_key_on_read_and_delete(used_manager: MemoryManager, call: str) -> None:
    """get_fact/delete_fact with a non-string key raise ValidationError and change nothing."""
    before = snapshot(used_manager)
    with pytest.raises(ValidationError, match="fact key must be a string"):
        getattr(used_manager, call)(3)
    assert snapshot(used_manager) == before


BAD_NOW = [
    ({"state": "running"},
     "unknown NOW status 'running'; valid: idle, active, blocked, error, interrupted, done"),
    ({"status": 5}, "status must be a string, got int"),
    ({"status": "active", "next_steps": "one step"}, "next_steps must be a list of strings"),
    ({"status": "active", "next_steps": ["ok", 3]}, "step must be a string, got int"),
    ({"status": "active", "next_steps": ["a\x00"]}, "step contains a NUL byte"),
    ({"objective": "o" * 2001}, "objective is 2001 characters; keep it under 2000"),
    ({"objective": b"\xff"}, "not valid UTF-8"),
    ({"blockers": "none"}, "blockers must be a list of strings"),
    ({"run_id": 12}, "run_id must be a string, got int"),
    ({}, r"update_now was given nothing to change \(None means 'leave as it is'\): pass status, next_steps"),
    ({"status": None}, "update_now was given nothing to change"),
    ({"status": None, "objective": None, "blockers": None}, "update_now was given nothing to change"),
    ({"status": "active", "next_steps": [f"{i} " + "s" * 1500 for i in range(12)]},
     "NOW.md would be .* bytes"),
]


@pytest.mark.parametrize("kwargs, message", BAD_NOW, ids=[m[:30] for _, m in BAD_NOW])
def test_bad_now_update_is_refused_and_writes_nothing(used_manager: MemoryManager, kwargs, message) -> None:
    """update_now with bad input raises ValidationError; NOW.md, LOG.md and memory.db are unchanged."""
    before = snapshot(used_manager)
    with pytest.raises(ValidationError, match=message):
        used_manager.update_now(**kwargs)
    assert snapshot(used_manager) == before


@pytest.mark.parametrize("budget", [0, -5, "100", 2.5])
def test_bad_token_budget(used_manager: MemoryManager, budget) -> None:
    """format_context_for_prompt refuses a budget that is not a positive integer."""
    with pytest.raises(ValidationError, match="max_tokens must be a positive integer"):
        used_manager.format_context_for_prompt(max_tokens=budget)


def test_files_are_untouched_after_a_run_of_bad_calls(used_manager: MemoryManager) -> None:
    """After many refused calls the next good append gets the next seq and is what changes the files."""
    last = used_manager.read_log(1)[0]["seq"]
    before = snapshot(used_manager)
    for args, _ in BAD_APPENDS:
        with pytest.raises(ValidationError):
            used_manager.append_log(*args)
    assert snapshot(used_manager) == before
    assert used_manager.append_log("THOUGHT", "fine") == last + 1
    assert snapshot(used_manager)["LOG.md"] != before["LOG.md"]
