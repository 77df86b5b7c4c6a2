"""agentos export / import: one portable archive, verified before anything is written, secrets left out."""

from __future__ import annotations

import gzip
import io
import json
import re
import sqlite3
import tarfile
from contextlib import closing
from pathlib import Path

import pytest

from core.commands import main
from core.errors import CorruptionError, UnknownAgentError, ValidationError
from core.langgraph_store import AgentOSStore
from core.memory.provider.types import Message, Session
from core.memory_initializer import initialize_agent_memory
from core.llm.embedding.embedders import MiniLMEmbedder
from core.memory.recall.store import ColdStore, VectorRow
from core.memory_manager import MemoryManager
from core.plugins.memory import open_provider
from core.transfer import Trust, export_agent, import_agent
from tests.inprocess import run_main

# Recall ranks by meaning too: the embedding model is loaded once, before the first recall.
pytestmark = pytest.mark.usefixtures("minilm")

SECRET = "hunter2-pass-77"
QUERIES = ("who gets the report", "favourite colour", "train to Lisbon", "deployment error 137")


def build_agent(home: Path) -> MemoryManager:
    """Agent finn with facts (one secret), a compacted LOG, notes, a conversation and store items."""
    initialize_agent_memory("finn")
    manager = MemoryManager("finn")
    manager.append_log("THOUGHT", f"The user typed their password {SECRET} by mistake")
    manager.save_fact("db_password", SECRET, category="secret")
    manager.save_fact("favourite_colour", "teal", category="preference")
    for i in range(12):
        manager.append_log("THOUGHT", f"Step {i}: deployment error 137 investigated, raised the memory limit")
    manager.compact_log(summary="Investigated deployment error 137 over twelve steps")
    manager.append_log("USER_FEEDBACK", "Send the weekly report to Maria")
    manager.update_now("Writing the report", next_steps=["Draft", "Send to Maria"])
    manager.store_memory("The quarterly report goes to Maria on Fridays")
    provider = open_provider(None, manager.paths.db_file)
    session = Session("finn:main", agent_id="finn", user_id="local", channel="cli")
    provider.bootstrap(session)
    provider.append(session, [Message("user", f"My password is {SECRET}, keep it safe"),
                              Message("assistant", "Saved. Exit 137 is an OOM kill.")])
    provider.close()
    AgentOSStore("finn", manager=manager).put(("trips",), "t1", {"text": "Book the train to Lisbon"})
    return manager


def snapshot(manager: MemoryManager) -> dict:
    """What must survive a round trip, read through the public API."""
    entries = []
    for path in sorted(manager.paths.archive_dir.glob("LOG-*.md")) + [manager.paths.log_file]:
        entries += [(e.seq, e.type,
                     e.content) for e in manager.log.scan().entries] if path == manager.paths.log_file \
            else [(e.seq, e.type, e.content) for e in _scan(path)]
    conn = manager.db.conn
    messages = [tuple(r) for r in conn.execute("SELECT seq, role, content FROM ctx_messages ORDER BY id")]
    recall = {q: [h["id"] for h in manager.recall_memory(q, n_results=3)] for q in QUERIES}
    facts = {f["key"]: (f["value"], f["category"]) for f in manager.list_facts()}
    return {"entries": entries, "messages": messages, "recall": recall, "facts": facts,
            "now": manager.read_now()["plan"],
            "items": conn.execute("SELECT count(*) FROM store_items").fetchone()[0]}


def _scan(path: Path):
    from core.memory.files.log_file import scan_bytes

    result = scan_bytes(path.read_bytes(), path)
    assert not result.bad_lines
    return result.entries


def _redacted(expected: dict) -> dict:
    """The snapshot as an export without secrets must give it back."""
    def clean(value):
        return json.loads(json.dumps(value).replace(SECRET, "[REDACTED]"))
    facts = {k: v for k, v in expected["facts"].items() if v[1] != "secret"}
    return {**clean(expected), "facts": clean(facts)}


def _archive_bytes(path: Path) -> bytes:
    """Every byte of every member, decompressed."""
    with tarfile.open(path, "r:gz") as archive:
        return b"".join(archive.extractfile(m).read() for m in archive if m.isfile())


def test_round_trip_into_a_new_home(agents_home, tmp_path, monkeypatch):
    """Export then import elsewhere: the same facts, LOG entries, messages, plan, items and recall results."""
    manager = build_agent(agents_home)
    expected = json.loads(json.dumps(snapshot(manager)))
    manager.close()
    archive = tmp_path / "finn.agentos.tar.gz"
    result = export_agent("finn", archive)
    assert result.manifest["counts"]["facts"] == 1 and result.manifest["counts"]["archives"] == 1
    assert SECRET.encode() not in _archive_bytes(archive)

    monkeypatch.setenv("AGENTOS_HOME", str(tmp_path / "other"))
    imported = import_agent(archive)
    assert imported.reembedded == "the archive has no vectors" and imported.memories > 0
    with MemoryManager("finn") as copy:
        got = json.loads(json.dumps(snapshot(copy)))
        assert_same_recall(got.pop("recall"), expected.pop("recall"))
        assert got == _redacted(expected)
        assert copy.get_fact("db_password") is None


