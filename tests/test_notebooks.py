"""The shipped notebooks run top to bottom, and are committed without outputs."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
TIMEOUT_S = 120  # for each cell; the whole notebook takes a few seconds


def test_the_two_notebooks_are_there() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert {"investigate-a-run.ipynb", "fleet-health.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a cell keeps its outputs"
            assert cell.execution_count is None, f"{path.name}: a cell keeps its count"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kernels write their runtime files under a fresh dir, so two test workers never collide.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("TRACEKIT_DB", str(tmp_path / "never-used.duckdb"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=TIMEOUT_S,
        kernel_name="python3",
        # Started far from the repository: a notebook must not look for its data by cwd.
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    errors = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []
    shown = {
        kind
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        for kind in output.get("data", {})
    }
    assert "text/html" in shown  # the inline trees (and tables) rendered
    figures = [
        output["data"]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "application/vnd.plotly.v1+json" in output.get("data", {})
    ]
    assert figures, "no plotly figure shown"
    # Each figure also carries HTML, for VS Code and exported notebooks.
    assert all("text/html" in data for data in figures)
    assert not os.path.exists(tmp_path / "never-used.duckdb")
