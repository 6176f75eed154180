"""The line splitter every reader uses, against the rule written out plainly."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.intake.lines import BOM, split_lines


def expected(data: bytes, limit: int) -> tuple[bytes, list[tuple[int, int]]]:
    """Lines at ``\\n``, a BOM dropped, lines over ``limit`` emptied and listed."""
    body = data.removeprefix(BOM)
    *lines, tail = body.split(b"\n")
    if tail:
        lines.append(tail)
    long = [(n, len(x)) for n, x in enumerate(lines, 1) if len(x) > limit]
    kept = b"".join((b"" if len(x) > limit else x) + b"\n" for x in lines)
    return kept, long


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(st.sampled_from([b"a", b"\n", b"\r", b"bcd", b"\r\n"]), max_size=60),
    bom=st.booleans(),
    limit=st.integers(1, 9),
    piece=st.integers(1, 12),
    chunk=st.integers(1, 30),
)
def test_split_lines_keeps_every_line_in_order_and_empties_the_long_ones(
    parts: list[bytes], bom: bool, limit: int, piece: int, chunk: int
) -> None:
    data = (BOM if bom else b"") + b"".join(parts)
    chunks = list(
        split_lines(
            io.BytesIO(data).read, piece=piece, chunk=chunk, limit=limit, keep_tail=lambda _: True
        )
    )
    kept = b"".join(c.data for c in chunks)
    long = [(n.number, n.size) for c in chunks for n in c.long]
    assert (kept, long) == expected(data, limit)
    assert [c.first_line for c in chunks[1:]] == [c.last_line for c in chunks[:-1]]
    assert not chunks or chunks[-1].end == len(data)


def test_a_last_line_not_yet_complete_is_held_back() -> None:
    data = b'{"a":1}\n{"b":'
    [chunk] = split_lines(io.BytesIO(data).read, piece=4, chunk=64, keep_tail=lambda _: False)
    assert (chunk.data, chunk.end) == (b'{"a":1}\n', 8)
