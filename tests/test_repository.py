"""The checkout itself: what a newcomer reads must not depend on the machine it was made on."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A home, a checkout under /work, or a pyenv Python: the places a recorder's disk leaks from.
MACHINE_PATH = re.compile(r"(?<![\w.<])/(?:work|root|home|Users)/[\w.-]+")


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in out.split("\0") if name]


def test_no_tracked_file_names_a_path_of_the_machine_it_was_made_on() -> None:
    found = []
    for path in tracked_files():
        if path.suffix in {".png", ".gz", ".duckdb", ".parquet"} or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        found += [f"{path.relative_to(ROOT)}: {m.group()}" for m in MACHINE_PATH.finditer(text)]
    assert not found, found[:20]


def test_benchmarks_open_with_the_headline_table() -> None:
    lines = (ROOT / "BENCHMARKS.md").read_text().splitlines()
    table = [line for line in lines if line.startswith("| ")]
    assert table[0].startswith("| what | baseline | figure | aim | command |")
    commands = [row.rsplit("|", 2)[-2] for row in table[2:]]
    assert commands and all("bench/" in c for c in commands), commands
    for script in {re.search(r"bench/\w+\.py", c).group() for c in commands}:  # type: ignore[union-attr]
        assert (ROOT / script).is_file(), script
