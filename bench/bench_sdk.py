"""Cost of one instrumented agent invocation against a bare OpenTelemetry span.

Both sides run in the same process, interleaved, several repetitions each;
the figures are medians of the per-repetition mean cost of one call.

* baseline: ``tracer.start_as_current_span`` on an SDK ``TracerProvider`` whose
  only processor is a ``SimpleSpanProcessor`` around a no-op exporter, inside
  an open parent span (as each invocation is inside its run);
* tracekit: ``AgentTracer.invoke`` inside an open run, writing its ``enter``
  and ``exit`` to a ``JsonlSink`` as made by default (the headline: on
  tracekit's private provider, whose spans nobody reads, so they record
  nothing); also with ``batch=1`` (one ``os.write`` per record), ``batch=64``,
  with recording SDK spans (a provider given, with no processor and no
  transfer span: what the private provider's spans would cost as SDK spans),
  with a sink that only counts (no I/O at all), and on a provider shared with
  a no-op exporter (where a call with a node is also the caller's
  ``execute_tool`` transfer span, GenAI conventions).

Each timed tracekit loop ends with ``tracer.flush()``: every record of the
loop is written inside the time taken, so a sink that buffers pays for all
its writes.

Run: ``.venv/bin/python bench/bench_sdk.py`` (``--calls``, ``--reps`` to change
the size). ``--baseline DIR`` compares this checkout's tracekit with the one
in ``DIR`` (a checkout or ``git archive`` of an older commit): each repetition
runs this script once per side in a fresh process, alternating, with
``PYTHONPATH`` set to the side's code, measuring CPU time (the machine is
shared: wall time there is mostly the neighbours); the table gives both
sides' medians and their ratio.

When the machine is too loaded for timings, count instructions instead
(deterministic; the kernel's share of a write is not counted): ``--only SIDE``
runs one side's loop once, so the difference of two runs under callgrind is
the cost of ``calls`` invocations::

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python bench/bench_sdk.py --only jsonl --calls 1200   # and --calls 200
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
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


def _tracekit(
    calls: int, sink: Sink, provider: TracerProvider | None = None, transfer: bool | None = None
) -> Callable[[], None]:
    tk = AgentTracer(sink, tracer_provider=provider, transfer_spans=transfer)

    def loop() -> None:
        with tk.run("orchestrator"):
            for _ in range(calls):
                with tk.invoke("sql", node="delegate"):
                    pass
        tk.flush()  # the loop's records are all written inside the timed region

    return loop


def _per_call_us(loop: Callable[[], None], calls: int, clock: Callable[[], float]) -> float:
    start = clock()
    loop()
    return (clock() - start) / calls * 1e6


def _shared_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_NoopExporter()))
    return provider


BARE = "bare OTel span, no-op exporter"
JSONL = "tracekit invoke, JSONL (default sink)"


def _sides(calls: int, tmp: str) -> dict[str, Callable[[], None]]:
    return {
        BARE: _bare(calls),
        JSONL: _tracekit(calls, JsonlSink(Path(tmp) / "a.jsonl")),
        "tracekit invoke, JSONL (batch=1, a write per record)": _tracekit(
            calls, JsonlSink(Path(tmp) / "c.jsonl", batch=1)
        ),
        "tracekit invoke, JSONL (batch=64)": _tracekit(
            calls, JsonlSink(Path(tmp) / "b.jsonl", batch=64)
        ),
        "tracekit invoke, JSONL, recording SDK spans": _tracekit(
            calls, JsonlSink(Path(tmp) / "d.jsonl"), TracerProvider(), transfer=False
        ),
        "tracekit invoke, in-memory sink (no I/O)": _tracekit(calls, _CountSink()),
        "tracekit invoke, no I/O, shared provider": _tracekit(
            calls, _CountSink(), _shared_provider()
        ),
    }


#: ``--only`` names: one side, run once (for callgrind; see the module docstring).
SHORT = ("bare", "jsonl", "jsonl1", "batch64", "sdkspans", "memory", "shared")


def _measure(
    calls: int, reps: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        sides = _sides(calls, tmp)
        for loop in sides.values():  # warm up
            loop()
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(reps):
            for name, loop in sides.items():
                times[name].append(_per_call_us(loop, calls, clock))
    return times


def _only(side: str, calls: int) -> None:
    """Run one side's loop once after a short warm-up of it: a fixed amount of work."""
    with tempfile.TemporaryDirectory() as tmp:
        _sides(50, tmp)[list(_sides(1, tmp))[SHORT.index(side)]]()
        _sides(calls, tmp)[list(_sides(1, tmp))[SHORT.index(side)]]()


def _compare(baseline: Path, calls: int, reps: int) -> None:
    """Before (``baseline``) and after (this checkout), alternating fresh processes."""
    here = Path(__file__).resolve()
    code = {"before": baseline.resolve(), "after": here.parent.parent}
    got: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for _ in range(reps):
        for side, path in code.items():
            env = {**os.environ, "PYTHONPATH": str(path)}
            argv = [sys.executable, str(here), "--calls", str(calls), "--reps", "3", "--json"]
            argv.append("--cpu")
            out = subprocess.run(argv, env=env, cwd="/tmp", capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"{side} failed:\n{out.stderr}")
            for name, values in json.loads(out.stdout).items():
                got[side].setdefault(name, []).extend(values)
    # The machine is shared: a process's own bare span is the yardstick of its
    # figures, so each side is also given as a multiple of it (x bare).
    rel = {
        side: {n: [v / b for v, b in zip(vs, got[side][BARE], strict=True)] for n, vs in ts.items()}
        for side, ts in got.items()
    }
    print(f"{calls} calls x 3 repetitions x {reps} fresh processes per side, CPU time per call")
    print(f"  {'':<52} {'before':>17} {'after':>17}  after/before")
    for name in got["after"]:
        before, after = (statistics.median(got[s][name]) for s in ("before", "after"))
        rb, ra = (statistics.median(rel[s][name]) for s in ("before", "after"))
        print(
            f"  {name:<52} {before:7.2f} us {rb:4.2f}x {after:7.2f} us {ra:4.2f}x   {ra / rb:5.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--baseline", type=Path, help="an older tracekit checkout to compare")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument("--cpu", action="store_true", help="the process's CPU time, not wall")
    parser.add_argument("--only", choices=SHORT, help="run one side once, print nothing")
    args = parser.parse_args()
    if args.only is not None:
        _only(args.only, args.calls)
        return
    if args.baseline is not None:
        _compare(args.baseline, args.calls, args.reps)
        return
    times = _measure(args.calls, args.reps, time.process_time if args.cpu else time.perf_counter)
    if args.json:
        print(json.dumps(times))
        return
    base = statistics.median(times[BARE])
    print(f"{args.calls} calls x {args.reps} repetitions, median per call")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<52} {med:8.2f} us   {med / base:5.2f}x")


if __name__ == "__main__":
    main()
