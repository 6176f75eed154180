"""The palettes are built from the outcome vocabulary: one look per outcome, no more."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tracekit._util.theme import OUTCOME_COLORS, OUTCOME_STYLES, _palettes
from tracekit.failures.outcomes import OUTCOMES


def test_every_outcome_has_a_colour_and_a_style_and_nothing_else_does() -> None:
    assert tuple(OUTCOME_COLORS) == OUTCOMES
    assert tuple(OUTCOME_STYLES) == OUTCOMES
    assert all(c.startswith("#") and len(c) == 7 for c in OUTCOME_COLORS.values())
    assert all(OUTCOME_STYLES.values())


def test_the_failures_vocabulary_is_the_one_the_palettes_are_built_from() -> None:
    from tracekit._util import outcomes

    assert OUTCOMES is outcomes.OUTCOMES


@pytest.mark.parametrize(
    ("outcomes", "words"),
    [((*OUTCOMES, "failed:new"), "without a look"), (OUTCOMES[1:], "for no outcome")],
)
def test_a_vocabulary_and_palette_that_disagree_are_refused(
    outcomes: tuple[str, ...], words: str
) -> None:
    from tracekit._util.theme import _OUTCOME_LOOKS

    with pytest.raises(LookupError, match=words):
        _palettes(outcomes, _OUTCOME_LOOKS)


def test_a_new_outcome_without_a_look_stops_the_import_not_a_render() -> None:
    script = (
        "import tracekit._util.outcomes as o\n"
        "o.OUTCOMES = (*o.OUTCOMES, 'failed:new')\n"
        "import tracekit._util.theme\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "LookupError: outcomes without a look" in done.stderr
    assert "failed:new" in done.stderr
