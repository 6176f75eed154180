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
