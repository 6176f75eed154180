#!/usr/bin/env bash
# The dashboard's delegation graph is laid out by Graphviz's dot; install Debian's when missing.
set -euo pipefail
if ! command -v dot >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
  else
    echo "Graphviz's dot missing and cannot be installed here: install graphviz (the dashboard needs it)" >&2
  fi
fi
