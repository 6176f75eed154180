"""tracekit's private provider: spans with the SDK's ids, flags and trace state, nothing recorded."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from tracekit.events import Enter, RunStart
from tracekit.sdk import AgentTracer, MemorySink
from tracekit.sdk.private_spans import PrivateTracer

_RANDOM = getattr(TraceFlags, "RANDOM_TRACE_ID", 0)

_parents = st.builds(
    SpanContext,
    trace_id=st.integers(1, 2**128 - 1),
    span_id=st.integers(1, 2**64 - 1),
    is_remote=st.booleans(),
    trace_flags=st.sampled_from([0, 1, _RANDOM, 1 | _RANDOM]).map(TraceFlags),
    trace_state=st.lists(
        st.tuples(st.sampled_from(["vendor", "acme@tk", "x"]), st.sampled_from(["1", "on", "b-2"])),
        max_size=3,
        unique_by=lambda kv: kv[0],
    ).map(TraceState),
)


@given(
    pool=st.lists(st.none() | _parents, min_size=1, max_size=4), picks=st.lists(st.integers(0, 3))
)
def test_a_private_span_has_the_sdk_default_samplers_context(
    pool: list[SpanContext | None], picks: list[int]
) -> None:
    """Same trace, flags and trace state as an SDK span (parent-based, always on) would get.

    One tracer for a sequence of parents, repeated and alternating, as a
    run's invocations and their children come.
    """
    sdk_tracer, ours_tracer = TracerProvider().get_tracer("t"), PrivateTracer()
    for parent in [pool[i % len(pool)] for i in [0, *picks]]:
        context = None if parent is None else trace.set_span_in_context(NonRecordingSpan(parent))
        sdk = sdk_tracer.start_span("s", context).get_span_context()
        ours = ours_tracer.start_span("s", context).get_span_context()
        assert ours.is_valid and not ours.is_remote
        assert (ours.trace_flags, ours.trace_state) == (sdk.trace_flags, sdk.trace_state)
        if parent is None:
            assert ours.trace_id != sdk.trace_id  # a new trace: a fresh random id
        else:
            assert ours.trace_id == sdk.trace_id == parent.trace_id
        assert ours.span_id not in (sdk.span_id, 0)


def test_every_root_is_a_new_trace() -> None:
    tracer = PrivateTracer()
    roots = {tracer.start_span("r").get_span_context().trace_id for _ in range(50)}
    assert len(roots) == 50


def test_the_users_spans_inside_an_agent_join_its_trace() -> None:
    """A span made inside an invocation, on the user's provider, is the invocation's child."""
    exporter = InMemorySpanExporter()
    mine = TracerProvider()
    mine.add_span_processor(SimpleSpanProcessor(exporter))
    sink = MemorySink()
    tk = AgentTracer(sink)  # tracekit's private provider
    with tk.run("desk"), tk.delegate("sql", node="ask"):
        invocation = trace.get_current_span().get_span_context()
        mine.get_tracer("mine").start_span("llm call").end()
    (span,) = exporter.get_finished_spans()
    assert span.parent is not None and span.parent.span_id == invocation.span_id
    assert span.context.trace_flags.sampled
    run_start, enter = sink.events[:2]
    assert isinstance(run_start, RunStart) and isinstance(enter, Enter)
    assert run_start.traceId == enter.traceId == format(span.context.trace_id, "032x")


def test_an_unsampled_caller_makes_unsampled_agents_that_still_write_records() -> None:
    caller = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(0))
    sink = MemorySink()
    tk = AgentTracer(sink)
    with trace.use_span(NonRecordingSpan(caller)), tk.run("desk"):
        assert not trace.get_current_span().get_span_context().trace_flags.sampled
    assert [e.traceId for e in sink.events] == [format(0xABC, "032x")] * 2


_DISABLED = """
from tracekit.sdk import AgentTracer, MemorySink
sink = MemorySink()
with AgentTracer(sink).run("desk"):
    pass
print([e.traceId for e in sink.events])
"""


def test_a_disabled_sdk_still_gets_records_without_a_trace() -> None:
    """OTEL_SDK_DISABLED: the no-op tracer stays; records have no traceId."""
    env = {"OTEL_SDK_DISABLED": "true", "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", _DISABLED], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[None, None]"