def assert_same_recall(got: dict, expected: dict) -> None:
    """The same best hit for every query, and the same others but for the weakest one.

    The weakest can swap with the next or cross min_score: the word statistics of memories
    that hold a secret in the original change a little once it is redacted in the copy.
    """
    for query, ids in expected.items():
        assert got[query][0] == ids[0], query
        assert len(set(got[query]) & set(ids)) >= len(ids) - 1, query


def test_with_vectors_and_secrets_keeps_everything(agents_home, tmp_path, monkeypatch):
    """--with-vectors --include-secrets, imported --trust-vectors: the vectors are kept (no re-embedding) and
    the secret comes back."""
    manager = build_agent(agents_home)
    expected = json.loads(json.dumps(snapshot(manager)))
    manager.close()
    archive = tmp_path / "full.tar.gz"
    result = export_agent("finn", archive, with_vectors=True, include_secrets=True)
    assert result.manifest["with_vectors"] and result.manifest["include_secrets"]
    monkeypatch.setenv("AGENTOS_HOME", str(tmp_path / "other"))
    imported = import_agent(archive, as_name="finn2", trust=Trust(vectors=True))
    assert imported.reembedded == "" and imported.memories == 0
    with MemoryManager("finn2") as copy:
        got = json.loads(json.dumps(snapshot(copy)))
        assert got == expected  # the same vectors and full-text index: the same ranking
        assert copy.get_fact("db_password") == SECRET
        assert copy.read_now()["agent"] == "finn2"
        assert copy.db.conn.execute("SELECT session_id FROM ctx_conversations").fetchone()[0] == "finn2:main"
        said = copy.recall_memory("exit 137 OOM kill", 1, kind="message")[0]  # recall follows the new name
        assert said["where"]["conversation"] == "finn2:main" and said["source"].startswith(
            "conversation:finn2:main#"
        )


def test_vectors_holding_a_secret_are_left_out(agents_home, tmp_path, monkeypatch):
    """Without --include-secrets, vectors whose texts hold a secret are dropped and the importer re-embeds."""
    manager = build_agent(agents_home)
    staging = "stage-pass-4411"
    with manager.db.transaction() as conn:  # saved as a secret straight into memory.db: not scrubbed yet
        conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at)"
                     " VALUES ('staging_password', ?, 'secret', '2026-01-01T00:00:00.000Z', "
                     "'2026-01-01T00:00:00.000Z')",
                     (staging,))
        conn.execute("DELETE FROM secret_scrubs")
    manager.cold.catch_up()
    manager.close()
    # A vector embedded while the value was plain text, which no scrub has reached yet.
    plain = ColdStore(manager.paths.lancedb_dir, MiniLMEmbedder(), manager.paths.memory_dir / ".cold.lock",
                      reindex_hint="-")
    plain.put([VectorRow("note:early", "note", f"The staging password is {staging}", "note:early",
                         "2026-01-01T00:00:00.000Z")])
    plain.close()
    archive = tmp_path / "finn.tar.gz"
    result = export_agent("finn", archive, with_vectors=True)
    assert not result.manifest["with_vectors"] and "re-embeds" in result.notice
    assert SECRET.encode() not in _archive_bytes(archive) and staging.encode() not in _archive_bytes(archive)
    monkeypatch.setenv("AGENTOS_HOME", str(tmp_path / "other"))
    assert import_agent(archive).reembedded


def _rewrite(source: Path, target: Path, change) -> None:
    """Copy an archive member by member, letting ``change(name, data)`` alter (or drop: None) each."""
    with tarfile.open(source, "r:gz") as src, tarfile.open(target, "w:gz") as dst:
        for member in src:
            data = src.extractfile(member).read() if member.isfile() else None
            data = change(member.name, data)
            if data is None and member.isfile():
                continue
            member.size = len(data or b"")
            dst.addfile(member, io.BytesIO(data) if data is not None else None)


@pytest.mark.parametrize("damage", ["tampered", "missing", "traversal", "not_gzip", "truncated", "version",
                                    "nested"])
