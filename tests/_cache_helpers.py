"""Stores built once per test process, copied to each test that asks: it may change its copy."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path

_BUILT: dict[Hashable, Path] = {}


def built_once(key: Hashable, build: Callable[[Path], Path], dest: Path) -> Path:
    """A copy at ``dest`` of the file ``build(folder)`` made the first time ``key`` was asked for.

    ``build`` must make the same file whatever the folder (a store from fixed
    inputs, closed): the copy is then what a new build would have made.
    """
    if key not in _BUILT:
        folder = Path(tempfile.mkdtemp(prefix="tracekit-tests-"))
        atexit.register(shutil.rmtree, folder, True)
        _BUILT[key] = build(folder)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_BUILT[key], dest)
    return dest
