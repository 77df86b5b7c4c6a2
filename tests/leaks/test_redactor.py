"""The redactor: a secret's value is found however it was written, and nothing else changes."""

from __future__ import annotations

import json

import pytest

from core.memory.secrets.redaction import REDACTED, Redactor, redactor_for
from core.engine.task_input import mask_credentials


def test_text_without_a_secret_comes_back_unchanged():
    """Text holding no secret is returned as it was, even when it is not in normal form."""
    redactor = Redactor(["cred-5566-7788"])
    text = "ｆｕｌｌ width and a\u200bzero-width space, no secret"
    assert redactor.text(text) is text


def test_a_value_saved_with_a_trailing_newline_is_found():
    """A value saved with surrounding whitespace (a trailing newline) matches it without."""
    assert Redactor(["cred-5566-7788\n"]).text("my credential is cred-5566-7788.") == (
        f"my credential is {REDACTED}."
    )


def test_normalised_forms_are_found():
    """Full-width letters, invisible characters, other whitespace and other case all match."""
    redactor = Redactor(["correct horse battery"])
    for text in ("CORRECT HORSE BATTERY", "correct  horse\nbattery", "correct\u00a0horse\tbattery",
                 "ｃｏｒｒｅｃｔ horse battery", "cor\u200brect hor\u00adse battery"):
        assert redactor.text(f"a {text} z") == f"a {REDACTED} z", text


@pytest.mark.parametrize("invisible", ["\u034f", "\u061c", "\u115f", "\u180b", "\u2066", "\u2069", "\u206f",
                                       "\u3164", "\ufe0f", "\uffa0", "\U0001d173", "\U000e0001",
                                       "\U000e0041"])
def test_a_value_with_characters_that_show_nothing_between_its_letters_is_found(invisible):
    """Every default-ignorable code point of Unicode is taken out before matching: bidirectional isolates, tag
    characters, variation selectors and fillers between a secret's letters hid it from the redactor (the
    zero-width spaces and soft hyphens alone were taken out)."""
    redactor = Redactor(["correct horse battery"])
    assert redactor.text(f"a cor{invisible}rect horse batt{invisible}ery z") == f"a {REDACTED} z"


def test_json_escaped_forms_are_found():
    """The value inside JSON text (quotes, backslashes, newlines and non-ASCII escaped) matches."""
    value = 'pa"ss\\wörd 42'
    redactor = Redactor([value])
    for dumped in (json.dumps({"v": value}), json.dumps({"v": value}, ensure_ascii=False),
                   json.dumps({"v": value.replace(" ", "\n")})):
        assert REDACTED in redactor.text(dumped) and json.loads(redactor.text(dumped)) == {"v": REDACTED}


def test_keys_of_nested_data_are_redacted_and_stay_distinct():
    """Dict keys are redacted like values; two keys redacted alike stay two keys."""
    redactor = Redactor(["s3cret-key"])
    data = {"s3cret-key": 1, "S3CRET-KEY": 2, "list": ["x s3cret-key", ("s3cret-key",)]}
    assert redactor(data) == {REDACTED: 1, f"{REDACTED}#": 2, "list": [f"x {REDACTED}", (REDACTED,)]}


def test_redacting_twice_changes_nothing():
    """A value that occurs inside the marker itself does not make redaction grow on every pass."""
    redactor = Redactor(["act", "xyz-123"])
    once = redactor.text("act on xyz-123")
    assert once == f"{REDACTED} on {REDACTED}" and redactor.text(once) == once


def test_short_values_are_not_searched_for():
    """Values under three characters once normalised would match everywhere: they are skipped."""
    assert not Redactor(["ab", " x \n"]) and Redactor(["ab"]).text("ab cab") == "ab cab"


def test_the_compiled_redactor_is_shared():
    """The same set of values gives the same compiled redactor."""
    assert redactor_for(["abc", "def"]) is redactor_for(["abc", "def"])


def test_obvious_secret_phrasings_are_masked_before_any_fact_exists():
    """The engine's intent logging masks values after credential words, "pin code" and "credential"
    included."""
    cases = {
        "remember that my bank credential is cred-5566-7788": "cred-5566-7788",
        "my pin code is 4321": "4321",
        "My API key is sk-12345": "sk-12345",
        "the password for github.com is 'hunter 2'": "hunter 2",
        "token=ghp_abc123": "ghp_abc123",
        "my access code: 99-11-22": "99-11-22",
        "the passphrase is staple-horse": "staple-horse",
    }
    for text, value in cases.items():
        masked = mask_credentials(text)
        assert value not in masked and REDACTED in masked, text
    assert mask_credentials("my name is Finn") == "my name is Finn"
