#!/usr/bin/env bash
# `make demo`: the main job on the bundled data.
set -euo pipefail
cd "$(dirname "$0")/.."
TK=.venv/bin/tracekit

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
SDK_OUT="$(mktemp -d)"
echo "== examples/escalation_desk.py (instrumented with tracekit.AgentTracer)"
.venv/bin/python examples/escalation_desk.py --out "$SDK_OUT/escalation_desk.jsonl" \
  "I was charged twice for order 10248"
"$TK" tree "$SDK_OUT/escalation_desk.jsonl"
echo
echo "== examples/recursion_circle.py"
.venv/bin/python examples/recursion_circle.py --out "$SDK_OUT/recursion_circle.jsonl"
"$TK" tree "$SDK_OUT/recursion_circle.jsonl"
rm -rf "$SDK_OUT"

# --- fleet health: simulate a day of runs, ingest, classify, report, dashboard ---
FLEET="$(mktemp -d)"
echo
echo "### Fleet health"
echo "\$ tracekit simulate --runs 3000 --seed 7 --start <24h ago> -o fleet.jsonl"
START="$(date -u -d '24 hours ago' +%Y-%m-%dT%H:%M:%SZ)"
"$TK" simulate --runs 3000 --seed 7 --start "$START" --window 24h -o "$FLEET/fleet.jsonl"
echo "\$ tracekit ingest fleet.jsonl --db fleet.duckdb   # classifies every new run"
"$TK" ingest "$FLEET/fleet.jsonl" --db "$FLEET/fleet.duckdb"
echo
echo "\$ tracekit fleet --db fleet.duckdb --since 12h   # against the 12 hours before"
"$TK" fleet --db "$FLEET/fleet.duckdb" --since 12h --color never
echo
mkdir -p dashboards
"$TK" dashboard --db "$FLEET/fleet.duckdb" --since 24h --out dashboards/fleet-health.html
echo "Open dashboards/fleet-health.html in a browser (it works offline: plotly.js is inside)."
rm -rf "$FLEET"
