"""``agentos space``, ``agentos recall --space``, ``agentos forget`` and ``agentos export/import --space``."""

from __future__ import annotations

import json

from core.commands import main
from core.memory.spaces import Space
from core.memory_manager import MemoryManager
from core.terminal import exit_codes
from tests.inprocess import Ran, run_main


def agentos(*args: str) -> Ran:
    return run_main(main, args)


def make_agents(*names: str) -> None:
    for name in names:
        MemoryManager(name).close()


def test_create_list_show_and_change_members(agents_home):
    make_agents("researcher", "writer", "editor")
    made = agentos("space", "create", "research", "--member", "researcher", "--read-only", "writer")
    assert made.returncode == 0, made.stderr
    assert "researcher (read-write), writer (read-only)" in made.stdout
    assert json.loads(agentos("space", "list", "--json").stdout) == {
        "research": {"researcher": "read-write", "writer": "read-only"}}
    Space("research").publish("researcher", "Otters hold hands while sleeping")
    shown = agentos("space", "show", "research")
    assert "memories: 1" in shown.stdout and "researcher: Otters hold hands" in shown.stdout
    assert agentos("space", "add-member", "research", "editor", "--read-only").returncode == 0
    assert agentos("space", "remove-member", "research", "writer").returncode == 0
    assert json.loads(agentos("space", "show", "research", "--json").stdout)["members"] == {
        "editor": "read-only", "researcher": "read-write"}
    assert agentos("space", "add-member", "research", "ghost").returncode == exit_codes.NOT_FOUND
    assert agentos("space", "show", "nowhere").returncode == exit_codes.NOT_FOUND
    assert agentos("space", "create", "Bad/Name", "--member", "editor").returncode == exit_codes.USAGE


def test_a_member_is_added_and_removed_also_with_member_as_create_takes_it(agents_home):
    """``add-member``/``remove-member`` take the agent after the space, or with ``--member AGENT`` as
    ``create`` does; none or both is a usage error that names the form and changes nothing."""
    make_agents("researcher", "editor")
    Space.create("research", {"researcher": "read-write"})
    added = agentos("space", "add-member", "research", "--member", "editor", "--read-only")
    assert added.returncode == 0, added.stderr
    assert Space("research").members().access == {"editor": "read-only", "researcher": "read-write"}
    for wrong in (("add-member", "research"), ("add-member", "research", "editor", "--member", "researcher"),
                  ("remove-member", "research")):
        refused = agentos("space", *wrong)
        assert refused.returncode == exit_codes.USAGE
        assert f"agentos space {wrong[0]} research AGENT (or --member AGENT)" in refused.stderr, \
            refused.stderr
    assert Space("research").members().access == {"editor": "read-only", "researcher": "read-write"}
    assert agentos("space", "remove-member", "research", "--member", "editor").returncode == 0
    assert Space("research").members().access == {"researcher": "read-write"}


def test_recall_with_space_attributes_and_a_non_member_is_denied(agents_home):
    make_agents("researcher", "writer", "outsider")
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    Space("research").publish("researcher", "Otters hold hands while sleeping")
    found = agentos("recall", "--agent", "writer", "--space", "research", "--json", "otters sleeping")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert [(h["space"], h["author"]) for h in hits] == [("research", "researcher")]
    assert "by researcher" in agentos("recall", "--agent", "writer", "otters sleeping").stdout
    assert json.loads(agentos("recall", "--agent", "writer", "--no-spaces", "--json", "otters").stdout) == []
    denied = agentos("recall", "--agent", "outsider", "--space", "research", "otters")
    assert denied.returncode == exit_codes.DENIED and "not a member" in denied.stderr


def test_forget_a_space_memory_by_its_author_or_admin(agents_home):
    make_agents("researcher", "writer")
    Space.create("research", {"researcher": "read-write", "writer": "read-write"})
    first = Space("research").publish("researcher", "Otters hold hands while sleeping")
    second = Space("research").publish("writer", "Otters use rocks as tools")
    denied = agentos("forget", "--agent", "writer", first)
    assert denied.returncode == exit_codes.DENIED and "only what it published" in denied.stderr
    assert agentos("forget", "--agent", "researcher", first).returncode == 0
    # refused, never ignored: a space forget would go ahead
    dry = agentos("forget", "--admin", second, "--dry-run")
    assert dry.returncode == exit_codes.USAGE and "--dry-run" in dry.stderr
    assert json.loads(agentos("space", "show", "research", "--json").stdout)["memories"] == 1
    assert agentos("forget", "--admin", second).returncode == 0
    assert json.loads(agentos("space", "show", "research", "--json").stdout)["memories"] == 0
    assert agentos("forget", "--admin", "--agent", "writer", second).returncode == exit_codes.USAGE


