"""The v1 records: what decodes, what is refused, and how."""

import msgspec
import pytest

from tracekit.events import Exit, Node, decode_event, encode_event, event_from_dict, parse_ts


def test_rfc3339_and_milliseconds_agree() -> None:
    a = decode_event(b'{"type":"node","ts":"2026-01-01T00:00:00.250Z","runId":"r","id":"x"}')
    b = decode_event(b'{"type":"node","ts":1767225600250,"runId":"r","id":"x"}')
    assert a.ts == b.ts == 1767225600250.0


def test_exit_derives_status_from_ok_and_ok_from_status() -> None:
    failed = decode_event(
        b'{"type":"exit","ts":1,"invocationId":"i","runId":"r","agent":"a","ok":false}'
    )
    refused = decode_event(
        b'{"type":"exit","ts":1,"invocationId":"i","runId":"r","agent":"a","status":"refused"}'
    )
    assert isinstance(failed, Exit) and failed.status == "error"
    assert isinstance(refused, Exit) and refused.ok is False


def test_unknown_fields_are_accepted() -> None:
    ev = decode_event(b'{"type":"node","ts":1,"runId":"r","id":"x","future":{"a":1}}')
    assert isinstance(ev, Node)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b'{"type":"enter","ts":1,"runId":2}', "$.runId"),
        (b'{"type":"nope","ts":1}', "$.type"),
        (b'{"type":"node","ts":"yesterday","runId":"r","id":"x"}', "$.ts"),
        (
            b'{"type":"exit","ts":1,"invocationId":"i","runId":"r","agent":"a","status":"odd"}',
            "$.status",
        ),
    ],
)
def test_invalid_records_name_the_field(line: bytes, fragment: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=fragment.replace("$", r"\$")):
        decode_event(line)


def test_truncated_line_is_a_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_event(b'{"type":"node","ts":1,"runId":"r","id":')


def test_encode_round_trips() -> None:
    line = b'{"type":"exit","ts":5.0,"invocationId":"i","runId":"r","agent":"a","ok":false,"status":"refused","error":{"code":"AGENT_RECURSION","chain":["a","b","a"]}}'
    assert encode_event(decode_event(line)) == line


def test_event_from_dict_matches_decode() -> None:
    obj = {"type": "run.start", "ts": "1970-01-01T00:00:01Z", "runId": "r", "agent": "a"}
    assert event_from_dict(obj) == decode_event(
        b'{"type":"run.start","ts":1000,"runId":"r","agent":"a"}'
    )


def test_parse_ts_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        parse_ts("soon")
