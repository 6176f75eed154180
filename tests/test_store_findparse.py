"""The query language's parser: every form, errors with their columns, quoting round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracekit import FindSyntaxError, TracekitError
from tracekit.store.findparse import Pred, Query, Step, _cells, parse_query, quote_name


def test_every_form_parses() -> None:
    q = parse_query(
        "billing>refunds >> *[status=error, kind = delegate] ~> x ~>> 'a > b'[code=\"X Y\"]"
    )
    assert q.edges == (">", ">>", "~>", "~>>")
    assert q.steps[0] == Step("billing")
    assert q.steps[2] == Step(None, (Pred("status", "=", "error"), Pred("kind", "=", "delegate")))
    assert q.steps[4] == Step("a > b", (Pred("code", "=", "X Y"),))
    assert parse_query("circle") == Query((Step(None, circle=True),), ())
    assert parse_query("circle( billing )") == Query((Step("billing", circle=True),), ())
    assert parse_query("circle(*)") == Query((Step(None, circle=True),), ())
    assert parse_query('"circle"') == Query((Step("circle"),), ())
    durations = parse_query("*[duration>2s, duration<=1.5m, duration!=250ms, duration>=30]")
    assert [p.value for p in durations.steps[0].preds] == [2000.0, 90000.0, 250.0, 30.0]
    assert parse_query("a[depth>=2][status!=ok]").steps[0].preds == (
        Pred("depth", ">=", 2.0),
        Pred("status", "!=", "ok"),
    )


@pytest.mark.parametrize(
    ("query", "column", "reason"),
    [
        ("", 1, "empty query"),
        ("billing >", 10, "expected an agent, '*' or circle, found the end of the query"),
        ("billing >> [status=error]", 12, "expected an agent, '*' or circle, found '['"),
        ("billing refunds", 9, "expected >, >>, ~> or ~>> between steps, found 'r'"),
        ("a >>> b", 5, "expected an agent"),
        ("a ~ b", 3, "expected >, >>, ~> or ~>>"),
        ('x > "open', 5, "unterminated quote"),
        ('a > ""', 5, "an empty name"),
        ("a[status=eror]", 10, "status 'eror' is not one of ok, error, refused"),
        ("a[duration>2x]", 12, "'2x' is not a duration"),
        ("a[foo=1]", 3, "unknown field 'foo' (fields: status, code, duration"),
        ("a[]", 3, "expected a field, found ']'"),
        ("a[kind>x]", 7, "kind takes =, !="),
        ("a[status]", 9, "status takes =, !="),
        ("a[depth=1.5]", 9, "'1.5' is not a whole number"),
        ("a[status=ok", 12, "expected ',' or ']' after a predicate"),
        ("a[status=ok;]", 12, "found ';'"),
        ("circle(", 8, "expected an agent or '*' in circle(...)"),
        ("circle(a", 9, "expected ')' to close circle("),
        ("a[kind=handoff] \x1b[31m", 17, "found '\\x1b'"),
    ],
)
def test_parse_errors_point_at_the_column(query: str, column: int, reason: str) -> None:
    with pytest.raises(FindSyntaxError) as info:
        parse_query(query)
    exc = info.value
    assert isinstance(exc, TracekitError)
    assert (exc.column, reason in exc.reason) == (column, True), exc.reason
    assert str(exc).count("\n") == 0 and f"at column {column}: " in str(exc)
    _, caret = exc.pointer().split("\n")
    assert caret == " " * (len(caret) - 1) + "^"


def test_the_caret_counts_wide_and_escaped_characters() -> None:
    with pytest.raises(FindSyntaxError) as info:
        parse_query("日本 > \x07 [x")
    # 日本 takes four cells, the bell is shown as \x07: the caret is under it
    assert info.value.pointer() == "日本 > \\x07 [x\n       ^"
    # and in the CLI's line, after "Error: ", under the same character
    message = "Error: " + str(info.value)
    assert info.value.hint.index("^") == _cells(message[: message.rindex("\\x07")])


names = st.text(min_size=1, max_size=12)


@given(names)
def test_any_name_round_trips_through_its_quoting(name: str) -> None:
    assert parse_query(quote_name(name)).steps[0].agent == name


@given(st.lists(names, min_size=1, max_size=4), st.data())
def test_a_query_written_back_parses_to_itself(agents: list[str], data: st.DataObject) -> None:
    edges = [data.draw(st.sampled_from([">", ">>", "~>", "~>>"])) for _ in agents[1:]]
    text = quote_name(agents[0]) + "".join(
        f" {e} {quote_name(a)}[status=error]" for e, a in zip(edges, agents[1:], strict=True)
    )
    query = parse_query(text)
    assert parse_query(str(query)) == query
    assert [s.agent for s in query.steps] == agents