def test_export_import_round_trip(agents_home, tmp_path):
    make_agents("researcher", "writer")
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    ids = [Space("research").publish("researcher", f"Finding {n} about otters", {"n": n}) for n in range(3)]
    Space("research").forget("researcher", [ids[0]])
    archive = tmp_path / "research.agentos.tar.gz"
    assert agentos("export", "--space", "research", str(archive)).returncode == 0
    # it names agents of this home
    untrusted = agentos("import", "--space", str(archive), "--as", "research2")
    assert untrusted.returncode == exit_codes.USAGE and "--trust-members" in untrusted.stderr
    assert not (agents_home / "spaces" / "research2").exists()
    done = agentos("import", "--space", str(archive), "--as", "research2", "--trust-members")
    assert done.returncode == 0, done.stderr
    assert (agents_home / "spaces" / "research2" / "LOG.md").read_bytes() == \
        (agents_home / "spaces" / "research" / "LOG.md").read_bytes()
    shown = json.loads(agentos("space", "show", "research2", "--json").stdout)
    assert shown["members"] == {"researcher": "read-write", "writer": "read-only"}
    assert sorted(e["content"] for e in shown["latest"]) == ["Finding 1 about otters",
                                                             "Finding 2 about otters"]
    # exists
    assert agentos("import", "--space", str(archive), "--trust-members").returncode == exit_codes.USAGE
    damaged = tmp_path / "damaged.tar.gz"
    damaged.write_bytes(archive.read_bytes()[:-40])
    assert agentos("import", "--space", str(damaged), "--as", "research3",
                   "--trust-members").returncode == exit_codes.STORAGE
    assert not (agents_home / "spaces" / "research3").exists()


def test_forget_with_purge_and_a_purge_of_earlier_forgets(agents_home):
    make_agents("researcher")
    space = Space.create("research", {"researcher": "read-write"})
    first = space.publish("researcher", "The first draft mentions the zebrafinch vault")
    second = space.publish("researcher", "The second draft mentions the quokka vault")
    space.close()
    journal = agents_home / "spaces" / "research" / "LOG.md"
    done = agentos("forget", "--admin", first, "--purge", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"forgotten": [first], "count": 1, "purged": {"research": [first]}}
    assert b"zebrafinch" not in journal.read_bytes()
    assert agentos("forget", "--agent", "researcher", second).returncode == 0
    assert b"quokka" in journal.read_bytes()  # a forget alone keeps the record
    purged = agentos("forget", "--space", "research", "--purge")
    assert purged.returncode == 0, purged.stderr
    assert (
        "purged the text of 1 forgotten memory from the journal and index of the space research"
        in purged.stdout
    )
    assert b"quokka" not in journal.read_bytes()
    assert agentos("forget", "--space", "research").returncode == exit_codes.USAGE  # say what: ids or --purge
    assert agentos("forget", "--space", "nowhere", "--purge").returncode == exit_codes.NOT_FOUND


def test_publish_from_the_command_line_and_recall_it(agents_home):
    """`agentos space publish` stores a memory as its author (text, standard input, --meta), which another
    member recalls; a reader, an unknown agent and bad metadata are refused and nothing is stored."""
    make_agents("researcher", "writer")
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    published = agentos("space", "publish", "research", "--agent", "researcher",
                        "Otters hold hands while sleeping", "--meta", "source=field notes")
    assert published.returncode == 0, published.stderr
    assert published.stdout.strip() == "published space:research:1 to the space research as researcher"
    piped = run_main(main, ["space", "publish", "research", "--agent", "researcher", "-", "--json"],
                     stdin="Otters use rocks as tools\n")
    assert json.loads(piped.stdout) == {"id": "space:research:2", "space": "research", "author": "researcher"}
    found = json.loads(agentos("recall", "--agent", "writer", "--space", "research", "--json",
                               "otters hold hands").stdout)
    assert found[0]["content"] == "Otters hold hands while sleeping" and found[0]["author"] == "researcher"
    assert Space("research").latest(None, 5)[-1]["metadata"] == {"source": "field notes"}

    reader = agentos("space", "publish", "research", "--agent", "writer", "My draft")
    assert reader.returncode == exit_codes.DENIED and "may only read" in reader.stderr
    assert agentos("space", "publish", "research", "--agent", "ghost",
                   "Boo").returncode == exit_codes.NOT_FOUND
    bad = agentos("space", "publish", "research", "--agent", "researcher", "Text", "--meta", "novalue")
    assert bad.returncode == exit_codes.USAGE and "KEY=VALUE" in bad.stderr
    assert Space("research").show()["memories"] == 2


def test_the_offline_backend_publishes_an_explicit_request(agents_home):
    """Offline, "publish to space NAME: TEXT" calls publish_memory as the agent; a reader's is refused."""
    from core.engine.cli import main as engine

    make_agents("researcher", "writer")
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    done = run_main(engine, ["--agent", "researcher", "--offline",
                             "publish to space research: Otters sleep in rafts"])
    assert done.returncode == 0 and "space:research:1" in done.stdout, done.stderr
    assert [e["content"] for e in Space("research").latest(None, 5)] == ["Otters sleep in rafts"]
    refused = run_main(engine, ["--agent", "writer", "--offline", "Share with the research space: my draft"])
    assert "may only read" in refused.stdout
    assert Space("research").show()["memories"] == 1
