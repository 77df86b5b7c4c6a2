"""Ports for the servers the tests start."""

from __future__ import annotations

import socket

PORT_ATTEMPTS = 3
"""Ports a test server tries: the port :func:`free_port` found is bound by the server a moment later, and the
other test worker may take it in between."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that no process listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
