"""How ``pytest -n N`` shares the suite between its workers (``--dist loadgroup``).

Three kinds of work unit, read from the test files themselves:

- an ``xdist_group`` (a module's ``pytestmark``): one worker runs all of it
  (the Spark tests, and so one local Spark server);
- a module with a module- or session-scoped fixture: one worker runs the whole
  module, so the fixture (a store, a fleet, a browser's page) is built once;
- any other test: a unit of its own, handed to whichever worker is free.

The big units go first and the single tests fill in after them, so that the
run does not end with one worker on a long module while the other is idle.
xdist's own ``loadgroup`` reads the groups from node ids, which pytest 9 no
longer lets it change (pytest-xdist issue 1386): this scheduler reads the files.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

_GROUP = re.compile(r"""pytest\.mark\.xdist_group\(\s*(?:name\s*=\s*)?["']([^"']+)["']""")
_SHARED_FIXTURE = re.compile(r"""fixture\([^)]*scope\s*=\s*["'](?:module|package|session)["']""")


@cache
def _unit_of_file(path: Path) -> str | None:
    """The unit every test of the file belongs to, or None (each test its own unit)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    group = _GROUP.search(text)
    if group:
        return "group:" + group.group(1)
    return "module:" + path.as_posix() if _SHARED_FIXTURE.search(text) else None


def _make_scheduler_class() -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class FixtureScopeScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """Groups and modules with shared fixtures as whole units, biggest first."""

        def _split_scope(self, nodeid: str) -> str:
            unit = _unit_of_file(Path(self.config.rootpath, nodeid.split("::", 1)[0]))
            return unit or nodeid

        def schedule(self) -> None:
            if self.collection is None and self._check_nodes_have_same_collection():
                self._queue_biggest_first()
            super().schedule()

        def _queue_biggest_first(self) -> None:
            units: dict[str, dict[str, bool]] = {}
            for nodeid in next(iter(self.registered_collections.values())):
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            ranked = sorted(
                units.items(), key=lambda kv: (not kv[0].startswith("group:"), -len(kv[1]))
            )
            # The base class fills the queue again in collection order: keys already
            # in an OrderedDict keep their place, so this order stands.
            self.workqueue = OrderedDict(ranked)
            self.config.option.loadscopereorder = False

    return FixtureScopeScheduling


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: the units above; any other ``--dist`` is xdist's own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return _make_scheduler_class()(config, log)
