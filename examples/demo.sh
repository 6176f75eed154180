#!/usr/bin/env bash
# `make demo`: the main job on the bundled data. It leaves a place to explore:
# demo/ (the traces it wrote) and demo.duckdb (a simulated day of a fleet, and the
# sample traces), both remade by each run; README.md's commands use them.
set -euo pipefail
cd "$(dirname "$0")/.."
TK=.venv/bin/tracekit
OUT=demo
mkdir -p "$OUT"

# --- tree: the sample traces, one per scenario of the seeds -------------------
# stderr is shown in line: crashed_run.jsonl has a cut last line and an
# invocation that never ended, and tracekit says so.
echo "### tracekit tree on the bundled sample traces"
for f in sample_traces/*.jsonl; do
  echo
  echo "\$ tracekit tree $f"
  "$TK" tree "$f" 2>&1 || true
done
echo
echo "\$ tracekit tree sample_traces/escalation_desk.jsonl --errors   # only the paths to a failure"
"$TK" tree sample_traces/escalation_desk.jsonl --errors
echo
echo "\$ gzip -c sample_traces/child_failure.jsonl | tracekit tree - --max-depth 0"
gzip -c sample_traces/child_failure.jsonl | "$TK" tree - --max-depth 0
echo
echo "\$ tracekit tree sample_traces/otlp/escalation_desk.otlp.jsonl   # the same run as OpenTelemetry spans"
"$TK" tree sample_traces/otlp/escalation_desk.otlp.jsonl
echo

# --- SDK: instrument Python agents, then read their tree -------------------
rm -f "$OUT/escalation_desk.jsonl" "$OUT/recursion_circle.jsonl"  # the examples append
echo "== examples/escalation_desk.py (instrumented with tracekit.AgentTracer)"
.venv/bin/python examples/escalation_desk.py --out "$OUT/escalation_desk.jsonl" \
  "I was charged twice for order 10248"
"$TK" tree "$OUT/escalation_desk.jsonl"
echo
echo "== examples/recursion_circle.py"
.venv/bin/python examples/recursion_circle.py --out "$OUT/recursion_circle.jsonl"
"$TK" tree "$OUT/recursion_circle.jsonl"

# --- fleet health: simulate a day of runs, ingest, classify, report, dashboard ---
echo
echo "### Fleet health"
echo "\$ tracekit simulate --runs 3000 --seed 7 --start <24h ago> -o demo/fleet.jsonl"
START="$(date -u -d '24 hours ago' +%Y-%m-%dT%H:%M:%SZ)"
"$TK" simulate --runs 3000 --seed 7 --start "$START" --window 24h -o "$OUT/fleet.jsonl"
rm -f demo.duckdb demo.duckdb.wal  # the demo's store is remade each time
echo "\$ tracekit ingest demo/fleet.jsonl sample_traces/*.jsonl --db demo.duckdb   # classifies every new run"
"$TK" ingest "$OUT/fleet.jsonl" sample_traces/*.jsonl --db demo.duckdb | tail -n 1
echo
echo "\$ tracekit fleet --db demo.duckdb --since 12h   # against the 12 hours before"
"$TK" fleet --db demo.duckdb --since 12h --color never
echo
"$TK" dashboard --db demo.duckdb --since 24h --out dashboards/fleet-health.html
echo "Open dashboards/fleet-health.html in a browser (it works offline: plotly.js is inside)."

# --- what is left to try ---------------------------------------------------------
MISSING="$(.venv/bin/python -m tracekit._util.extras)"  # a line for each optional feature not installed
# the simulated day's newest recursion (the seed fixes the run ids: README.md shows it too)
RUN="$("$TK" sql "SELECT run_id FROM runs WHERE outcome = 'failed:recursion'
  ORDER BY start_at DESC, run_id LIMIT 1" --db demo.duckdb --format csv | sed -n 2p)"
echo
echo "Kept: demo.duckdb (the store) and demo/ (its traces). Next, in a new shell"
echo "after 'source .venv/bin/activate', try:"
echo "  tracekit tree $RUN --db demo.duckdb    # a recursion: the tree, and why"
echo "  tracekit fleet --db demo.duckdb --since 24h       # the fleet's health"
echo "  tracekit serve --db demo.duckdb                   # live: http://127.0.0.1:4318/"
if [ -n "$MISSING" ]; then
  echo
  echo "$MISSING"
fi
