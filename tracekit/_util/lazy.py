"""Public names that a package loads on first use (PEP 562 module ``__getattr__``).

``import tracekit`` runs on every CLI call, so each package imports a heavy
module (the SDK's OpenTelemetry, the ingest's pyarrow, the rules' event
model) only when one of its names is first read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each name of ``homes`` from its module.

    The name is then kept on the package, so the next lookup is a plain attribute.

    Example:
        >>> __getattr__ = lazy_names("tracekit.store", {"StoreSink": "tracekit.store.sink"})
        >>> __getattr__("StoreSink").__name__
        'StoreSink'
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
