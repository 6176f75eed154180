"""The package's one-way layers, checked on the source.

The event model sits at the bottom; readers and the SDK on it; the store and
the tree on those; failure rules and fleet metrics next; dashboards, the CLI,
notebooks and the simulator on top. A module may import its own layer and
the ones below, never one above (lazy imports inside functions count too:
they are still a dependency). Only the CLI imports typer and only the
dashboards import plotly, so that a library user pays for neither.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tracekit"

#: Layer of each top-level part of the package (module or subpackage).
LAYERS = {
    "_gcpause": 0,
    "_lazy": 0,
    "_text": 0,
    "errors": 0,
    "events": 0,
    "validate": 0,
    "readers": 1,
    "sdk": 1,
    "integrations": 1,
    "steps": 2,
    "tree": 2,
    "describe": 2,
    "tree_html": 2,
    "invocations": 2,
    "store": 2,
    "failures": 3,
    "fleet": 3,
    "fleet_frames": 3,
    "fleet_queries": 3,
    "fleet_tables": 3,
    "fleet_rich": 4,
    "fleet_view": 4,
    "dashboards": 4,
    "notebook": 4,
    "simulate": 4,
    "simulation": 4,
    "cli": 4,
    "_cli_quick": 4,
}


def _modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE
    )


def _part(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module a file imports at run time, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = _type_checking_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {_part(p) for p in _modules()}
    assert parts <= set(LAYERS), f"give these a layer in LAYERS: {sorted(parts - set(LAYERS))}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    mine = LAYERS[_part(path)]
    wrong = []
    for line, module in _imports(path):
        parts = module.split(".")
        if parts[0] != "tracekit" or len(parts) == 1:  # `from tracekit import __version__`
            continue
        theirs = LAYERS.get(parts[1])
        if theirs is not None and theirs > mine:
            wrong.append(f"{path.name}:{line} imports {module} (layer {theirs} > {mine})")
    assert not wrong


@pytest.mark.parametrize(("library", "home"), [("typer", "cli"), ("plotly", "dashboards")])
def test_heavy_front_end_libraries_stay_in_their_module(library: str, home: str) -> None:
    users = {
        f"{p.relative_to(PACKAGE)}:{line}"
        for p in _modules()
        for line, module in _imports(p)
        if module.split(".")[0] == library and _part(p) != home
    }
    assert not users, f"only tracekit/{home} may import {library}"
