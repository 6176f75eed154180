"""The one exception family of tracekit.

Everything tracekit raises on purpose is a :class:`TracekitError`. The CLI
catches only this base class, prints ``Error: ...`` and exits non-zero; any
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "AgentDepthExceededError",
    "AgentError",
    "AgentFailedError",
    "AgentInvalidNameError",
    "AgentNotAllowedError",
    "AgentNotRegisteredError",
    "AgentPendingError",
    "AgentRecursionError",
    "DialectError",
    "IngestInterrupted",
    "InvalidRecordError",
    "LakeError",
    "RunNotFoundError",
    "SessionNotFoundError",
    "StoreError",
    "StoreLockedError",
    "StoreWriteError",
    "TraceDamagedError",
    "TraceFileError",
    "TraceReadError",
    "TracekitError",
]


class TracekitError(Exception):
    """Base class of every error tracekit raises on purpose.

    Attributes:
        hint: what the user can do next, printed by the CLI after the message.
    """

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint


class DialectError(TracekitError):
    """A dialect file (``--dialect``, ``tracekit.toml``) cannot be read as one.

    Attributes:
        path: the file; line: its line (0 when the mistake has no one line).
    """

    hint = "See docs/otel-apps.md for a dialect's sections and keys."

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")


class LakeError(TracekitError):
    """A lake (a folder of Parquet exported from a store) cannot be written or read,
    or an engine to read it cannot be reached."""


class TraceFileError(TracekitError):
    """A trace file is missing, unreadable or not in a format tracekit reads."""

    def __init__(self, path: str, reason: str, *, hint: str = "") -> None:
        super().__init__(f"{path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason


class TraceDamagedError(TraceFileError):
    """A compressed trace ends early or is corrupt: the lines before the damage were read.

    Attributes:
        report: what was done with every input anyway (an ingest's report), if any.
    """

    def __init__(self, path: str, reason: str, *, report: object = None) -> None:
        super().__init__(path, reason)
        self.report = report


class TraceReadError(TracekitError):
    """One line of a trace could not be read.

    Carries where it happened and what was there, so a report can say
    ``run.jsonl:17: not JSON (Input data was truncated)``.

    Attributes:
        path: the file, or ``-`` for standard input.
        line: 1-based line number.
        text: the offending line, cut to 200 characters.
        reason: why it was refused.
    """

    def __init__(self, path: str, line: int, text: str, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.text = text[:200]
        self.reason = reason


class InvalidRecordError(TracekitError, ValueError):
    """An item handed to the tree (a dict parsed from JSONL) is not a valid v1 record.

    Attributes:
        index: the item's position in what was given (0-based).
        reason: what is wrong with it (the field and the rule it breaks).
    """

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(
            f"events[{index}]: {reason}",
            hint="each record needs the keys of its type (docs/trace-format.md)",
        )
        self.index = index
        self.reason = reason


class RunNotFoundError(TracekitError, LookupError):
    """A run asked for by id is not in the trace file or the store.

    Attributes:
        run_id: the id asked for.
        source: where it was looked for (a file, or a store's path).
    """

    def __init__(self, message: str, *, run_id: str, source: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.run_id = run_id
        self.source = source


class SessionNotFoundError(TracekitError, LookupError):
    """No run of the store belongs to the session asked for.

    Attributes:
        session_id: the id asked for.
        source: where it was looked for (a store's path).
    """

    def __init__(self, message: str, *, session_id: str, source: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.session_id = session_id
        self.source = source


class StoreError(TracekitError):
    """The DuckDB store cannot do what was asked."""


class StoreLockedError(StoreError):
    """Another process holds the store open for writing."""


class StoreWriteError(StoreError):
    """The store file cannot be written (a full disk, a file size limit).

    What was committed before is kept and consistent; the next ingest goes on
    from it.
    """


class IngestInterrupted(StoreError):
    """An ingest stopped by a signal (Ctrl-C, SIGTERM) before it finished.

    The store is as a finished ingest leaves it: everything in it is derived
    and classified; what this ingest had read is not kept, and the next
    ingest of the same files reads it.

    Attributes:
        signum: the signal that stopped it; the command exits ``128 + signum``.
    """

    def __init__(self, message: str, *, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class AgentError(TracekitError):
    """A refusal or failure of an agent invocation, with the runtime's code.

    Codes follow the seed runtimes: ``AGENT_RECURSION`` (with ``chain``),
    ``AGENT_DEPTH_EXCEEDED``, ``AGENT_NOT_ALLOWED``, ``AGENT_NOT_REGISTERED``,
    ``AGENT_INVALID_NAME``, ``AGENT_INPUT_INVALID`` and ``AGENT_FAILED`` (with
    the child's error as ``__cause__``).
    """

    code: str = "AGENT_ERROR"

    def __init__(
        self, message: str, *, code: str | None = None, chain: list[str] | None = None
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.chain = chain


class AgentRecursionError(AgentError):
    """An agent already running in the chain was called again.

    Re-raised unchanged through every level: no one level is at fault.
    """

    code = "AGENT_RECURSION"


class AgentFailedError(AgentError):
    """A delegated agent raised; the child's error is ``__cause__``."""

    code = "AGENT_FAILED"


class AgentDepthExceededError(AgentError):
    """A call would run deeper than the runtime's depth limit."""

    code = "AGENT_DEPTH_EXCEEDED"


class AgentNotAllowedError(AgentError):
    """The caller's allow-list does not name the agent (registered or not)."""

    code = "AGENT_NOT_ALLOWED"


class AgentNotRegisteredError(AgentError):
    """The agent is allowed but no agent of that name is registered."""

    code = "AGENT_NOT_REGISTERED"


class AgentInvalidNameError(AgentError):
    """The name is not letters, digits, ``-`` and ``_``: never an address."""

    code = "AGENT_INVALID_NAME"


class AgentPendingError(AgentError):
    """An invocation stops to wait for a person's approval.

    Raised inside an invocation, it ends that invocation and every caller
    above it as ``pending`` and travels up unchanged, never wrapped.
    """

    code = "AGENT_PENDING"
