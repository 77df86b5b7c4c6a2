"""Every config option has a bound, and a config file's error says what is wrong in a line of bounded
length."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from core.config import RANGES, Config, load_config
from core.errors import ConfigError, CorruptionError, shown
from core.memory_manager import MemoryManager


def alias_bomb(levels: int = 8) -> str:
    """A YAML document of about 500 bytes whose value, written out, is 9**levels strings."""
    lines = ['memory:\n  lock_timeout_s: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  x{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text, message", [
    ("memory: {lock_timeout_s: .nan}\n",
     "memory.lock_timeout_s must be a number above 0 and at most 86400, got nan"),
    ("memory: {lock_timeout_s: .inf}\n",
     "memory.lock_timeout_s must be a number above 0 and at most 86400, got inf"),
    ("cold: {min_score: 7}\n", "cold.min_score must be a number from 0 to 1, got 7.0"),
    ("memory: {max_entry_bytes: 0}\n",
     "memory.max_entry_bytes must be a whole number from 64 to 16,777,216, got 0"),
    ("llm: {num_ctx: 0}\n", "llm.num_ctx must be a whole number from 512 to 16,777,216, got 0"),
    ("storage: {pool_max: 0}\n", "storage.pool_max must be a whole number from 1 to 1,000, got 0"),
    ("compaction: {max_tokens: -5}\n",
     "compaction.max_tokens must be a whole number from 1 to 100,000,000 (or 0 for the default, -1 to "
     "disable), got -5"),
    ("provider: {context_threshold: 0}\n",
     "provider.context_threshold must be a number above 0 and at most 1, got 0.0"),
])
def test_an_option_out_of_its_range_is_a_config_error_naming_the_key_and_the_range(
        agents_home: Path, text: str, message: str) -> None:
    (agents_home / "config.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config()
    assert str(raised.value) == f"{agents_home / 'config.yaml'}: {message}"


def test_every_numeric_option_has_a_range_that_holds_its_default() -> None:
    numeric = set()
    for section in dataclasses.fields(Config):
        defaults = section.default_factory()
        for option in dataclasses.fields(defaults):
            value = getattr(defaults, option.name)
            if type(value) in (int, float):
                name = f"{section.name}.{option.name}"
                numeric.add(name)
                low, high = RANGES[name]
                assert low <= value <= high, name
    assert numeric == set(RANGES)


@pytest.mark.parametrize("name", sorted(n for n, (low, _) in RANGES.items()
                                        if isinstance(getattr(getattr(Config(), n.split(".")[0]),
                                                              n.split(".")[1]), float)))
def test_no_float_option_takes_nan_or_infinity(agents_home: Path, name: str) -> None:
    section, key = name.split(".")
    for value in (".nan", ".inf", "-.inf"):
        (agents_home / "config.yaml").write_text(f"{section}: {{{key}: {value}}}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=f"{name} must be a number"):
            load_config()


def test_a_yaml_alias_bomb_in_an_agents_config_is_refused_in_a_short_line(agents_home: Path) -> None:
    """500 bytes of nested aliases (43 million strings written out) are refused where the first alias is,
    before any value is built: the message is one short line, and it comes at once."""
    config = agents_home / "finn" / "config" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(alias_bomb(), encoding="utf-8")
    assert len(alias_bomb()) < 600
    with pytest.raises(ConfigError) as raised:
        MemoryManager("finn")
    message = str(raised.value)
    assert len(message) < 400 and "\n" not in message
    assert "config.yaml:2:" in message and "alias (*name)" in message and "write the value out" in message


def test_an_anchor_without_alias_is_plain_yaml(agents_home: Path) -> None:
    (agents_home / "config.yaml").write_text("memory: {max_entry_bytes: &size 4096}\n", encoding="utf-8")
    assert load_config().memory.max_entry_bytes == 4096


def test_a_wrong_value_is_echoed_shortened(agents_home: Path) -> None:
    """A huge or deeply nested value in a config file is named by its start, not written out whole."""
    (agents_home / "config.yaml").write_text("memory: {max_entry_bytes: ["
                                             + ", ".join(["12345678"] * 100_000) + "]}\n",
                                             encoding="utf-8")
    with pytest.raises(ConfigError,
                       match=r"memory.max_entry_bytes must be int, got \[12345678, 12345678") as raised:
        load_config()
    assert len(str(raised.value)) < 400


def test_a_config_file_over_one_mib_is_refused(agents_home: Path) -> None:
    (agents_home / "config.yaml").write_text("# padding\n" * 120_000, encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than 1024 KiB"):
        load_config()


def test_now_md_with_an_alias_is_damaged_and_recovered_from_log_md(agents_home: Path) -> None:
    with MemoryManager("finn") as manager:
        manager.update_now("Reading the docs", objective="a summary")
    now = agents_home / "finn" / "memory" / "NOW.md"
    text = now.read_text(encoding="utf-8")
    now.write_text(text.replace("---\n", "---\nbomb: &a [1, 2]\nagain: *a\n", 1), encoding="utf-8")
    from core.memory.files import now_file

    with pytest.raises(CorruptionError, match="alias"):
        now_file.read(now, "finn")
    with MemoryManager("finn") as manager:
        assert manager.read_now()["objective"] == "a summary"


def test_shown_is_bounded_for_any_value() -> None:
    nested: list = ["lol"] * 9
    for _ in range(12):  # 9**12 strings if written out
        nested = [nested] * 9
    assert len(shown(nested)) <= 220
    assert shown("x" * 10_000).startswith("'xxx") and len(shown("x" * 10_000)) <= 220
    assert shown(math.nan) == "nan"


def test_the_ranges_documented_are_the_ranges_checked() -> None:
    """docs/configuration.md's table of ranges lists every option of RANGES, with its bounds."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1]: line.split("|")[2] for line in page.splitlines() if line.startswith("| `")}
    assert set(rows) == set(RANGES)
    for name, (low, high) in RANGES.items():
        assert f"{high:,}" in rows[name] or f"{high:g}" in rows[name], name
