"""Subcommands that move an agent between homes and machines: export, import."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from core.commands.base import arg, command, plural
from core.errors import ValidationError
from core.terminal import seconds, tqdm


@command("export", arg("--agent", metavar="NAME", help="the agent to export, e.g. finn"),
         arg("--space", metavar="NAME", help="export this memory space instead (its journal and members)"),
         arg("file", help="the archive to write, e.g. finn.agentos.tar.gz"),
         arg("--with-vectors", action="store_true",
             help="include the cold store's vectors (else the importer embeds)"),
         arg("--include-secrets", action="store_true",
             help="keep secret facts (left out, and redacted everywhere, by default)"),
         arg("--force", action="store_true", help="replace FILE if it exists"))
def export(args: argparse.Namespace) -> int:
    """Write an agent to one portable archive: NOW.md, LOG.md and its archives, memory.db, config.

    memory.db (facts, notes, conversations and summaries, store items) is a consistent
    snapshot; the manifest holds the format version, the embedder, counts and the sha256
    of every file. Secret facts stay out unless --include-secrets is given.
    With --space NAME: the space's journal and members (its index is rebuilt on import). The archive is a
    gzip-compressed tar (FILE ends in .tar.gz or .tgz); an existing FILE is replaced only with --force.
    """
    from core.transfer import export_agent

    if bool(args.agent) == bool(args.space):
        raise ValidationError("export one agent (--agent NAME) or one space (--space NAME)")
    check_target(args.file, args.force, f"{args.agent or args.space}.agentos.tar.gz")
    if args.space and (args.with_vectors or args.include_secrets):
        raise ValidationError("--with-vectors and --include-secrets are for an agent: a space's archive "
                              "holds its journal and members (no secrets can be published to it; the index "
                              "is rebuilt)")
    if args.space:
        from core.memory.spaces import export_space

        manifest = export_space(args.space, args.file)
        print(f"exported the space {args.space} to {args.file}: {manifest['entries']} journal entries")
        return 0
    with tqdm(desc="writing archive", unit="B", unit_scale=True, leave=False, disable=None) as bar:
        result = export_agent(args.agent, args.file, with_vectors=args.with_vectors,
                              include_secrets=args.include_secrets, progress=bar.update)
    counts, left_out = result.manifest["counts"], result.secrets_left_out
    print(f"exported {args.agent} to {result.path}: "
          f"{plural(counts['log_entries'], 'LOG entry', 'LOG entries')}, {plural(counts['facts'], 'fact')}, "
          f"{plural(counts['notes'], 'note')}, {plural(counts['messages'], 'message')}, "
          f"{plural(counts['store_items'], 'store item')}"
          + ("; with vectors" if result.manifest["with_vectors"] else "")
          + ("; secrets included" if args.include_secrets else "")
          + (f"; {plural(left_out, 'secret fact')} left out and their values redacted "
             "everywhere (--include-secrets keeps them)" if left_out else ""))
    if result.notice:
        print(f"note: {result.notice}", file=sys.stderr)
    return 0


ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
"""The names an archive may have: the one format export writes, a gzip-compressed tar."""


def check_target(file: str, force: bool, example: str) -> None:
    """Refuse a name that is not the archive's format, and an existing file unless ``force``.

    Raises:
        ValidationError: nothing is written.
    """
    path = Path(file)
    if not path.name.lower().endswith(ARCHIVE_SUFFIXES):
        raise ValidationError(f"{file} does not end in .tar.gz or .tgz: agentos export writes one format, a "
                              f"gzip-compressed tar; name the archive e.g. {example}")
    if path.exists() and not path.is_dir() and not force:
        raise ValidationError(f"{file} exists: give another name, or --force to replace it")


@command("import", arg("file", help="an archive written by agentos export"),
         arg("--as", dest="as_name", metavar="NAME",
             help="the agent's name here (default: its name in the archive)"),
         arg("--force", action="store_true",
             help="replace an existing agent (or space) of that name (an agent: refused while a process has "
                  "it open)"),
         arg("--space", action="store_true", help="the archive is a memory space's (agentos export --space)"),
         arg("--trust-skills", action="store_true",
             help="also install the archive's skills/ (Python code the engine runs)"),
         arg("--trust-config", action="store_true",
             help="also take its whole config.yaml (model, server, embedder, storage) and config/SYSTEM.md"),
         arg("--trust-vectors", action="store_true",
             help="keep its vectors instead of embedding every memory here"),
         arg("--trust-members", action="store_true",
             help="with --space: let the agents it names here read (and publish to) the space"))
def import_(args: argparse.Namespace) -> int:
    """Restore an agent archive into the agents home (checked first; restored atomically).

    An archive is data, never code or configuration you did not choose: NOW.md, LOG.md and its
    archives, facts, notes and conversations are restored; memory.db is rebuilt with this version's
    schema; skills, the options of config.yaml that choose a model, a server or where data goes,
    and the vectors are taken only with the --trust-* flag that names them. A damaged archive, or
    one over the home's transfer limits, is an error and nothing is written. The memories are
    embedded here (this home's cold.embedder) unless --trust-vectors keeps fitting vectors.
    With --space: a space archive; the space's index is rebuilt from its journal.
    """
    from core.transfer import Trust, import_agent

    if args.space:
        from core.memory.spaces import import_space

        if args.trust_skills or args.trust_config or args.trust_vectors:
            raise ValidationError("--trust-skills, --trust-config and --trust-vectors are for an agent's "
                                  "archive: a space's holds its journal and members")
        manifest = import_space(args.file, as_name=args.as_name, force=args.force,
                                trust_members=args.trust_members)
        print(f"imported the space {manifest['space']}: {manifest['entries']} journal entries")
        return 0
    if args.trust_members:
        raise ValidationError("--trust-members is for a space's archive (agentos import --space)")

    trust = Trust(skills=args.trust_skills, config=args.trust_config, vectors=args.trust_vectors)
    with tqdm(desc="embedding", unit=" memories", leave=False, disable=None) as bar:
        started = time.monotonic()  # the bar's own clock does not run when there is no terminal to draw on
        result = import_agent(args.file, as_name=args.as_name, force=args.force, trust=trust,
                              progress=bar.update)
        elapsed = time.monotonic() - started
    counts = result.counts
    print(f"imported {result.agent} into {result.root}: "
          f"{plural(counts['log_entries'], 'LOG entry', 'LOG entries')}, {plural(counts['facts'], 'fact')}, "
          f"{plural(counts['messages'], 'message')}"
          + (f"; re-embedded {result.memories} memories in {seconds(elapsed)} ({result.reembedded})"
             if result.reembedded
             else "; vectors kept"))
    for line in result.left_out:
        print(f"not taken from the archive: {line}")
    return 0
