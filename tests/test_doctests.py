"""Every ``>>>`` example in the package runs and shows what it prints.

Each module whose source holds an example is found by walking ``tracekit/``
and run with :func:`doctest.testmod` in a fresh working directory: a copy of
``sample_traces/`` and ``fleet.duckdb``, a small simulated fleet whose runs
started in the last two hours (so ``since="24h"`` windows hold them).
"""

from __future__ import annotations

import doctest
import importlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _tree_helpers import ROOT, SAMPLES

from tracekit.simulation import simulate
from tracekit.store import Store

PACKAGE = ROOT / "tracekit"
FLEET_RUNS = 40
FLEET_SEED = 7

#: Modules that had examples when this test was written: discovery must find at least these.
KNOWN = {
    "tracekit._util.gcpause",
    "tracekit._util.lazy",
    "tracekit._util.text",
    "tracekit.cli.fleet",
    "tracekit.cli.quick",
    "tracekit.dashboards.fleet_figures",
    "tracekit.dashboards.graph",
    "tracekit.dashboards.page",
    "tracekit.dashboards.run_figures",
    "tracekit.events",
    "tracekit.failures.facts",
    "tracekit.failures.rules",
    "tracekit.fleet.report",
    "tracekit.fleet.tables",
    "tracekit.fleet.text",
    "tracekit.notebook",
    "tracekit.intake",
    "tracekit.intake.jsonl",
    "tracekit.intake.otlp.convert",
    "tracekit.intake.otlp.decode_json",
    "tracekit.sdk",
    "tracekit.sdk.context",
    "tracekit.sdk.errorinfo",
    "tracekit.sdk.guards",
    "tracekit.sdk.sinks",
    "tracekit.sdk.tracer",
    "tracekit.simulation.simulator",
    "tracekit.store.classify",
    "tracekit.store.query",
    "tracekit.store.sink",
    "tracekit.store.store",
    "tracekit.tree",
    "tracekit.tree.build",
    "tracekit.tree.forest",
    "tracekit.tree.frame",
    "tracekit.tree.html",
    "tracekit.tree.model",
    "tracekit.tree.text",
}


def modules_with_examples(package: Path = PACKAGE) -> list[str]:
    """The dotted names of the modules under ``package`` whose source holds ``>>>``."""
    names = []
    for path in sorted(package.rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


MODULES = modules_with_examples()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory to copy: the sample traces and a small fleet in ``fleet.duckdb``."""
    base = tmp_path_factory.mktemp("doctest-template")
    shutil.copytree(SAMPLES, base / "sample_traces")
    fleet = base / "fleet.jsonl"
    start_ms = (time.time() - 2 * 3600) * 1000  # two hours ago, over one hour
    simulate(fleet, runs=FLEET_RUNS, seed=FLEET_SEED, start=start_ms, window_ms=3_600_000)
    store = Store(base / "fleet.duckdb")
    try:
        store.ingest(fleet)
    finally:
        store.close()
    fleet.unlink()
    return base


@pytest.fixture
def workdir(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh copy of the template as the working directory of one module's examples."""
    work = tmp_path / "work"
    shutil.copytree(template, work)
    monkeypatch.chdir(work)
    yield work


def test_discovery_finds_the_known_modules() -> None:
    assert set(MODULES) >= KNOWN, sorted(KNOWN - set(MODULES))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, workdir: Path) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
