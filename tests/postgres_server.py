"""A real PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` in a temporary folder on a free port.

    server = PostgresServer.start()      # raises ServerUnavailable with the reason
    dsn = server.dsn
    server.stop()                        # and the folder is removed

It uses Debian's ``postgresql`` packages (``scripts/setup.sh`` installs them
when run as root). PostgreSQL refuses to run as root, so as root the cluster
belongs to the ``postgres`` user. Durability is traded for speed (``fsync``
off): the tests kill clients, never the server.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from tests.ports import PORT_ATTEMPTS, free_port

SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "max_connections": "300",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "64MB",
}


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why and what to install."""


def server_binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (Debian keeps them off the PATH), or None."""
    for name in ("pg_ctl",):
        found = shutil.which(name)
        if found and shutil.which("initdb"):
            return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


BIND_FAILED = "could not bind"
"""What PostgreSQL logs when its port is taken ("could not bind IPv4 address ...: Address already in use")."""


class PostgresServer:
    """One running cluster; its superuser is ``agentos`` and trusts local connections."""

    def __init__(self, folder: Path, port: int, binaries: Path, owner: str | None, settings: dict) -> None:
        self.folder = folder
        self.binaries = binaries
        self.owner = owner
        self.settings = settings
        self._use_port(port)

    def _use_port(self, port: int) -> None:
        self.port = port
        self.dsn = f"host=127.0.0.1 port={port} user=agentos dbname=postgres connect_timeout=5"

    @classmethod
    def start(cls, settings: dict | None = None) -> "PostgresServer":
        """Create and start a cluster (a few seconds).

        Raises:
            ServerUnavailable: no binaries, no user to run it as, or it did not start.
        """
        binaries = server_binaries()
        if binaries is None:
            raise ServerUnavailable("PostgreSQL is not installed (no initdb/pg_ctl): run scripts/setup.sh as "
                                    "root or apt-get install postgresql")
        owner = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError as exc:
                raise ServerUnavailable("running as root and no 'postgres' user to run the server "
                                        "as") from exc
            owner = "postgres"
        folder = Path(tempfile.mkdtemp(prefix="agentos-pg-"))
        server = cls(folder, free_port(), binaries, owner, {**SETTINGS, **(settings or {})})
        try:
            server._init()
            for attempt in range(1, PORT_ATTEMPTS + 1):
                try:
                    server._start()
                    break
                except subprocess.CalledProcessError:
                    if attempt == PORT_ATTEMPTS or BIND_FAILED not in server.log_tail(20):
                        raise
                    server._use_port(free_port())  # another process took the port before the server bound it
            psycopg.connect(server.dsn).close()
        except (OSError, subprocess.SubprocessError, psycopg.Error) as exc:
            log = server.log_tail()
            server.stop()
            raise ServerUnavailable(f"PostgreSQL did not start: {exc}; log: {log}") from exc
        return server

    def _run(self, *args: str, timeout: float = 120) -> None:
        command = [str(self.binaries / args[0]), *args[1:]]
        if self.owner:
            command = ["runuser", "-u", self.owner, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=timeout, cwd=self.folder)

    def _init(self) -> None:
        if self.owner:
            shutil.chown(self.folder, self.owner)
        self._run("initdb", "-D", str(self.folder / "data"), "-A", "trust", "-U", "agentos", "-E", "UTF8",
                  "--no-sync", "--no-instructions")

    def _start(self) -> None:
        options = " ".join(f"-c {key}={value}" for key, value in self.settings.items())
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "server.log"), "-w",
                  "-t", "60", "-o", f"-p {self.port} -k {self.folder} {options}", "start")

    def log_tail(self, lines: int = 5) -> str:
        path = self.folder / "server.log"
        try:
            return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server at once and remove its folder."""
        if (self.folder / "data" / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop",
                          timeout=60)
            except (OSError, subprocess.SubprocessError):
                pass  # the folder goes anyway; a leftover server dies with the machine's next start
        shutil.rmtree(self.folder, ignore_errors=True)
