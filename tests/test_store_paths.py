"""The ``closure`` table: every ancestor of every invocation, kept by each ingest and backfilled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._find_oracle import Run, children, simulated_fleet
from tracekit import Store
from tracekit.simulation.model import Inv
from tracekit.store.schema import MIGRATIONS

Row = tuple[str, str, str, int, bool]


def truth_closure(runs: list[Run]) -> set[Row]:
    """(root, ancestor, descendant, distance, all handoffs) from the simulator's trees."""
    rows: set[Row] = set()
    for run in runs:
        stack: list[tuple[Inv, list[tuple[Inv, bool]]]] = [(run.root, [])]
        while stack:
            node, above = stack.pop()  # above: (ancestor, every edge down from it a handoff)
            for distance, (ancestor, handoffs) in enumerate(reversed(above), start=1):
                rows.add((run.root.id, ancestor.id, node.id, distance, handoffs))
            for child in children(node):
                hand = child.kind == "handoff"
                down = [(a, h and hand) for a, h in above] + [(node, hand)]
                stack.append((child, down))
    return rows


def closure(store: Store) -> set[Row]:
    rows = store.con.execute(
        "SELECT root_run_id, ancestor, descendant, distance, handoffs FROM closure"
    ).fetchall()
    assert len(rows) == len(set(rows)), "a pair is stored twice"
    return set(rows)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Run]]:
    base = tmp_path_factory.mktemp("paths")
    return base / "fleet.jsonl", simulated_fleet(base / "fleet.jsonl", 150, 3)


def test_one_ingest_makes_the_closure_of_the_ground_truth(
    fleet: tuple[Path, list[Run]], tmp_path: Path
) -> None:
    path, runs = fleet
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(path)
        assert closure(store) == truth_closure(runs)


def split(path: Path, runs: list[Run], tmp_path: Path) -> tuple[Path, Path]:
    """The fleet's records in two files: runs and their first level, then everything deeper."""
    depth = {inv.id: inv.depth for run in runs for inv in run.root.walk()}
    top, deep = [], []
    for text in path.read_text().splitlines(keepends=True):
        record = json.loads(text)
        (top if depth.get(record.get("runId"), 0) <= 1 else deep).append(text)
    assert top and deep
    (tmp_path / "top.jsonl").write_text("".join(top))
    (tmp_path / "deep.jsonl").write_text("".join(deep))
    return tmp_path / "top.jsonl", tmp_path / "deep.jsonl"


@pytest.mark.parametrize("order", ["subtrees later", "parents later"])
def test_later_ingests_keep_the_closure(
    fleet: tuple[Path, list[Run]], tmp_path: Path, order: str
) -> None:
    path, runs = fleet
    top, deep = split(path, runs, tmp_path)
    first, second = (top, deep) if order == "subtrees later" else (deep, top)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(first)
        if order == "subtrees later":
            assert closure(store) < truth_closure(runs)
        # (else the orphaned subtrees hang from their parents' run ids, as roots, until then)
        store.ingest(second)
        assert closure(store) == truth_closure(runs)
        store.ingest(path)  # all duplicates: nothing changes
        assert closure(store) == truth_closure(runs)


def test_the_migration_backfills_a_store_made_before_it(
    fleet: tuple[Path, list[Run]], tmp_path: Path
) -> None:
    path, runs = fleet
    (migration,) = [m for m in MIGRATIONS if "CREATE TABLE IF NOT EXISTS closure" in m]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(path)
        store.con.execute("DROP TABLE closure")  # as a store from before the migration
        store.con.execute(migration)
        assert closure(store) == truth_closure(runs)


def test_an_unrooted_cycle_is_not_walked(tmp_path: Path) -> None:
    """Two runs that name each other as parent: never rooted, so not in the closure."""
    lines = [
        {
            "type": "enter",
            "ts": 1,
            "invocationId": "a",
            "runId": "ra",
            "parentRunId": "rb",
            "agent": "x",
        },
        {
            "type": "enter",
            "ts": 2,
            "invocationId": "b",
            "runId": "rb",
            "parentRunId": "ra",
            "agent": "y",
        },
    ]
    trace = tmp_path / "cycle.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(trace)
        assert closure(store) == set()
        assert store.find("x >> y").total_paths == 0
