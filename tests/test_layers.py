"""The package's one-way layers, checked on the source.

The event model sits at the bottom; intake (the readers) and the SDK on it; the tree (and
the simulator) on those; the failure rules on the tree; the store, which
classifies as it writes, on the rules; fleet metrics on the store; dashboards
next; the CLI and the notebook helpers on top (docs/architecture.md). A module may import its own layer and
the ones below, never one above (lazy imports inside functions count too:
they are still a dependency), and no modules import each other in a circle,
within a package or across packages. Only the CLI imports typer and only the
dashboards import plotly, so that a library user pays for neither. The store
owns the SQL on its tables: a SQL string elsewhere that names one fails.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tracekit"

#: Layer of each top-level part of the package (module or subpackage).
#: ``failures`` sits below ``store``: classification is a step of the store's
#: write path, and the rules read records and trees, never the store's API.
LAYERS = {
    "_util": 0,
    "_version": 0,
    "errors": 0,
    "events": 0,
    "validate": 0,
    "intake": 1,
    "sdk": 1,
    "tree": 2,
    "simulation": 2,
    "failures": 3,
    "store": 4,
    "fleet": 5,
    # ``lake`` reads the store (export) and runs the store's SQL on other engines;
    # ``fleet`` reports from a lake through it. Beside fleet, never importing it.
    "lake": 5,
    "dashboards": 6,
    "notebook": 7,
    "cli": 7,
    "server": 7,
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


def _imports(path: Path, *, typing: bool = False) -> Iterator[tuple[int, str]]:
    """Every module a file imports at run time (and for type checkers, with ``typing``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set() if typing else _type_checking_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:  # `from pkg import module` imports pkg.module
                yield node.lineno, f"{node.module}.{alias.name}"


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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """Module -> the tracekit modules it imports (a package counts as its __init__).

    Imports for type checkers count: two modules that name each other's types
    are one idea in two files, whichever side hides its import.
    """
    paths = [*_modules(), PACKAGE / "__init__.py"]
    names = {_module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        deps = set()
        for _, module in _imports(path, typing=True):
            while module and module not in names:  # `from pkg.mod import name`
                module = module.rpartition(".")[0]
            mine = _module_name(path)
            if module and not (mine + ".").startswith(module + "."):  # itself or a parent
                deps.add(module)
        graph[_module_name(path)] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, if there is any (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


#: Known circles: each an import left out of the check (importer, imported), and why.
#: None is left; an entry here is a debt, named with its reason until it is paid.
KNOWN_CIRCLES: dict[tuple[str, str], str] = {}


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = _graph()
    # The package's own __init__ re-exports everything lazily: it is the top.
    graph = {m: deps - {"tracekit"} for m, deps in graph.items()}
    for importer, imported in KNOWN_CIRCLES:
        graph.get(importer, set()).discard(imported)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_imports_for_type_checkers_count_in_circles(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tracekit.tree.forest import RunTree\n",
        encoding="utf-8",
    )
    assert "tracekit.tree.forest" in {m for _, m in _imports(source, typing=True)}
    assert "tracekit.tree.forest" not in {m for _, m in _imports(source)}


def test_each_known_circle_names_modules_of_the_package() -> None:
    graph = _graph()
    for importer, imported in KNOWN_CIRCLES:
        assert importer in graph and imported in graph, (importer, imported)


def test_the_circle_check_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: The modules that read a wire format (OTLP JSON, protobuf) into spans.
DECODERS = (
    "tracekit.intake.otlp.decode_json",
    "tracekit.intake.otlp.decode_json_fast",
    "tracekit.intake.otlp.decode_proto",
    "tracekit.intake.otlp.received",
)


@pytest.mark.parametrize("path", sorted((PACKAGE / "store").rglob("*.py")), ids=str)
def test_the_store_imports_no_otlp_decoder(path: Path) -> None:
    """The store takes span batches and derived rows: decoding a wire format is intake's."""
    found = [(line, m) for line, m in _imports(path) if m.startswith(DECODERS)]
    assert found == [], f"{path.name} imports a decoder: {found}"


def _store_tables() -> set[str]:
    """The tables the store's migrations create (tracekit/store/schema.py)."""
    schema = (PACKAGE / "store" / "schema.py").read_text(encoding="utf-8")
    return set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", schema))


def _sql_naming(tree: ast.Module, tables: set[str]) -> Iterator[tuple[int, str]]:
    """Each string literal (not a docstring) with a FROM/JOIN/INTO/UPDATE clause on a table.

    An f-string is read with its placeholders as ``{}``: ``FROM {source}`` names no table.
    """
    clause = re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE)\s+(?:{'|'.join(sorted(tables))})\b")
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))  # a docstring: prose and examples
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if id(node) not in skip:
            yield from ((node.lineno, m.group(0)) for m in clause.finditer(text))


#: Modules outside the store whose SQL may name a store table, and why (keep it short).
SQL_ELSEWHERE = {
    "lake/classify.py": "runs on the lake's own Parquet views, named as the store's tables",
    "lake/layout.py": "the lake's partition keys: a step's and a loop's service and day, by run",
}


def test_the_store_tables_are_found() -> None:
    assert {"runs", "invocations", "steps", "events", "loops", "ingest_log"} <= _store_tables()


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_store_runs_sql_on_its_tables(path: Path) -> None:
    """The store owns the SQL on its tables: other stages call its named reads."""
    where = str(path.relative_to(PACKAGE))
    if _part(path) == "store" or where in SQL_ELSEWHERE:
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = list(_sql_naming(tree, _store_tables()))
    assert not found, (
        f"{where} runs SQL on the store's tables (move it to tracekit/store/): {found}"
    )


def test_the_sql_check_sees_sql_strings() -> None:
    tree = ast.parse(
        '"""Reads FROM runs."""\n'
        'a = "SELECT 1 FROM runs"\n'
        'b = f"SELECT * FROM {table} JOIN invocations i USING (run_id)"\n'
        'c = "runs from the window"\n'
        'd = f"FROM {source}"\n'
    )
    assert list(_sql_naming(tree, {"runs", "invocations"})) == [
        (2, "FROM runs"),
        (3, "JOIN invocations"),
    ]


def test_each_sql_exception_names_a_module() -> None:
    assert all((PACKAGE / where).is_file() for where in SQL_ELSEWHERE)
