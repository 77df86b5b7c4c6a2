"""Compact an agent's conversation session now (what /compact does in the interactive mode).

With the LCM provider the provider's full compaction runs; with Simple the
model writes a handoff summary (Goal, Progress, Key Decisions, Files Changed,
Current State, Blockers / Gotchas, Next Steps) that replaces all but the last
compaction.keep_tail messages. On failure the session is left untouched.

    python scripts/compact_session.py --agent finn [--session main] [--offline]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.errors import AgentOSError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--agent", required=True, help="agent name, e.g. finn")
    cli.add_argument("--session", default="main", help="session name (default: main)")
    cli.add_argument("--model", help="Ollama model for the summary")
    cli.add_argument("--offline", action="store_true", help="summarise with the offline backend")
    args = cli.parse_args(argv)
    from core.engine import Engine
    from core.spinner import Spinner

    try:
        with Engine(args.agent, session=args.session, offline=args.offline, model=args.model) as engine:
            print(engine.notice, file=sys.stderr)
            try:
                with Spinner("compacting"):
                    report = engine.compact()
            finally:
                engine.manager.close()
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Compacted session {args.agent}:{args.session} ({report.method}): "
          f"{report.tokens_before} -> {report.tokens_after} tokens")
    if report.details:
        print(report.details)
    if report.summary:
        print(report.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
