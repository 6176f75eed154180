"""cli/tables.py prints plain cells itself: byte for byte what rich prints for them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.cli import tables

# ASCII with the characters that matter: spaces (padding, stripping), colons and
# digits (times; rich's :emoji: codes), and letters (emoji names such as :ok:).
_TEXT = st.text(alphabet="ab ok01:59-_.x", min_size=1, max_size=14)


def _rich(names: list[str], rows: list[list[str]], sizes: list[int]) -> str:
    """The same table printed by rich, as the module did before it printed plain cells."""
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column, size in zip(names, sizes, strict=True):
        table.add_column(column, no_wrap=True, overflow="ellipsis", width=size)
    for row in rows:
        table.add_row(*row)
    import io

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=sum(sizes) + 2 * (len(sizes) - 1),
        no_color=True,
        highlight=False,
        markup=False,
    )
    console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").splitlines())


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_plain_cells_print_as_rich_prints_them(data: st.DataObject) -> None:
    width = data.draw(st.integers(1, 4))
    sizes = data.draw(st.lists(st.integers(1, 12), min_size=width, max_size=width))
    names = data.draw(st.lists(_TEXT, min_size=width, max_size=width))
    rows = data.draw(st.lists(st.lists(_TEXT, min_size=width, max_size=width), max_size=4))
    assert tables._print_table(names, rows, sizes) == _rich(names, rows, sizes)


def test_cells_rich_would_change_are_printed_by_rich() -> None:
    # an emoji code, a wide character, a combining one: rich's own measure and text
    rows = [[":ok:", "界界界界", "e\u0301e\u0301e\u0301e\u0301"]]
    assert tables._print_table(["a", "b", "c"], rows, [4, 5, 3]) == _rich(
        ["a", "b", "c"], rows, [4, 5, 3]
    )
    assert not tables._plain(":ok:") and tables._plain("01:59:07")


def test_a_find_table_does_not_import_rich(tmp_path: Path) -> None:
    from tracekit import Store

    sample = Path(__file__).parent.parent / "sample_traces" / "child_failure.jsonl"
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.ingest(sample)
    script = str(Path(sys.executable).parent / "tracekit")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", script, "find", "*", "--db", str(db), "--runs"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "front_desk" in done.stdout
    imported = {line.rpartition("|")[2].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "duckdb" in imported and "tracekit" in imported  # the list is real
    assert imported & {"typer", "rich", "pyarrow", "numpy", "pandas"} == set()
