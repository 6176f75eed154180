"""Turn a Python exception into the trace's ``ErrorInfo``, causes nested."""

from __future__ import annotations

from typing import Final

import msgspec

from tracekit.errors import AgentError
from tracekit.events import ErrorInfo

_MAX_CAUSES: Final = 16
_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(ErrorInfo)


def error_info(exc: BaseException, _depth: int = 0) -> ErrorInfo:
    """Describe ``exc``: an ``AgentError`` by its code, anything else by its type.

    The explicit cause (``raise ... from``) is kept as ``cause``, nested.

    Example:
        >>> error_info(ValueError("boom"))
        ErrorInfo(code='ValueError', message='boom', chain=None, cause=None, type=None)
    """
    if isinstance(exc, AgentError):
        code, chain = exc.code, exc.chain
    else:
        code, chain = type(exc).__name__, None
    cause = exc.__cause__
    nested = error_info(cause, _depth + 1) if cause is not None and _depth < _MAX_CAUSES else None
    return ErrorInfo(
        code=code, message=str(exc), chain=list(chain) if chain else None, cause=nested
    )


def encode_error(info: ErrorInfo) -> str:
    """Encode for a span attribute (attributes hold primitives only)."""
    return _ENCODER.encode(info).decode()


def decode_error(text: str) -> ErrorInfo:
    """The inverse of :func:`encode_error`."""
    return _DECODER.decode(text)
