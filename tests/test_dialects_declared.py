"""A framework's shape is declared once, in ``tracekit/intake/otlp/shapes/``.

The rules that read spans name no framework and no instrumentation: every
built-in declaration loads, the one user's format reads them, and no
framework's name or attribute prefix appears in ``tracekit/intake`` outside
``shapes/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracekit.errors import DialectError
from tracekit.intake.otlp.dialect import find_dialects, load_dialect, parse_dialect
from tracekit.intake.otlp.dialects import builtin, tables

ROOT = Path(__file__).parent.parent / "tracekit"
SHAPES = ROOT / "intake" / "otlp" / "shapes"
#: Framework and instrumentation names, and the attribute prefixes only they write.
KNOWN = (
    "langgraph", "langchain", "llama_index", "llamaindex", "llama-index", "smolagents", "crewai",
    "agno", "autogen", "openai agents", "openai_agents", "openai-agents", "pydantic", "strands",
    "google adk", r"\badk\b", "openinference", "traceloop", "openllmetry", "langfuse", "mlflow",
    "agent framework", "agent_framework", "lovia", "dspy", "semantic kernel",
)  # fmt: skip
_PATTERN = re.compile("|".join(KNOWN), re.IGNORECASE)


def test_no_framework_is_named_in_the_intake_outside_shapes() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for path in sorted((ROOT / "intake").rglob("*.py"))
        if SHAPES not in path.parents
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _PATTERN.search(line)
    ]
    assert found == []


def test_the_names_test_would_see_a_framework() -> None:
    assert _PATTERN.search('if attrs.get("traceloop.span.kind") == "agent":')
    assert _PATTERN.search("# LangGraph's ParentCommand")
    assert not _PATTERN.search("a graph framework's step order")


def test_every_built_in_declaration_loads_and_is_in_force() -> None:
    files = sorted(SHAPES.glob("*.toml"))
    assert [load_dialect(f).name for f in files] == [d.name for d in builtin()]
    assert {"ParentCommand", "GraphBubbleUp"} <= tables().control_flow
    assert "GraphRecursionError" in tables().limits


def test_the_declaration_format_holds_the_limits_and_the_team_flag() -> None:
    text = """
[dialect]
name = "team"
[errors]
limits = ["MaxTurnsExceeded"]
turn_error_ends_run = true
"""
    dialect = parse_dialect(text, "team.toml")
    assert dialect.errors.limits == ("MaxTurnsExceeded",)
    assert dialect.errors.turn_error_ends_run is True


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[dialect]\nname = 3\n", 2, "dialect.name"),
        ("[agnets]\nnames = []\n", 1, "agnets: unknown section"),
        ("[tools]\nwhere = { k = 1 }\n", 2, "tools.where.k: expected a list of strings"),
        ("[errors]\nturn_error_ends_run = 'yes'\n", 2, "expected true or false"),
        ("[edges.goto]\nnames = ['goto *']\nnmae_from = []\n", 3, "edges.goto.nmae_from"),
    ],
)
def test_a_mistake_names_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(DialectError) as caught:
        parse_dialect(text, "d.toml")
    assert (caught.value.line, caught.value.path) == (line, "d.toml")
    assert words in str(caught.value)


def test_no_file_in_the_working_directory_is_no_dialect(tmp_path: Path) -> None:
    assert find_dialects((), tmp_path) == ()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_dialects((), tmp_path) == ()
    (tmp_path / "pyproject.toml").write_text('[tool.tracekit]\ndialect = "mine.toml"\n')
    (tmp_path / "mine.toml").write_text('[dialect]\nname = "mine"\n')
    assert [d.name for d in find_dialects((), tmp_path)] == ["mine"]
    with pytest.raises(DialectError):
        find_dialects((str(tmp_path / "missing.toml"),), tmp_path)
