"""The optional features and the extra that installs each: declared once, said in one line.

tracekit installs under the distribution name ``tracekit-agents`` (``tracekit``
on PyPI is another project); ``import tracekit`` and the ``tracekit`` command
are unchanged. A feature whose extra is missing says so with the ``pip
install`` to run, never with a bare ``ModuleNotFoundError``.

Example:
    >>> install_line("serve")
    "pip install 'tracekit-agents[serve]'"
    >>> [e.extra for e in EXTRAS][:2]
    ['serve', 'spark']
"""

from __future__ import annotations

import importlib.util
from typing import Final, NamedTuple

__all__ = ["DISTRIBUTION", "EXTRAS", "Extra", "install_line", "installed", "missing_extras"]

#: The name tracekit is installed by (``pip install tracekit-agents``).
DISTRIBUTION: Final = "tracekit-agents"


class Extra(NamedTuple):
    """An optional feature: the module it needs, the extra that brings it, what it is for."""

    module: str
    extra: str
    feature: str


EXTRAS: Final = (
    Extra("grpc", "serve", "OTLP/gRPC in tracekit serve (--grpc-port)"),
    Extra("pyspark", "spark", "the lake on Spark (tracekit fleet --lake DIR --engine spark)"),
    Extra("lovia", "lovia", "lovia's runs as trees (examples/lovia_triage.py)"),
    Extra("agents", "openai-agents", "the OpenAI Agents SDK integration"),
    Extra("jupyterlab", "notebook", "JupyterLab for the notebooks (make notebook)"),
)


def install_line(extra: str) -> str:
    """The command that installs an extra."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed(module: str) -> bool:
    """Whether a top-level module can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # blocked in sys.modules (set to None)
        return False


def missing_extras() -> list[Extra]:
    """The optional features whose module is not installed here."""
    return [e for e in EXTRAS if not installed(e.module)]


if __name__ == "__main__":  # `make demo`: one line for each feature not installed
    for item in missing_extras():
        print(f"not installed: {item.feature}: {install_line(item.extra)}")
