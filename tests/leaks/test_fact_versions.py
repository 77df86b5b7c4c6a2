"""A fact's earlier values leak nowhere they should not: forgetting the fact forgets them, a secret's are
never kept nor shown, and the secret scrub covers them."""

from __future__ import annotations

import json

from core.memory.secrets.redaction import REDACTED
from tests.leaks.leak_check import holds, leaks

KEY = "hallway_colour"
OLD = "teal with copper trim"
NEW = "plain ivory white"


def _versions(manager) -> list[tuple]:
    return [tuple(r)
            for r in manager.db.conn.execute("SELECT key, value, category FROM fact_versions ORDER BY id")]


def test_forgetting_a_fact_forgets_its_earlier_values_everywhere(finn):
    """forget_memory(fact:<key>) deletes the history too: no version row, no recall hit, the earlier value
    hidden from prompts and recall like the forgotten one, and purge_forgotten takes it out of every file."""
    finn.save_fact(KEY, OLD)
    finn.save_fact(KEY, NEW)
    finn.append_log("THOUGHT", f"the painter asked whether {OLD} is still the plan")
    assert finn.forget_memory(f"fact:{KEY}")

    assert finn.get_fact(KEY, history=True) == [] and _versions(finn) == []
    hits = finn.recall_memory("hallway colour teal copper ivory", 10, min_score=0)
    assert hits and not any(h["id"].startswith(("fact:", "fact_version:")) for h in hits)
    assert not holds(json.dumps(hits).encode(), OLD) and not holds(json.dumps(hits).encode(), NEW)
    assert not holds(finn.format_context_for_prompt().encode(), OLD)

    report = finn.purge_forgotten()
    assert report.keys == [KEY]
    assert finn.cold.background.wait_idle(60)
    root = finn.paths.root
    finn.close()
    assert leaks(root, OLD, kept=("forgotten_values",)) == []


def test_an_earlier_value_forgotten_alone_leaves_the_current_one(finn):
    """forget_memory on the id recall gave an earlier value: it leaves the history and is hidden; the fact
    stays."""
    finn.save_fact(KEY, OLD)
    finn.save_fact(KEY, NEW)
    old_id = finn.get_fact(KEY, history=True)[1]["id"]
    assert old_id in [h["id"] for h in finn.recall_memory("teal copper trim", 5, min_score=0)]

    assert finn.forget_memory(old_id)

    assert [h["value"] for h in finn.get_fact(KEY, history=True)] == [NEW]
    hits = finn.recall_memory("hallway colour teal copper ivory", 10, min_score=0)
    assert [h["id"] for h in hits if h["kind"] == "fact"] == [f"fact:{KEY}"]
    finn.append_log("THOUGHT", f"someone mentioned {OLD} again")
    assert not holds(finn.format_context_for_prompt().encode(), OLD)
    assert NEW in finn.format_context_for_prompt(), "the fact's own FACT entries and value stay"


def test_a_secrets_earlier_values_are_never_kept_indexed_or_shown(finn):
    """A secret's replaced value is not kept (only when it was saved); while a fact is secret, its earlier
    non-secret values are neither recalled nor listed; the current secret value is get_fact's, as ever."""
    finn.save_fact("vault_pin", "public placeholder value")
    finn.save_fact("vault_pin", "first secret 7319-ab", "secret")
    finn.save_fact("vault_pin", "second secret 8842-cd", "secret")

    assert _versions(finn) == [("vault_pin", "public placeholder value", "general"),
                               ("vault_pin", None, "secret")]
    history = finn.get_fact("vault_pin", history=True)
    assert [h["value"] for h in history] == ["second secret 8842-cd", REDACTED, REDACTED]
    hits = finn.recall_memory("vault pin placeholder secret", 10, min_score=0)
    assert not any(h["id"].startswith(("fact:", "fact_version:")) for h in hits)
    assert not holds(json.dumps(hits).encode(), "public placeholder value")

    # no longer secret: the secret value is not history
    finn.save_fact("vault_pin", "now public again", "general")
    assert [h["value"] for h in finn.get_fact("vault_pin", history=True)] == [
        "now public again", REDACTED, REDACTED, "public placeholder value"]
    dumped = json.dumps(finn.recall_memory("vault pin secret public", 10, min_score=0))
    assert "8842-cd" not in dumped and "7319-ab" not in dumped


def test_the_secret_scrub_covers_earlier_values(finn):
    """A secret saved later is redacted from the earlier values that held it, in memory.db and recall
    alike."""
    secret = "horse-battery-staple-42"
    finn.save_fact("wifi_note", f"the password is {secret}")
    finn.save_fact("wifi_note", "ask the landlord")
    finn.save_fact("wifi_password", secret, "secret")

    assert _versions(finn) == [("wifi_note", f"the password is {REDACTED}", "general")]
    dumped = json.dumps(finn.recall_memory("wifi password", 10, min_score=0))
    assert secret not in dumped and f"the password is {REDACTED}" in dumped
    assert finn.cold.background.wait_idle(60)
    root = finn.paths.root
    finn.close()
    assert leaks(root, secret) == []
