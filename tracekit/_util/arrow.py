"""Arrow arrays built from buffers, never through ``pa.array``.

``pa.array`` on a Python list probes for pandas types and so imports pandas:
half a CPU-second that an ingest or a classification does not otherwise need.

Example:
    >>> strings(["a", None, "bc"]).to_pylist()
    ['a', None, 'bc']
    >>> ints([1, 2], np.int64).to_pylist()
    [1, 2]
    >>> floats([1.5, None]).to_pylist(), bools([True, None, False]).to_pylist()
    ([1.5, None], [True, None, False])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

__all__ = ["bools", "floats", "ints", "nullable_ints", "strings", "utf8"]


def strings(values: Sequence[str | None]) -> pa.Array:
    """A large_string array of ``values`` (None is a null), built from buffers."""
    nulls = [v is None for v in values]
    texts = [("" if v is None else v) for v in values] if any(nulls) else values
    joined = "".join(texts)  # type: ignore[arg-type]  # no None left
    data = joined.encode()
    if len(data) == len(joined):  # ASCII only: a character is a byte
        lengths = list(map(len, texts))  # type: ignore[arg-type]
    else:
        encoded = [t.encode() for t in texts]  # type: ignore[union-attr]
        lengths = list(map(len, encoded))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = None
    if any(nulls):
        bits = np.packbits(~np.asarray(nulls, dtype=bool), bitorder="little")
        valid = pa.py_buffer(bits)
    return pa.Array.from_buffers(
        pa.large_string(), len(values), [valid, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def ints(values: Iterable[int], dtype: type[np.int64] | type[np.int32]) -> pa.Array:
    """An integer array of ``values``, built from a buffer (no pandas import, see :func:`strings`)."""
    array = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=dtype)
    kind = pa.int64() if dtype is np.int64 else pa.int32()
    return pa.Array.from_buffers(kind, len(array), [None, pa.py_buffer(array)])


def utf8(values: Sequence[bytes]) -> pa.Array:
    """A large_string array of UTF-8 texts already encoded (none null)."""
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_string(),
        len(values),
        [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))],
    )


def floats(values: Sequence[float | None]) -> pa.Array:
    """A float64 array of ``values`` (None is a null), built from buffers."""
    data = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [_validity(values), pa.py_buffer(data)])


def nullable_ints(values: Sequence[int | None]) -> pa.Array:
    """An int64 array of ``values`` (None is a null), built from buffers."""
    data = np.array([0 if v is None else v for v in values], dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [_validity(values), pa.py_buffer(data)])


def bools(values: Sequence[bool | None]) -> pa.Array:
    """A boolean array of ``values`` (None is a null), built from buffers."""
    bits = np.packbits(np.array([bool(v) for v in values], dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [_validity(values), pa.py_buffer(bits)])


def _validity(values: Sequence[object]) -> pa.Buffer | None:
    """The validity bitmap of ``values`` (None: every value is set)."""
    nulls = [v is None for v in values]
    if not any(nulls):
        return None
    return pa.py_buffer(np.packbits(~np.asarray(nulls, dtype=bool), bitorder="little"))