def test_bad_archive_writes_nothing(agents_home, tmp_path, monkeypatch, damage):
    """A damaged, tampered, incomplete, escaping or future-version archive is refused before anything is
    written; so is a manifest nested deeper than the JSON parser follows (it ended in a RecursionError)."""
    initialize_agent_memory("finn")
    MemoryManager("finn").close()
    good = tmp_path / "good.tar.gz"
    export_agent("finn", good)
    bad = tmp_path / "bad.tar.gz"
    if damage == "tampered":
        _rewrite(good, bad, lambda n, d: d + b"- 99 x\n" if n.endswith("LOG.md") else d)
    elif damage == "missing":
        _rewrite(good, bad, lambda n, d: None if n.endswith("NOW.md") else d)
    elif damage == "traversal":
        data = io.BytesIO()
        with tarfile.open(good, "r:gz") as src, tarfile.open(fileobj=data, mode="w:gz") as dst:
            for member in src:
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
            evil = tarfile.TarInfo("agent/../../evil.txt")
            evil.size = 4
            dst.addfile(evil, io.BytesIO(b"evil"))
        bad.write_bytes(data.getvalue())
    elif damage == "not_gzip":
        bad.write_bytes(b"this is not an archive")
    elif damage == "truncated":
        bad.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    elif damage == "nested":
        _rewrite(good, bad, lambda n, d: b"[" * 100_000 + b"]" * 100_000 if n == "manifest.json" else d)
    else:
        def newer(n, d):
            if n != "manifest.json":
                return d
            manifest = json.loads(d)
            manifest["format_version"] = 99
            return json.dumps(manifest).encode()
        _rewrite(good, bad, newer)
    home = tmp_path / "fresh"
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    with pytest.raises(CorruptionError):
        import_agent(bad)
    assert not home.exists()
    assert not (tmp_path / "evil.txt").exists()


def test_existing_agent_needs_force_and_unknown_agent_is_refused(agents_home, tmp_path):
    """Importing over an existing agent is refused unless forced; exporting an unknown agent creates
    nothing."""
    manager = build_agent(agents_home)
    manager.close()
    archive = tmp_path / "finn.tar.gz"
    export_agent("finn", archive)
    with MemoryManager("finn") as later:
        later.save_fact("added_later", "yes")
    with pytest.raises(ValidationError, match="--force"):
        import_agent(archive)
    with MemoryManager("finn") as later:
        assert later.get_fact("added_later") == "yes"
    import_agent(archive, force=True)
    with MemoryManager("finn") as replaced:
        assert replaced.get_fact("added_later") is None and replaced.get_fact("favourite_colour") == "teal"
    assert not [p for p in agents_home.iterdir() if p.name.startswith(".")]
    with pytest.raises(UnknownAgentError):
        export_agent("ghost", tmp_path / "ghost.tar.gz")
    assert not (agents_home / "ghost").exists() and not (tmp_path / "ghost.tar.gz").exists()


def test_command_line_round_trip(agents_home, tmp_path):
    """agentos export and import from the shell, with one-line errors and their exit codes."""
    initialize_agent_memory("finn")
    MemoryManager("finn").save_fact("city", "Porto")

    def agentos(*args, home=agents_home):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("AGENTOS_HOME", str(home))
            return run_main(main, args)

    archive = tmp_path / "finn.tar.gz"
    exported = agentos("export", "--agent", "finn", str(archive))
    assert exported.returncode == 0 and "exported finn" in exported.stdout, exported.stderr
    imported = agentos("import", str(archive), "--as", "porto", home=tmp_path / "h2")
    assert imported.returncode == 0 and "imported porto" in imported.stdout, imported.stderr
    assert ": 1 LOG entry, 1 fact, 0 notes," in exported.stdout  # one of each is said as one
    assert ": 1 LOG entry, 1 fact, 0 messages" in imported.stdout
    # No terminal, so no bar: the time is still measured (the bar's own clock stops when it is not drawn).
    seconds = re.search(r"re-embedded \d+ memories in ([\d.]+) s", imported.stdout)
    assert seconds and float(seconds.group(1)) > 0 and "embedding:" not in imported.stderr, imported.stdout
    facts = agentos("facts", "--agent", "porto", "--json", home=tmp_path / "h2")
    assert json.loads(facts.stdout)[0]["value"] == "Porto"
    again = agentos("import", str(archive), "--as", "porto", home=tmp_path / "h2")
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "--force" in again.stderr
    (tmp_path / "junk.tar.gz").write_bytes(gzip.compress(b"junk"))
    junk = agentos("import", str(tmp_path / "junk.tar.gz"), home=tmp_path / "h3")
    assert junk.returncode == 5 and junk.stderr.startswith("error: ") and not (tmp_path / "h3").exists()


