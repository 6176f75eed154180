"""One span as the decoders give it: :class:`Span`, its attributes decoded to plain values.

Its own module, below the decoders and the dialects alike: the decoders make
spans and ask the dialects which keys to keep; the dialects read spans.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Span"]


class Span(msgspec.Struct):
    """One span, its attributes decoded to plain values; times in nanoseconds.

    A struct, not a dataclass: it is made once per span read, and msgspec
    builds it in C (its fields are the same, positional or by name).
    """

    trace: str
    id: str
    parent: str
    name: str
    start: int
    end: int | None
    attrs: dict[str, Any]
    error: bool
    message: str
    service: str | None
    exception: str | None = None  # the ``exception.type`` of an exception event
    line: int = 0  # the source line it was read from, when the caller says
    #: The spans it links to, as ``(trace id, span id)``.
    links: tuple[tuple[str, str], ...] = ()
    #: The agent a transfer tool names in its arguments or events, if any.
    target: str | None = None
    #: Its name reads as a handoff or transfer (:func:`is_transfer_name`).
    transfer: bool = False
    #: The ``exception.message`` of an exception event.
    exception_message: str | None = None
    #: What its ``exception.stacktrace`` says the exception was raised from
    #: (the text before the last "direct cause" or "during handling" line).
    exception_cause: str | None = None
    #: Why a value of it could not be read (a time that is not a whole number,
    #: an integer past 64 bits): the span is refused alone, for that reason.
    unreadable: str | None = None
