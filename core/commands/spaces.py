"""``agentos space``: create, list and show memory spaces, change their members, and publish to them."""

from __future__ import annotations

import argparse
import sys

from core.commands.base import JSON, command, emit, whole_number
from core.errors import ValidationError
from core.memory.spaces import Space, list_spaces, memory_id, parse_memory_id
from core.memory.spaces import READ_ONLY, READ_WRITE
from core.paths import existing_agent

ACTIONS = ("create", "list", "show", "publish", "add-member", "remove-member", "rebuild-index", "move-index")


def _configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a space with its members")
    create.add_argument("name", help="the space, e.g. research (the agent-name rules)")
    create.add_argument("--member", action="append", default=[], metavar="AGENT",
                        help="a read-write member (repeat)")
    create.add_argument("--read-only", action="append", default=[], metavar="AGENT",
                        help="a member that may only read (repeat)")
    actions.add_parser("list", help="list the spaces and their members").add_argument(
        *JSON.flags, **JSON.options)
    show = actions.add_parser("show", help="a space's members, size and latest entries")
    show.add_argument("name")
    show.add_argument("-n", "--last", type=whole_number(0), default=5, metavar="N",
                      help="how many latest entries (default 5)")
    show.add_argument(*JSON.flags, **JSON.options)
    publish = actions.add_parser("publish",
                                 help="publish a memory to a space as one of its read-write members")
    publish.add_argument("name", help="the space")
    publish.add_argument("text", help="what to share (- reads it from standard input)")
    publish.add_argument("--agent", required=True, metavar="NAME",
                         help="the member publishing it (its author)")
    publish.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                         help="metadata kept with the memory, e.g. source=\"field notes\" (repeat)")
    publish.add_argument(*JSON.flags, **JSON.options)
    add = actions.add_parser("add-member", help="add a member (or change its access)")
    remove = actions.add_parser("remove-member", help="remove a member: it can no longer read or publish")
    for change in (add, remove):
        change.add_argument("name")
        change.add_argument("agent", nargs="?", help="the agent (or --member AGENT, as create takes it)")
        change.add_argument("--member", metavar="AGENT", help=argparse.SUPPRESS)
    add.add_argument("--read-only", action="store_true", help="it may read but not publish")
    rebuild = actions.add_parser("rebuild-index", help="rebuild index.db from the space's journal")
    rebuild.add_argument("name")
    move = actions.add_parser("move-index",
                              help="rebuild the index on PostgreSQL or in index.db, and remove the other")
    move.add_argument("name")
    move.add_argument("--to", choices=("postgres", "sqlite"), required=True,
                      help="where the index is to live (run with the server set either way)")


@command("space", configure=_configure)
def space(args: argparse.Namespace) -> int:
    """Memory spaces: shared memories that their member agents publish to and recall from.

      agentos space create research --member researcher --read-only writer
      agentos space list
      agentos space show research
      agentos space publish research --agent researcher "Otters hold hands while sleeping"
      agentos recall --agent writer --space research "why do otters hold hands"
      agentos space add-member research editor [--read-only]
      agentos space remove-member research editor
      agentos space move-index research --to postgres
    """
    return _ACTIONS[args.action](args)


def _create(args: argparse.Namespace) -> int:
    both = set(args.member) & set(args.read_only)
    if both:
        raise ValidationError(f"{', '.join(sorted(both))}: give each member once, with --member or "
                              "--read-only")
    members = {**{a: READ_WRITE for a in args.member}, **{a: READ_ONLY for a in args.read_only}}
    with Space.create(args.name, members) as created:
        print(f"created the space {args.name} in {created.paths.root}: "
              + _members_text(created.members().access))
    return 0


def _list(args: argparse.Namespace) -> int:
    found = {}
    for name in list_spaces():
        with Space(name) as one:
            found[name] = dict(one.members().access)
    emit(args, found, lambda: "\n".join(f"{n}: {_members_text(m)}" for n, m in found.items()) or
         "(no spaces: agentos space create NAME --member AGENT)")
    return 0


def _show(args: argparse.Namespace) -> int:
    with Space(args.name) as one:
        shown = one.show()
        shown["latest"] = one.latest(None, args.last)
    emit(args, shown, lambda: "\n".join([
        f"space {shown['space']} ({shown['path']})",
        f"members: {_members_text(shown['members'])}",
        f"memories: {shown['memories']} ({shown['journal_bytes']} bytes of journal, last seq "
        f"{shown['last_seq']})",
        *(f"  {e['id']} {e['ts']} {e['author']}: {e['content']}" for e in shown["latest"]),
    ]))
    return 0