def test_export_says_how_many_secret_facts_it_left_out(agents_home, tmp_path):
    """agentos export names the secret facts left out and the flag that keeps them; with the flag, none is."""
    initialize_agent_memory("finn")
    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Porto")
        manager.save_fact("db_password", SECRET, category="secret")
        manager.save_fact("api_token", "was-public-token-4411")  # an earlier value of a fact now secret
        manager.save_fact("api_token", "tok-5f1e-99aa-secret", category="secret")

    def export(*flags: str):
        return run_main(main, ["export", "--agent", "finn", *flags])

    without = export(str(tmp_path / "a.tar.gz"))
    assert without.returncode == 0, without.stderr
    assert " 1 fact, " in without.stdout  # one of each is said as one: "1 fact", "1 LOG entry"
    assert "2 secret facts left out" in without.stdout and "--include-secrets keeps them" in without.stdout
    with tarfile.open(tmp_path / "a.tar.gz", "r:gz") as archive:  # LOG.md keeps the public save as the record
        db = next(m for m in archive if m.name.endswith("/memory.db"))
        (tmp_path / "copy.db").write_bytes(archive.extractfile(db).read())
    with closing(sqlite3.connect(tmp_path / "copy.db")) as copy:
        assert copy.execute("SELECT key FROM fact_versions").fetchall() == [], (
            "a secret's history goes with it"
        )
    with_secrets = export(str(tmp_path / "b.tar.gz"), "--include-secrets")
    assert with_secrets.returncode == 0, with_secrets.stderr
    assert " 3 facts, " in with_secrets.stdout and "secrets included" in with_secrets.stdout
    assert "left out" not in with_secrets.stdout
    assert export_agent("finn", tmp_path / "c.tar.gz").secrets_left_out == 2
    assert export_agent("finn", tmp_path / "d.tar.gz", include_secrets=True).secrets_left_out == 0


def test_forgotten_memories_do_not_travel_with_the_vectors(agents_home, tmp_path, monkeypatch):
    """--with-vectors copies the cold store's current rows only: a forgotten note is in no member of the
    archive, and the imported agent keeps the vectors of the others."""
    initialize_agent_memory("finn")
    with MemoryManager("finn") as manager:
        gone = manager.store_memory("My old address is 12 Elm Street")
        kept = manager.store_memory("The quarterly report goes to Maria on Fridays")
        manager.cold.catch_up()
        manager.forget_memory(gone)
    archive = tmp_path / "finn.tar.gz"
    assert export_agent("finn", archive, with_vectors=True).manifest["with_vectors"]
    assert b"Elm Street" not in _archive_bytes(archive)
    monkeypatch.setenv("AGENTOS_HOME", str(tmp_path / "other"))
    assert import_agent(archive, trust=Trust(vectors=True)).reembedded == ""
    with MemoryManager("finn") as copy:
        assert copy.cold.store().ids() == [kept] and copy.cold.docs.pending_count() == 0
        assert copy.recall_memory("who receives the report?", 1)[0]["id"] == kept


def test_an_export_into_a_folder_that_does_not_exist_names_it_and_the_fix(agents_home, tmp_path):
    """``agentos export --agent finn no/such/folder/finn.tar.gz``: one line that names the missing folder and
    how to make it (not the name of a temporary file), exit code 5, and no folder is created."""
    initialize_agent_memory("finn")
    target = tmp_path / "backups" / "finn.agentos.tar.gz"
    ran = run_main(main, ("export", "--agent", "finn", str(target)))
    assert ran.returncode == 5
    assert ran.stderr == (f"error: there is no folder {target.parent} to write the archive in: create it "
                          f"(mkdir -p {target.parent}) or give a path in a folder that exists\n")
    assert not target.parent.exists()


def test_export_refuses_an_existing_archive_without_force_and_a_name_of_another_format(agents_home,
                                                                                       tmp_path):
    """``agentos export`` over an existing file: a usage error naming --force, the file unchanged; with
    --force it is replaced. A name that is not .tar.gz/.tgz (out.zip) is refused with the one format it
    writes."""
    initialize_agent_memory("finn")
    target = tmp_path / "finn.agentos.tar.gz"
    target.write_bytes(b"an older archive")
    ran = run_main(main, ("export", "--agent", "finn", str(target)))
    assert (ran.returncode, ran.stderr) == (2, f"error: {target} exists: give another name, or --force to "
                                               "replace it\n")
    assert target.read_bytes() == b"an older archive"
    forced = run_main(main, ("export", "--agent", "finn", str(target), "--force"))
    assert forced.returncode == 0, forced.stderr
    assert tarfile.is_tarfile(target)
    for name in ("out.zip", "out.tar", "finn"):
        wrong = run_main(main, ("export", "--agent", "finn", str(tmp_path / name)))
        assert wrong.returncode == 2 and "does not end in .tar.gz or .tgz" in wrong.stderr
        assert "e.g. finn.agentos.tar.gz" in wrong.stderr and not (tmp_path / name).exists()
    assert run_main(main, ("export", "--agent", "finn", str(tmp_path / "finn.TGZ"))).returncode == 0
    space = run_main(main, ("export", "--space", "research", str(target)))
    assert space.returncode == 2 and "--force" in space.stderr
