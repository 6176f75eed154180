"""Failures from evidence on plain-OpenTelemetry apps: class, origin and circle equal the code's truth.

The fleet is real Python on the OpenTelemetry SDK
(:mod:`tracekit.simulation.otel_fleet`): exceptions raised, re-raised,
wrapped with ``from``, caught; threads; several services. Its code records
what happened as it runs; the spans never tell the test the answer.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _otel_helpers import expected, found, mismatches, otel_store, otel_trace
from _tree_helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracekit.failures import classify_events
from tracekit.intake.otlp.convert import OtlpConverter, otlp_to_events
from tracekit.simulation.otel_apps import Apps, LoopDetected, Truth
from tracekit.simulation.otel_export import otlp_json_lines
from tracekit.simulation.otel_fleet import SCENARIOS, otel_fleet
from tracekit.store import Store


def test_every_run_of_the_fleet_is_classified_as_its_code_failed(tmp_path: Path) -> None:
    trace = tmp_path / "fleet.otlp.jsonl"
    truths = otel_trace(trace, runs=300, seed=1)
    db = tmp_path / "fleet.duckdb"
    result = run_cli("ingest", str(trace), "--db", str(db))
    assert result.returncode == 0, result.stderr
    with Store(db, read_only=True) as store:
        assert mismatches(found(store), truths) == []
        roles = dict(
            store.con.execute(
                "SELECT failure_role, count(*) FROM invocations GROUP BY 1"
            ).fetchall()
        )
    classes = Counter(t.outcome for t in truths.values())
    assert set(classes) == {"ok", "degraded", "failed:child", "failed:recursion"}
    assert min(classes.values()) >= 20  # each a meaningful share
    depths = Counter(t.origin_depth for t in truths.values() if t.origin_depth is not None)
    assert {0, 1, 2, 3, 4} <= set(depths)
    assert roles["wrapped"] > 0 and roles["origin"] > 0
    with Store(db, read_only=True) as store:
        steps = store.con.execute(
            "SELECT count(*) FROM runs WHERE outcome = 'degraded' AND origin_step = 'refund_api'"
        ).fetchone()
    assert steps and steps[0] >= 10  # a tool's error caught by its agent: degraded there
    circles = {t.circle for t in truths.values() if t.circle}
    assert {c.count("->") for c in circles} == {1, 2, 3}  # circles of one, two and three agents


@pytest.mark.slow
def test_two_thousand_runs(tmp_path: Path) -> None:
    """The "done when" check: 2,000 runs, every class, origin and circle as the code did."""
    trace = tmp_path / "fleet.otlp.jsonl"
    truths = otel_trace(trace, runs=2000, seed=7)
    with Store(tmp_path / "f.duckdb") as store:
        store.ingest(trace)
        assert mismatches(found(store), truths) == []


def test_protobuf_gives_the_same_classes(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tracekit.intake.otlp.decode_proto import decode_spans_proto

    spans, truths = otel_fleet(80, seed=3)
    converter = OtlpConverter()
    converter.feed_spans(decode_spans_proto(encode_spans(spans).SerializeToString()))
    findings = classify_events(converter.finish())
    by_trace = {t.trace_id: t for t in truths.values()}
    assert len(findings) == len(truths)
    events_json = [e for line in otlp_json_lines(spans) for e in otlp_to_events(json.loads(line))]
    assert classify_events(events_json) == findings
    got = Counter(f.outcome for f in findings.values())
    assert got == Counter(t.outcome for t in by_trace.values())


def test_one_code_per_exception_class(tmp_path: Path) -> None:
    """error.type is qualified in some services, not in others: one code, the qualified name kept."""
    with Store(otel_store(tmp_path, runs=150, seed=2), read_only=True) as store:
        codes = {
            c for (c,) in store.con.execute("SELECT DISTINCT origin_code FROM runs").fetchall()
        }
        typed = store.con.execute(
            "SELECT count(*) FROM invocations WHERE json_extract_string(error, '$.type')"
            " LIKE 'tracekit.simulation.otel_fleet.%'"
        ).fetchone()
    assert not any("." in c for c in codes if c)
    assert "RefundTimeout" in codes and typed and typed[0] > 0


def test_the_tree_names_the_origin_of_a_wrapped_failure(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    apps = Apps(exporter, services=("desk", "refunds"), typed=frozenset({"refunds"}))

    def refunds() -> None:
        raise TimeoutError("refunds API did not answer")

    def billing() -> None:
        try:
            apps.agent("refunds", "refunds", refunds)
        except TimeoutError as exc:
            raise RuntimeError("billing failed") from exc

    truth = apps.run("desk", "desk", lambda: apps.agent("desk", "billing", billing))
    path = tmp_path / "t.otlp.jsonl"
    path.write_text("\n".join(otlp_json_lines(exporter.get_finished_spans())) + "\n")
    text = run_cli("tree", str(path)).stdout
    assert 'error RuntimeError <- TimeoutError in refunds "refunds API did not answer"' in text
    assert (truth.origin_agent, truth.origin_depth) == ("refunds", 2)


class RateLimitError(RuntimeError):
    """What a model client raises when it is told to slow down."""


def _caught_step_app(exporter: InMemorySpanExporter) -> None:
    """A plain-OTel app: a tool raises in refunds, a model call in desk; both are caught."""
    provider = TracerProvider(resource=Resource.create({"service.name": "desk"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")

    def agent(name: str) -> Any:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        return tracer.start_as_current_span(f"invoke_agent {name}", attributes=attrs)

    def refund_api() -> None:
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_api"}
        with tracer.start_as_current_span("execute_tool refund_api", attributes=attrs):
            raise TimeoutError("refunds API did not answer in 3s")

    def chat() -> None:
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test"}
        with tracer.start_as_current_span("chat gpt-test", attributes=attrs):
            raise RateLimitError("429: slow down")

    # the error goes back to the model as the tool's result; refunds answers
    with agent("desk"), agent("refunds"), contextlib.suppress(TimeoutError):
        refund_api()
    with agent("desk"):
        with contextlib.suppress(RateLimitError):  # retried later, or answered from a cache
            chat()
        with agent("billing"):
            pass


def test_a_caught_tool_or_model_error_degrades_the_run_through_the_command(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    _caught_step_app(exporter)
    path = tmp_path / "caught.otlp.jsonl"
    path.write_text("\n".join(otlp_json_lines(exporter.get_finished_spans())) + "\n")
    db = tmp_path / "caught.duckdb"
    assert run_cli("ingest", str(path), "--db", str(db)).returncode == 0
    runs = run_cli("runs", "--db", str(db), "--format", "json").stdout.splitlines()
    found = {
        r["agent"] if r["origin_agent"] != "refunds" else "refunds": (
            r["outcome"], r["origin_agent"], r["origin_code"], r["origin_step"]
        )
        for r in map(json.loads, runs)
    }  # fmt: skip
    assert found == {
        "refunds": ("degraded", "refunds", "TimeoutError", "refund_api"),
        "desk": ("degraded", "desk", "RateLimitError", "chat gpt-test"),
    }
    with Store(db, read_only=True) as store:
        depth = store.con.execute(
            "SELECT i.depth, r.origin_step FROM runs r"
            " JOIN invocations i ON i.invocation_id = r.origin_invocation_id"
        ).fetchall()
    assert depth == [(1, "refund_api")]  # the desk's own model call: no invocation, the root
    fleet = run_cli("fleet", "--db", str(db)).stdout
    assert re.search(r"│ degraded +│ +2 │", fleet)
    tree = run_cli("tree", str(path), "--errors").stdout
    assert "refund_api (error TimeoutError)" in tree


def _classify(exporter: InMemorySpanExporter) -> tuple[str, str | None, str | None]:
    events = [
        e
        for line in otlp_json_lines(exporter.get_finished_spans())
        for e in otlp_to_events(json.loads(line))
    ]
    [finding] = classify_events(events).values()
    return finding.outcome, finding.origin_agent, finding.circle


_NAMES = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=4)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=_NAMES, wrappers=st.integers(0, 3), at=st.integers(0, 4))
def test_a_passing_through_level_never_moves_the_origin(
    path: list[str], wrappers: int, at: int
) -> None:
    def run(extra: int) -> tuple[str, str | None, str | None]:
        exporter = InMemorySpanExporter()
        apps = Apps(exporter, services=("s",))
        names = list(path)
        for n in range(extra):  # pass-through levels: call down, let the exception by
            names.insert(min(at, len(names) - 1), f"pass{n}")

        def level(i: int) -> None:
            if i == len(names):
                raise KeyError("missing")
            apps.agent("s", names[i], lambda: level(i + 1))

        apps.run("s", "root", lambda: level(0))
        return _classify(exporter)

    assert run(wrappers) == run(0)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop=st.lists(st.sampled_from(["p", "q", "r"]), min_size=1, max_size=3, unique=True))
def test_renaming_agents_renames_circles(loop: list[str]) -> None:
    def run(names: list[str]) -> tuple[str, str | None, str | None]:
        exporter = InMemorySpanExporter()
        apps = Apps(exporter, services=("s",))

        def level(i: int) -> None:
            apps.agent("s", names[i % len(names)], lambda: level(i + 1), guard=True)

        apps.run("s", "root", lambda: level(0))
        return _classify(exporter)

    rename = {"p": "zeta", "q": "alpha", "r": "mu"}
    outcome, origin, circle = run(loop)
    assert outcome == "failed:recursion" and circle is not None
    renamed = run([rename[n] for n in loop])
    expected_circle = " -> ".join(rename[n] for n in circle.split(" -> "))
    assert renamed[0] == outcome and renamed[1] == rename[origin or ""]
    # the same circle, written from its least name
    assert set(renamed[2].split(" -> ")) == set(expected_circle.split(" -> "))  # type: ignore[union-attr]
    assert renamed[2] is not None and renamed[2].startswith(min(rename[n] for n in loop))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop=st.lists(st.sampled_from(["p", "q", "r"]), min_size=1, max_size=3, unique=True))
def test_a_guard_in_the_caller_finds_the_circle_a_guard_in_the_callee_finds(
    loop: list[str],
) -> None:
    def run(in_caller: bool) -> tuple[tuple[str, str | None, str | None], Truth]:
        exporter = InMemorySpanExporter()
        apps = Apps(exporter, services=("s",), guard_in_caller=in_caller)

        def level(i: int) -> None:
            apps.agent("s", loop[i % len(loop)], lambda: level(i + 1), guard=True)

        truth = apps.run("s", "root", lambda: level(0))
        return _classify(exporter), truth

    (outcome, origin, circle), truth = run(in_caller=True)
    assert (outcome, origin, circle) == (truth.outcome, truth.origin_agent, truth.circle)
    assert outcome == "failed:recursion" and circle == run(in_caller=False)[0][2]
    assert origin == loop[-1]  # the caller whose guard refused: the refused agent never ran


def test_a_guard_in_the_caller_through_the_command(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    apps = Apps(exporter, services=("s",), guard_in_caller=True)
    names = ["planner", "critic"]

    def level(i: int) -> None:
        apps.agent("s", names[i % 2], lambda: level(i + 1), guard=True)

    apps.run("s", "desk", lambda: level(0))
    path = tmp_path / "guard.otlp.jsonl"
    path.write_text("\n".join(otlp_json_lines(exporter.get_finished_spans())) + "\n")
    db = tmp_path / "guard.duckdb"
    assert run_cli("ingest", str(path), "--db", str(db)).returncode == 0
    [run] = map(
        json.loads, run_cli("runs", "--db", str(db), "--format", "json").stdout.split("\n")[:1]
    )
    assert (run["outcome"], run["circle"], run["origin_agent"]) == (
        "failed:recursion", "critic -> planner -> critic", "critic",
    )  # fmt: skip


def test_a_loop_that_finished_ok_is_not_a_failure() -> None:
    exporter = InMemorySpanExporter()
    apps = Apps(exporter, services=("s",))
    laps = iter(range(3))
    apps.run(
        "s",
        "planner",
        lambda: apps.agent("s", "critic", lambda: apps.agent("s", "planner", lambda: next(laps))),
    )
    assert _classify(exporter) == ("ok", None, None)


def test_a_guard_refusal_that_was_caught_leaves_the_run_degraded() -> None:
    exporter = InMemorySpanExporter()
    apps = Apps(exporter, services=("s",))

    def critic() -> None:
        try:
            apps.agent("s", "planner", lambda: None, guard=True)
        except LoopDetected as exc:
            apps.handled(exc)

    truth = apps.run("s", "planner", lambda: apps.agent("s", "critic", critic))
    assert truth.outcome == "degraded"
    # the refusal is the origin; the circle is a failed run's (the loop did not end it)
    assert _classify(exporter) == ("degraded", "planner", None)


def test_every_scenario_runs() -> None:
    assert len(SCENARIOS) >= 10
    spans, truths = otel_fleet(40, seed=4)
    assert spans and all(expected(t)[0] for t in truths.values())
