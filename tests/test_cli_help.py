"""Every ``--help`` page and ``--version``, read through the installed command."""

from __future__ import annotations

import re

import pytest

from tests._tree_helpers import run_cli
from tracekit import __version__

COMMANDS = ["tree", "simulate", "ingest", "runs", "rejects", "sql", "fleet", "dashboard", "diff"]

# Defaults that each page must show, as "[default: VALUE]".
DEFAULTS = {
    "simulate": ["fleet.jsonl", "1000", "24h", "0", "tracekit", "0.06"],
    "runs": ["50", "table", "10.0"],
    "rejects": ["100", "table"],
    "tree": ["text", "auto", "10.0"],
    "fleet": ["table", "auto"],
    "dashboard": ["dashboards/fleet-health.html"],
    "ingest": ["auto"],
    "diff": ["auto", "5%", "10.0"],
}


def _help(*args: str) -> str:
    result = run_cli(*args, "--help", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _flat(page: str) -> str:
    """The page without its box drawing, each run of spaces made one."""
    return re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", page))


def test_version_prints_the_package_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"tracekit {__version__}\n"


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_names_values_plainly(command: str) -> None:
    page = _help(*([command] if command else []))
    assert not re.search(r"<\w[\w |\[\],]*>", page), page  # <bool>, <str>, <int range>
    assert not re.search(r"\{\w+\}", page), page  # {file}
    assert not re.search(r"\w \.(\s|$)", page), page  # "Root runs ." (markup eaten)


@pytest.mark.parametrize("command", sorted(DEFAULTS))
def test_help_shows_every_default(command: str) -> None:
    page = _flat(_help(command))
    for value in DEFAULTS[command]:
        assert f"[default: {value}]" in page, (value, page)


def test_simulate_help_says_what_an_omitted_start_means() -> None:
    page = _flat(_help("simulate"))
    assert "the window ends now" in page
    assert "(default: when its name ends in .gz)" in page


def test_arguments_read_as_their_names_in_usage() -> None:
    assert "Usage: tracekit tree [OPTIONS] [FILE]" in _help("tree")  # --run RUN --db needs none
    assert "Usage: tracekit ingest [OPTIONS] PATHS..." in _help("ingest")
    assert "Usage: tracekit sql [OPTIONS] QUERY" in _help("sql")
    assert "Usage: tracekit diff [OPTIONS] RUN_A [RUN_B]" in _help("diff")
