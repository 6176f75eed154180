#!/usr/bin/env bash
# The Spark tests start a local Spark Connect server (pyspark's jars): it needs
# a Java 17 runtime. Install Debian's when missing.
set -euo pipefail
version() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null 2>&1 || [ "$(version)" -lt 17 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "Java 17 missing and cannot be installed here; the Spark tests will fail" >&2
  fi
fi
