"""Verdicts on span names, remembered per name and bounded (tracekit.intake.otlp.names)."""

from __future__ import annotations

from tracekit.intake.otlp.names import NameMemo


def test_a_name_is_computed_once_then_looked_up() -> None:
    asked: list[str] = []

    def of(name: str) -> int:
        asked.append(name)
        return len(name)

    memo = NameMemo(of)
    assert [memo[n] for n in ["ab", "abc", "ab", "ab", "abc"]] == [2, 3, 2, 2, 3]
    assert asked == ["ab", "abc"]


def test_past_its_limit_a_memo_starts_again_and_still_answers() -> None:
    memo = NameMemo(str.upper, limit=3)
    names = [f"span-{i}" for i in range(10)]
    assert [memo[n] for n in names] == [n.upper() for n in names]
    assert len(memo) <= 3
