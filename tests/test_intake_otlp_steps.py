"""A failed span's own error: its code from error.type, the exception, or the status message."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tracekit.intake.otlp.decoded import Span
from tracekit.intake.otlp.steps import own_error


def _failed(message: str, **attrs: object) -> Span:
    return Span("t1", "s1", "", "tool", 0, 1, dict(attrs), True, message, "svc")


def test_a_status_messages_head_is_its_code_and_the_whole_text_its_message() -> None:
    error = own_error(_failed("Error running tool: {'tool_name': 'charge_card'}"))
    assert error is not None
    assert (error.code, error.message) == (
        "Error running tool",
        "Error running tool: {'tool_name': 'charge_card'}",
    )


def test_a_structured_status_message_gives_the_message_it_holds_as_the_code() -> None:
    text = "{'message': 'Max turns exceeded', 'data': {'max_turns': 5}}"
    error = own_error(_failed(text))
    assert error is not None
    assert (error.code, error.message) == ("Max turns exceeded", text)
    held = own_error(_failed(json.dumps({"error": "card declined: INV-7", "data": [1]})))
    assert held is not None and held.code == "card declined"


def test_an_error_type_wins_over_any_message() -> None:
    error = own_error(_failed("{'message': 'Error in agent run'}", **{"error.type": "Boom"}))
    assert error is not None and error.code == "Boom"


_WORDS = st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), min_size=1, max_size=30)


# Eight entries keep the text under the 4,096 characters a structured message
# is read within, even with every character escaped as \uXXXX.
@given(
    _WORDS.filter(lambda w: w.strip() and ": " not in w),
    st.dictionaries(_WORDS, _WORDS, max_size=8),
)
def test_the_held_message_is_the_code_whichever_way_the_structure_is_written(
    held: str, data: dict[str, str]
) -> None:
    payload = {"message": held, "data": data}
    for text in (json.dumps(payload), repr(payload)):
        error = own_error(_failed(text))
        assert error is not None
        assert error.code == held.strip()[:80], text


@given(st.text(max_size=200))
def test_any_status_message_gives_a_code_and_keeps_its_text(message: str) -> None:
    error = own_error(_failed(message))
    assert error is not None
    assert error.code and len(error.code) <= 80
    assert error.message == message
