"""The one exception tree of AgentOS.

Every error the library raises on purpose is an ``AgentOSError``; third-party
errors are converted at the boundary with ``raise X(...) from exc``. Messages
say what to do next.

    AgentOSError
    ├── ConfigError                 a config file or option is wrong
    │   └── ContextWindowTooSmallError  the model's window cannot hold the fixed prompt parts
    ├── ValidationError (ValueError) bad input; nothing was written
    │   ├── InvalidAgentNameError
    │   ├── SecretContentError      a space was asked to keep a member's secret
    │   ├── ArchiveTooLargeError    an archive is over an import limit (transfer.*)
    │   └── ToolArgumentError       a model called a tool with bad arguments
    ├── NotFoundError (LookupError)
    │   ├── UnknownAgentError
    │   ├── SessionNotFoundError
    │   ├── SummaryNotFoundError
    │   ├── UnknownSkillError
    │   └── UnknownSpaceError
    ├── PermissionDeniedError       an agent may not read or write a space
    ├── StorageError                a file or database could not be read or written
    │   ├── LockTimeoutError        another process holds the agent's lock
    │   │   └── AgentInUseError     another process has the agent (or space) open
    │   ├── DatabaseUnavailableError the PostgreSQL server cannot be reached
    │   ├── DiskFullError           no space left on the device (or over quota)
    │   ├── ReadOnlyError           a memory file, its folder or the file system is read-only
    │   ├── CorruptionError         a file on disk does not match its checksum
    │   └── WriterNeededError       a reader met what only a writer repairs (MemoryReader)
    ├── ColdStoreError              LanceDB or the embedder failed
    │   ├── EmbedderMismatchError   the store was built by another embedder
    │   └── ColdStoreFilesError     LanceDB's files could not be read or written (also a StorageError)
    ├── ProviderError               a conversation-memory provider failed
    │   └── SummarizerError         a summary could not be produced
    ├── BackendError                an LLM or embedding backend failed
    │   ├── BackendUnavailableError the model server does not answer
    │   ├── ModelNotFoundError      the server does not have the model
    │   └── PromptTooLongError      a prompt does not fit the model's window
    └── EngineError                 a run could not complete
"""

from __future__ import annotations

import reprlib

__all__ = [
    "MAX_MESSAGE_CHARS", "SHOWN_CHARS", "AgentInUseError", "AgentOSError", "ArchiveTooLargeError",
    "BackendError", "BackendUnavailableError", "ColdStoreError", "ColdStoreFilesError", "ConfigError",
    "ContextWindowTooSmallError", "CorruptionError", "DatabaseUnavailableError", "DiskFullError",
    "EmbedderMismatchError", "EngineError", "InvalidAgentNameError", "LockTimeoutError", "ModelNotFoundError",
    "NotFoundError", "PermissionDeniedError", "PromptTooLongError", "ProviderError", "ReadOnlyError",
    "SecretContentError", "SessionNotFoundError", "StorageError", "SummarizerError", "SummaryNotFoundError",
    "ToolArgumentError", "UnknownAgentError", "UnknownSkillError", "UnknownSpaceError", "ValidationError",
    "WriterNeededError", "shown",
]

MAX_MESSAGE_CHARS = 10_000
"""The longest message an error keeps; the rest is cut (a message is one line a person reads)."""
SHOWN_CHARS = 200
"""The most characters of a value that a message echoes (see :func:`shown`)."""

_shortened = reprlib.Repr()
_shortened.maxlevel, _shortened.maxstring, _shortened.maxother = 3, SHOWN_CHARS, SHOWN_CHARS
_shortened.maxlist = _shortened.maxtuple = _shortened.maxset = _shortened.maxdict = 8


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, in time bounded whatever the value (a nested or
    huge structure is summarised, never walked whole): what an error message says it got."""
    text = _shortened.repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


class AgentOSError(Exception):
    """Base of every error AgentOS raises on purpose (its message is cut at ``MAX_MESSAGE_CHARS``)."""

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str) and len(args[0]) > MAX_MESSAGE_CHARS:
            cut = len(args[0]) - MAX_MESSAGE_CHARS
            args = (f"{args[0][:MAX_MESSAGE_CHARS]}… ({cut} more characters cut)", *args[1:])
        super().__init__(*args)


class ConfigError(AgentOSError):
    """A config file or option is invalid."""


class ContextWindowTooSmallError(ConfigError):
    """The model's context window cannot hold the prompt's fixed parts and a reply."""


class ValidationError(AgentOSError, ValueError):
    """Input was rejected before anything was written."""


class InvalidAgentNameError(ValidationError):
    """An agent name is not of the form ``[a-z0-9][a-z0-9_-]{0,63}``."""


class SecretContentError(ValidationError):
    """Content published to a space holds the value of a member's secret fact; nothing was stored."""


class ArchiveTooLargeError(ValidationError):
    """An archive holds more members or bytes than the importing home's ``transfer`` limits allow;
    nothing was written or read past the limit."""


class ToolArgumentError(ValidationError):
    """A model called a tool or skill with arguments that do not fit its schema."""


class NotFoundError(AgentOSError, LookupError):
    """A named thing does not exist."""


class UnknownAgentError(NotFoundError):
    """No agent folder of that name exists."""


class SessionNotFoundError(NotFoundError):
    """No conversation is stored for that session."""


class SummaryNotFoundError(NotFoundError):
    """No summary of that id exists."""


class UnknownSkillError(NotFoundError):
    """No skill of that name is registered."""


class UnknownSpaceError(NotFoundError):
    """No memory space of that name exists."""


class PermissionDeniedError(AgentOSError):
    """An agent asked for a space it is not a member of, or wrote to one it may only read."""


class StorageError(AgentOSError):
    """A memory file or the database could not be read or written."""


class LockTimeoutError(StorageError):
    """The agent's lock could not be taken in time."""


class AgentInUseError(LockTimeoutError):
    """An agent (or a space) that another process has open cannot be replaced; nothing was changed."""


class DatabaseUnavailableError(StorageError):
    """The PostgreSQL server of ``storage.dsn`` cannot be reached or dropped the connection."""


class DiskFullError(StorageError):
    """The disk (or the user's quota) is full; nothing of the refused write was kept."""


class ReadOnlyError(StorageError):
    """A memory file, its folder or the whole file system cannot be written."""


class CorruptionError(StorageError):
    """Data on disk failed its checksum or could not be parsed."""


class WriterNeededError(StorageError):
    """A reader met what only a writer repairs (NOW.md unreadable, memory.db missing, damaged or older): the
    message names the command that opens the agent to write."""


class ColdStoreError(AgentOSError):
    """The cold store (LanceDB) or its embedder failed."""


class ColdStoreFilesError(ColdStoreError, StorageError):
    """LanceDB met an OS error on the cold store's files (a full disk, too many open files): a storage error
    of the cold store, which what degrades on a ColdStoreError (recall by words, indexing later) still
    does."""


class EmbedderMismatchError(ColdStoreError):
    """The cold store was built with another embedding model or dimension."""


class ProviderError(AgentOSError):
    """A conversation-memory provider failed."""


class SummarizerError(ProviderError):
    """A summarizer failed, timed out or returned unusable text."""


class BackendError(AgentOSError):
    """An LLM or embedding backend failed."""


class BackendUnavailableError(BackendError):
    """The model server cannot be reached."""


class ModelNotFoundError(BackendError):
    """The model server does not have the requested model."""


class PromptTooLongError(BackendError):
    """A prompt does not fit the model's window: refused before it was sent, or by the server."""


class EngineError(AgentOSError):
    """An engine run could not complete."""