def _publish(args: argparse.Namespace) -> int:
    existing_agent(args.agent)
    text = sys.stdin.read() if args.text == "-" else args.text
    metadata = {}
    for pair in args.meta:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"--meta {pair!r}: give KEY=VALUE, e.g. --meta source=notes")
        metadata[key.strip()] = value
    with Space(args.name) as one:
        published = one.publish(args.agent, text, metadata or None)
    emit(args, {"id": published, "space": args.name, "author": args.agent},
         f"published {published} to the space {args.name} as {args.agent}")
    return 0


def _add(args: argparse.Namespace) -> int:
    agent = _member_argument(args)
    access = READ_ONLY if args.read_only else READ_WRITE
    with Space(args.name) as one:
        print(f"{args.name}: " + _members_text(one.add_member(agent, access).access))
    return 0


def _remove(args: argparse.Namespace) -> int:
    agent = _member_argument(args)
    with Space(args.name) as one:
        print(f"{args.name}: " + _members_text(one.remove_member(agent).access))
    return 0


def _member_argument(args: argparse.Namespace) -> str:
    """The agent of add-member/remove-member, given after the space or with --member as create takes it."""
    if (args.agent is None) == (args.member is None):
        raise ValidationError(f"name one agent: agentos space {args.action} {args.name} AGENT "
                              f"(or --member AGENT)")
    return args.agent if args.agent is not None else args.member


def _rebuild(args: argparse.Namespace) -> int:
    with Space(args.name) as one:
        print(f"rebuilt the index of {args.name} from {one.rebuild_index()} journal entries")
    return 0


def _move(args: argparse.Namespace) -> int:
    with Space(args.name) as one:
        count = one.move_index(args.to)
    print(f"moved the index of {args.name} to {args.to}: rebuilt from {count} journal entries")
    return 0


def forget_shared(args: argparse.Namespace) -> int:
    """``agentos forget`` of space memories (ids ``space:NAME:SEQ``): by their author (--agent) or --admin;
    with --purge their text leaves the journal and the index too (``--space NAME --purge`` alone: earlier
    forgets)."""
    if args.query or args.before or args.kind:
        raise ValidationError("a space's memories are forgotten by id (space:NAME:SEQ, as recall shows them)")
    if any(not i.startswith("space:") for i in args.ids):
        raise ValidationError("give only space memory ids (space:NAME:SEQ) with --admin or --space; forget "
                              "an agent's own memories separately")
    if not args.ids:
        if not (args.space and args.purge):
            raise ValidationError("say what to forget: space memory ids (space:NAME:SEQ), or --space NAME "
                                  "--purge")
        return _purge_spaces(args, [args.space], [])
    if bool(args.agent) == bool(args.admin):
        raise ValidationError("forget space memories as their author (--agent NAME) or as an administrator "
                              "(--admin), one of the two")
    by_space: dict[str, list[str]] = {}
    for value in args.ids:
        by_space.setdefault(parse_memory_id(value)[0], []).append(value)
    if args.space and set(by_space) != {args.space}:
        raise ValidationError(f"--space {args.space} names another space than the ids: {', '.join(args.ids)}")
    forgotten = []
    for name, ids in by_space.items():
        with Space(name) as one:
            forgotten += one.forget(None if args.admin else args.agent, ids)
    if args.purge:
        return _purge_spaces(args, list(by_space), forgotten)
    emit(
        args,
        {"forgotten": forgotten, "count": len(forgotten)},
        f"forgot {len(forgotten)} memor{'y' if len(forgotten) == 1 else 'ies'} "
        f"of the space{'s' * (len(by_space) > 1)} "
        f"{', '.join(by_space)} (the journal keeps the record; recall no longer finds them)",
    )
    return 0


def _purge_spaces(args: argparse.Namespace, names: list[str], forgotten: list[str]) -> int:
    purged = {}
    for name in names:
        with Space(name) as one:
            report = one.purge_forgotten()
        purged[name] = [memory_id(name, seq) for seq in report.purged]
    text = [f"forgot {len(forgotten)} memor{'y' if len(forgotten) == 1 else 'ies'}"] if forgotten else []
    text += [f"purged the text of {len(ids)} forgotten memor{'y' if len(ids) == 1 else 'ies'} from the "
             f"journal and index of the space {name}" for name, ids in purged.items()]
    emit(args, {"forgotten": forgotten, "count": len(forgotten), "purged": purged}, "\n".join(text))
    return 0


def _members_text(access) -> str:
    return ", ".join(f"{agent} ({mode})" for agent, mode in access.items())


_ACTIONS = {"create": _create, "list": _list, "show": _show, "publish": _publish, "add-member": _add,
            "remove-member": _remove,
            "rebuild-index": _rebuild, "move-index": _move}
