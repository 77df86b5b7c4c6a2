"""The exit codes of every AgentOS command, the same across all of them.

    0    done
    1    the run ended in error or at the step limit (NOW.md says what to do next)
    2    usage or config error (a bad flag, option, agent name or config file,
         an agent that already exists on import)
    3    the run is blocked: the backend cannot carry out the task (the offline backend)
    4    not found (an agent, session, summary, archive or file that does not exist)
    5    storage error (a memory file, the database or an archive could not be read or
         written, a damaged archive, another process holds the agent, or the PostgreSQL
         server cannot be reached)
    6    model backend error (no server, unknown model, a failing model call)
    7    permission denied (an agent that is not a member of a memory space, or may only read it)
    130  interrupted (Ctrl-C)
    141  the output's reader went away (``agentos status | head -n 1``): the rest of the
         output was dropped, without a message (what a shell reports for SIGPIPE)
"""

from __future__ import annotations

from core.errors import (AgentOSError, BackendError, ColdStoreError, ConfigError, NotFoundError,
                         PermissionDeniedError, StorageError, ValidationError)

OK, FAILED, USAGE, BLOCKED, NOT_FOUND, STORAGE, BACKEND, INTERRUPTED = 0, 1, 2, 3, 4, 5, 6, 130
DENIED = 7
CLOSED_OUTPUT = 141


def for_error(exc: AgentOSError) -> int:
    """The exit code for a library error that stopped a command."""
    if isinstance(exc, NotFoundError):
        return NOT_FOUND
    if isinstance(exc, PermissionDeniedError):
        return DENIED
    if isinstance(exc, (StorageError, ColdStoreError)):
        return STORAGE
    if isinstance(exc, BackendError):
        return BACKEND
    if isinstance(exc, (ConfigError, ValidationError)):
        return USAGE
    return FAILED
