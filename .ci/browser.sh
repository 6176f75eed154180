#!/usr/bin/env bash
# The dashboard test drives a real headless Chromium; install Debian's when missing.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium missing and cannot be installed here; the browser test will fail" >&2
  fi
fi
