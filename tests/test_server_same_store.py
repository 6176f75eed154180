"""``tracekit serve`` stores what ``tracekit ingest`` of the same OTLP file stores.

Every span field the mapping reads must survive the server's spool (its
tuples, written by the decode and read back by the mapper process):
handoffs by transfer tool, links across traces, exception messages and
causes. Each committed OTLP recording is posted to a real server over
loopback, one request per line, and the served store's runs (with their
fleet classes), invocations, steps and fleet calls are compared with a
file ingest of the same recordings.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from _compare_helpers import differences
from _server_helpers import TRACEKIT, start

from tests.test_intake_otlp import agent, doc, error, tool

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = [
    *sorted((ROOT / "tests" / "frameworks" / "recordings").glob("*/*.otlp.json")),
    ROOT / "sample_traces" / "otlp" / "escalation_desk.otlp.jsonl",
]
JSON_HEADERS = {"Content-Type": "application/json"}
TABLES = ("runs", "invocations", "steps", "fleet_calls")
# Where a record was read from (a file's line, or the spool's offset), not what it says.
WHERE = frozenset({"source", "line"})


def _sid(n: int) -> str:
    return f"{n:016x}"


def _raised(kind: str, message: str, stacktrace: str = "") -> list[dict[str, Any]]:
    """An ``exception`` span event, with its stack trace when given."""
    said = {"exception.type": kind, "exception.message": message}
    if stacktrace:
        said["exception.stacktrace"] = stacktrace
    attributes = [{"key": k, "value": {"stringValue": v}} for k, v in said.items()]
    return [{"name": "exception", "attributes": attributes}]


# Two of the desk's callees fail; its own error wraps the first one's, and
# only its stack trace says so (the codes and messages all differ): fraud is
# the origin, not billing, the last to fail.
_WRAPPED_TRACE = (
    'Traceback (most recent call last):\n  File "fraud.py", line 3, in score\n'
    "KeyError: no score for this card\n\n"
    "The above exception was the direct cause of the following exception:\n\n"
    'Traceback (most recent call last):\n  File "desk.py", line 9, in run\n'
    "RuntimeError: the request failed"
)
WRAPPED = [
    agent(
        _sid(1),
        "desk",
        0,
        100,
        status=error("RuntimeError", "the request failed"),
        events=_raised("RuntimeError", "the request failed", _WRAPPED_TRACE),
    ),
    tool(_sid(2), "ask_billing", 41, 99, _sid(1)),
    agent(
        _sid(3),
        "billing",
        42,
        98,
        _sid(2),
        status=error("ValueError", "card declined"),
        events=_raised("ValueError", "card declined"),
    ),
    tool(_sid(4), "ask_fraud", 1, 40, _sid(1)),
    agent(
        _sid(5),
        "fraud",
        2,
        39,
        _sid(4),
        status=error("KeyError", "no score for this card"),
        events=_raised("KeyError", "no score for this card"),
    ),
]
# desk -> orders -> billing -> orders: refused for recursion, seen only through GenAI spans.
RECURSION = [
    agent(_sid(0x11), "desk", 0, 100, status=error("AGENT_RECURSION")),
    tool(_sid(0x12), "ask", 1, 99, _sid(0x11)),
    *(
        agent(
            _sid(0x10 + n),
            name,
            n - 1,
            100 - n,
            _sid(0x10 + n - 1),
            attrs={"error.type": "AGENT_RECURSION"},
            status=error("AGENT_RECURSION"),
            events=_raised("AGENT_RECURSION", f"{name} is already running"),
        )
        for n, name in ((3, "orders"), (5, "billing"), (7, "orders"))
    ),
    tool(_sid(0x14), "ask", 3, 97, _sid(0x13)),
    tool(_sid(0x16), "ask", 5, 94, _sid(0x15)),
]


def _failures(path: Path) -> Path:
    """A file of the two hand-written traces, each under its own trace id."""
    lines = []
    for n, spans in enumerate((WRAPPED, RECURSION), 1):
        body = doc(*spans)
        for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            s["traceId"] = f"{0xFA110 + n:032x}"
        lines.append(json.dumps(body))
    path.write_text("\n".join(lines) + "\n")
    return path


def _serve(db: Path, files: list[Path]) -> None:
    """Post every line of the files to a server on ``db``, one request each; stop it."""
    server = start(db)
    try:
        for path in files:
            for line in path.read_bytes().splitlines():
                if line.strip():
                    status, reply, _ = server.post("/v1/traces", line, JSON_HEADERS)
                    assert status == 200, (path, reply[:300])
    finally:
        assert server.stop() == 0, server.err


def test_served_recordings_store_what_their_ingest_stores(tmp_path: Path) -> None:
    assert len(RECORDINGS) > 40  # every framework's recordings, not a stray few
    files = [*RECORDINGS, _failures(tmp_path / "failures.jsonl")]
    _serve(tmp_path / "served.duckdb", files)
    ingested = tmp_path / "ingested.duckdb"
    subprocess.run(
        [TRACEKIT, "ingest", "--db", str(ingested), *map(str, files)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    diff = differences(tmp_path / "served.duckdb", ingested, TABLES, WHERE)
    assert diff == []
