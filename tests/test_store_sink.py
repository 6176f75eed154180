"""StoreSink: the SDK's records land in the store as an ingest of them would."""

from __future__ import annotations

import os
from pathlib import Path

from tests._store_helpers import cli
from tracekit import AgentTracer, JsonlSink, Store, StoreSink


def traced_runs(*sinks: object, runs: int = 3) -> None:
    tk = AgentTracer(*sinks, service="desk")  # type: ignore[arg-type]
    for _ in range(runs):
        with tk.run("front"):
            with tk.step("classify"):
                pass
            with tk.invoke("billing", node="hand_over"), tk.step("sort"):
                pass
    tk.flush()


def test_a_store_sink_stores_what_a_jsonl_sink_writes(tmp_path: Path) -> None:
    trace = tmp_path / "sdk.jsonl"
    with Store(tmp_path / "sink.duckdb") as store:
        sink = StoreSink(store, batch=4)
        traced_runs(sink, JsonlSink(trace))
        sink.close()
        from_sink = store.runs().drop(columns=["classified_at"]).sort_values("run_id")
        log = store.ingest_log()
        inv_sink = store.invocations().sort_values("invocation_id").reset_index(drop=True)
    assert len(from_sink) == 3 and set(from_sink.status) == {"ok"}
    assert log.source.str.startswith("sdk:").all()
    assert (log.lines_read == log.accepted + log.rejected + log.duplicates).all()
    assert log.lines_read.sum() == len(trace.read_text().splitlines())
    with Store(tmp_path / "file.duckdb") as store:
        store.ingest(trace)
        from_file = store.runs().drop(columns=["classified_at"]).sort_values("run_id")
        inv_file = store.invocations().sort_values("invocation_id").reset_index(drop=True)
    assert from_sink.reset_index(drop=True).equals(from_file.reset_index(drop=True))
    assert inv_sink.equals(inv_file)


def test_a_sink_opened_on_a_path_holds_the_store_until_closed(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    sink = StoreSink(db, batch=1000)
    traced_runs(sink, runs=1)
    sink.flush()
    held = cli("runs", "--wait", "0", db=db, check=False)  # another process
    assert held.returncode == 2 and "the store is locked by `" in held.stderr
    assert f"(pid {os.getpid()})" in held.stderr
    sink.close()
    sink.close()  # twice is fine
    with Store(db, read_only=True) as store:
        assert len(store.runs()) == 1
