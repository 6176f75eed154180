#!/usr/bin/env bash
# `make demo`: the main job on the bundled data.
set -euo pipefail
cd "$(dirname "$0")/.."
TK=.venv/bin/tracekit
for f in sample_traces/*.jsonl; do
  echo "== $f"
  "$TK" tree "$f" || true
  echo
done

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
