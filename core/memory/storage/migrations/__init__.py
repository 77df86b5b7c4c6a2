"""memory.db's numbered migrations, one module ``mNNN_name.py`` each, for both databases.

A module holds the migration once: ``SQL``, the statements both databases run (memory.db's SQL, in
SQLite's spelling), and where the dialects truly differ (FTS5 and triggers against tsvector, GIN and
PL/pgSQL; SQLite's rowid against an identity column) ``SQLITE`` and ``POSTGRES``, the part each one
runs after it. Either database records the names it applied in its ``_migrations`` table, so a
database upgraded by an earlier layout of these modules is recognised as it is.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Literal

from core.errors import StorageError


@dataclass(frozen=True)
class Migration:
    """One numbered migration."""

    name: str
    """``mNNN_name``: what ``_migrations`` records."""
    shared: str
    """The statements both databases run."""
    sqlite: str
    """What SQLite runs after them."""
    postgres: str
    """What PostgreSQL runs after them."""

    def script(self, kind: Literal["sqlite", "postgres"]) -> str:
        """The whole migration as database ``kind`` runs it."""
        return self.shared + (self.sqlite if kind == "sqlite" else self.postgres)


def all_migrations() -> list[Migration]:
    """Every migration, in order.

    Raises:
        StorageError: a module defines none of ``SQL``, ``SQLITE`` and ``POSTGRES`` for one database.
    """
    names = sorted(info.name for info in pkgutil.iter_modules(__path__)
                   if info.name[:1] == "m" and info.name[1:4].isdigit())
    found = []
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        migration = Migration(name, getattr(module, "SQL", ""), getattr(module, "SQLITE", ""),
                              getattr(module, "POSTGRES", ""))
        for kind in ("sqlite", "postgres"):
            if not migration.script(kind).strip():
                raise StorageError(f"migration {name} has nothing for {kind}: define SQL (both databases) or "
                                   f"{kind.upper()} in core/memory/storage/migrations/{name}.py")
        found.append(migration)
    return found
