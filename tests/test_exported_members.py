"""The public API is deliberate: sorted, complete, and nothing private leaks."""

import tracekit


def test_all_is_sorted() -> None:
    assert tracekit.__all__ == sorted(tracekit.__all__)


def test_all_names_exist_and_are_public() -> None:
    for name in tracekit.__all__:
        assert hasattr(tracekit, name), name
        assert not name.startswith("_") or name == "__version__", name


def test_every_public_attribute_is_exported() -> None:
    modules = {"cli", "describe", "errors", "events", "readers", "tree"}
    public = {
        name
        for name in vars(tracekit)
        if not name.startswith("_") and name not in modules and name != "annotations"
    }
    public -= {m for m in public if type(getattr(tracekit, m)).__name__ == "module"}
    lazy = set(tracekit._LAZY)  # loaded on first use, so not in vars() until then
    assert public - lazy == set(tracekit.__all__) - {"__version__"} - lazy
    assert lazy <= set(tracekit.__all__)
