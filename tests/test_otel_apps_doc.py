"""The "send your app's traces" setup, as the README and docs/otel-apps.md show it, reaches the store.

The snippet is taken from each document as written (never a copy in the test)
and run in a subprocess with the real OpenTelemetry SDK and OTLP/HTTP exporter
against a real ``tracekit serve``; its run is then found in the store.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._server_helpers import start
from tracekit import Store

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "otel-apps.md"]


def _snippet(doc: Path) -> str:
    """The one Python block of the document that sets up the OTLP exporter."""
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    found = [block for block in blocks if "OTLPSpanExporter" in block]
    assert len(found) == 1, doc
    return found[0]


def test_the_readme_and_the_page_show_the_same_setup() -> None:
    assert _snippet(DOCS[0]) == _snippet(DOCS[1])


def test_the_pages_name_the_exporter_package_and_the_agent_attributes() -> None:
    for doc in DOCS:
        text = doc.read_text()
        assert "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http" in text
        assert "gen_ai.operation.name" in text and "gen_ai.agent.name" in text
        assert "--dialect FILE" in text, doc


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_the_snippet_sends_its_run_to_tracekit_serve(doc: Path, tmp_path: Path) -> None:
    db = tmp_path / "live.duckdb"
    server = start(db)
    try:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": server.url}
        ran = subprocess.run(
            [sys.executable, "-c", _snippet(doc)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr
        server.wait_loaded(3)  # triage, billing, lookup_invoice
    finally:
        assert server.stop() == 0, server.err
    with Store(db, read_only=True) as store:
        runs = store.runs()
        assert list(runs.agent) == ["triage"] and list(runs.service) == ["my-agents"]
        assert list(runs.outcome) == ["ok"]
        calls = store.invocations()
        assert list(calls.agent) == ["billing"] and list(calls.depth) == [1]
        (billing,) = store.tree(str(runs.run_id[0]))
        assert [step.id for step in billing.steps] == ["lookup_invoice"]
