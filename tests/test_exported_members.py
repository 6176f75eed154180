"""The public API is deliberate: sorted, complete, one table, and nothing private leaks."""

import ast
import importlib
from pathlib import Path

import tracekit


def test_all_is_sorted() -> None:
    assert tracekit.__all__ == sorted(tracekit.__all__)


def test_all_names_exist_and_are_public() -> None:
    for name in tracekit.__all__:
        assert hasattr(tracekit, name), name
        assert not name.startswith("_") or name == "__version__", name


def test_every_public_attribute_is_exported() -> None:
    public = {
        name
        for name in vars(tracekit)
        if not name.startswith("_")
        and name != "annotations"
        and type(getattr(tracekit, name)).__name__ != "module"
    }
    assert public <= set(tracekit.__all__)
    assert set(tracekit._LAZY) <= set(tracekit.__all__)


def test_each_lazy_name_lives_where_the_table_says() -> None:
    for name, home in tracekit._LAZY.items():
        assert hasattr(importlib.import_module(home), name), f"{home} has no {name}"


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(Path(tracekit.__file__).read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                assert isinstance(child, ast.ImportFrom) and child.module
                seen.update({alias.name: child.module for alias in child.names})
    return seen


def test_type_checkers_see_every_lazy_name_from_its_home() -> None:
    """The TYPE_CHECKING block and the lazy table name the same names, from the same modules."""
    assert _type_checking_imports() == tracekit._LAZY


def test_the_version_has_one_source() -> None:
    from tracekit._version import __version__

    assert tracekit.__version__ == __version__
    pyproject = (Path(tracekit.__file__).parent.parent / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'path = "tracekit/_version.py"' in pyproject


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: without py.typed, a user's mypy sees every tracekit name as Any."""
    assert (Path(tracekit.__file__).parent / "py.typed").exists()
