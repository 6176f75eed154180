"""Cost of one instrumented agent invocation against a bare OpenTelemetry span.

Both sides run in the same process, interleaved, several repetitions each;
the figures are medians of the per-repetition mean cost of one call.

* baseline: ``tracer.start_as_current_span`` on an SDK ``TracerProvider`` whose
  only processor is a ``SimpleSpanProcessor`` around a no-op exporter, inside
  an open parent span (as each invocation is inside its run);
* tracekit: ``AgentTracer.invoke`` inside an open run, writing its ``enter``
  and ``exit`` to a ``JsonlSink`` (one ``os.write`` per record, the default);
  also with ``batch=64``, and with a sink that only counts (no I/O at all).

Run: ``.venv/bin/python bench/bench_sdk.py`` (``--calls``, ``--reps`` to change
the size).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from tracekit.events import Event
from tracekit.sdk import AgentTracer, JsonlSink, Sink


class _CountSink:
    """Takes records and keeps only a count: the SDK's cost without I/O."""

    def __init__(self) -> None:
        self.count = 0

    def emit(self, event: Event) -> None:
        self.count += 1

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _NoopExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _bare(calls: int) -> Callable[[], None]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_NoopExporter()))
    tracer = provider.get_tracer("bench")

    def loop() -> None:
        # Nested in a parent span, as each tracekit invocation is in its run.
        with tracer.start_as_current_span("invoke_agent orchestrator"):
            for _ in range(calls):
                with tracer.start_as_current_span("invoke_agent sql"):
                    pass

    return loop


def _tracekit(calls: int, sink: Sink) -> Callable[[], None]:
    tk = AgentTracer(sink)

    def loop() -> None:
        with tk.run("orchestrator"):
            for _ in range(calls):
                with tk.invoke("sql", node="delegate"):
                    pass

    return loop


def _per_call_us(loop: Callable[[], None], calls: int) -> float:
    start = time.perf_counter()
    loop()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sides = {
            "bare OTel span, no-op exporter": _bare(args.calls),
            "tracekit invoke, JSONL (flush per record)": _tracekit(
                args.calls, JsonlSink(Path(tmp) / "a.jsonl")
            ),
            "tracekit invoke, JSONL (batch=64)": _tracekit(
                args.calls, JsonlSink(Path(tmp) / "b.jsonl", batch=64)
            ),
            "tracekit invoke, in-memory sink (no I/O)": _tracekit(args.calls, _CountSink()),
        }
        for loop in sides.values():  # warm up
            loop()
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.reps):
            for name, loop in sides.items():
                times[name].append(_per_call_us(loop, args.calls))
    base = statistics.median(times["bare OTel span, no-op exporter"])
    print(f"{args.calls} calls x {args.reps} repetitions, median per call")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<44} {med:8.2f} us   {med / base:5.2f}x")


if __name__ == "__main__":
    main()
