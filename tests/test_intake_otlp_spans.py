"""The span index's walks (tracekit.intake.otlp.spans): loops of parent links found once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.spans import Key, parent_loops


def _spans(parents: list[int | None]) -> dict[Key, Span]:
    """Span i's parent is span ``parents[i]`` (None: a root; past the end: a parent not read)."""
    spans: dict[Key, Span] = {}
    for i, parent in enumerate(parents):
        up = "" if parent is None else f"s{parent}"
        spans[("t", f"s{i}")] = Span("t", f"s{i}", up, "x", 1, 2, {}, False, "", None)
    return spans


def _on_a_loop(spans: dict[Key, Span], key: Key) -> bool:
    """Whether following parents from ``key`` comes back to it (the naive walk)."""
    cur, steps = spans[key], 0
    while cur.parent and ("t", cur.parent) in spans and steps <= len(spans):
        if ("t", cur.parent) == key:
            return True
        cur, steps = spans[("t", cur.parent)], steps + 1
    return False


@given(st.lists(st.one_of(st.none(), st.integers(0, 12)), max_size=12))
def test_each_loop_is_found_once_child_to_parent_and_nothing_else(
    parents: list[int | None],
) -> None:
    spans = _spans(parents)
    loops = parent_loops(spans)
    found = [key for loop in loops for key in loop]
    assert len(found) == len(set(found))
    assert set(found) == {key for key in spans if _on_a_loop(spans, key)}
    for loop in loops:
        for child, parent in zip(loop, [*loop[1:], loop[0]], strict=True):
            assert spans[child].parent == parent[1]


def test_a_span_below_a_loop_is_not_part_of_it() -> None:
    spans = _spans([1, 2, 1, 0, None])  # s1 <-> s2; s0 and s3 hang below; s4 apart
    assert parent_loops(spans) == [[("t", "s1"), ("t", "s2")]]
