"""A quick reading of the plainest ``tracekit tree``, ``fleet`` and ``find`` command lines, before typer.

typer turns each parameter into a pydantic adapter when it parses a command
line; on this machine that took 0.15 s of every ``tracekit tree`` (pydantic
is imported for it), a sixth of the time a bare parse of a 1,000,000-event
trace takes. The usual command lines (``tree FILE`` and the tree's own
options, spelled out with valid values) are read here instead; anything else
(``--help``, ``--db``, ``--opt=value``, a bad value, an unknown option, a
second file) returns None and goes to typer, whose messages stay the only ones.

Example:
    >>> quick_tree_args(["tree", "run.jsonl", "--color", "never", "--max-depth", "2"])
    {'file': 'run.jsonl', 'run': None, 'fmt': 'text', 'color': 'never', 'max_depth': 2, 'errors': False, 'strict': False, 'fold': None}
    >>> quick_tree_args(["tree", "run.jsonl", "--max-depth", "-1"]) is None
    True
    >>> quick_fleet_args(["fleet", "--db", "f.duckdb", "--format", "json"])
    {'db': 'f.duckdb', 'since': None, 'service': None, 'agent': None, 'fmt': 'json', 'color': 'auto'}
    >>> quick_fleet_args(["fleet", "--format", "yaml"]) is None
    True
    >>> quick_find_args(["find", "a >> b", "--db", "f.duckdb", "--runs", "--limit", "5"])
    {'query': 'a >> b', 'db': 'f.duckdb', 'runs': True, 'fmt': 'table', 'limit': 5, 'wait': 10.0}
    >>> quick_find_args(["find", "a", "--limit=5"]) is None
    True
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "COLORS",
    "DEFAULT_WAIT",
    "FLEET_FORMATS",
    "TABLE_FORMATS",
    "TREE_FORMATS",
    "quick_find_args",
    "quick_fleet_args",
    "quick_tree_args",
]

#: The choices of the options that have them, as cli.py's enums list them
#: (tests/test_cli_tree.py checks that they agree).
TREE_FORMATS: Final = ("text", "json")
FLEET_FORMATS: Final = ("table", "json")
COLORS: Final = ("auto", "always", "never")
TABLE_FORMATS: Final = ("table", "json", "csv")
#: Seconds a reader that finds an ingest running waits for it, unless --wait says otherwise.
DEFAULT_WAIT: Final = 10.0

_CHOICES: Final = {"--format": ("fmt", TREE_FORMATS), "--color": ("color", COLORS)}
_FLAGS: Final = {"--errors": "errors", "--strict": "strict"}
_FOLD: Final = {"--fold": True, "--no-fold": False}


def quick_tree_args(argv: list[str]) -> dict[str, Any] | None:
    """The tree command's arguments from a plain command line, or None to ask typer."""
    if not argv or argv[0] != "tree":
        return None
    args: dict[str, Any] = {
        "file": None,
        "run": None,
        "fmt": "text",
        "color": "auto",
        "max_depth": None,
        "errors": False,
        "strict": False,
        "fold": None,
    }
    words = iter(argv[1:])
    for word in words:
        if word in _FLAGS:
            args[_FLAGS[word]] = True
        elif word in _FOLD:  # typer's --fold/--no-fold: the last one given wins
            args["fold"] = _FOLD[word]
        elif word in _CHOICES or word in ("--run", "--max-depth"):
            value = next(words, None)
            if value is None or not _plain_value(word, value):
                return None
            key = _CHOICES[word][0] if word in _CHOICES else word[2:].replace("-", "_")
            args[key] = int(value) if word == "--max-depth" else value
        elif (word == "-" or not word.startswith("-")) and args["file"] is None:
            args["file"] = word
        else:
            return None
    return args if args["file"] is not None else None


def _plain_value(option: str, value: str) -> bool:
    """Is this value one typer would take as it is? (Anything doubtful goes to typer.)"""
    if option in _CHOICES:
        return value in _CHOICES[option][1]
    if option == "--max-depth":
        return value.isascii() and value.isdigit() and len(value) < 10
    return not value.startswith("-")


_FLEET_VALUES: Final = {
    "--db": "db",
    "--since": "since",
    "--service": "service",
    "--agent": "agent",
}
_FLEET_CHOICES: Final = {"--format": ("fmt", FLEET_FORMATS), "--color": ("color", COLORS)}


def quick_fleet_args(argv: list[str]) -> dict[str, Any] | None:
    """The fleet command's arguments from a plain command line, or None to ask typer.

    Every fleet option takes a value; a value that looks like an option, a
    choice typer would refuse, or anything else goes to typer.
    """
    if not argv or argv[0] != "fleet":
        return None
    args: dict[str, Any] = dict.fromkeys(("db", "since", "service", "agent"))
    args |= {"fmt": "table", "color": "auto"}
    words = iter(argv[1:])
    for word in words:
        value = next(words, None)
        if word in _FLEET_VALUES and value is not None and not value.startswith("-"):
            args[_FLEET_VALUES[word]] = value
        elif word in _FLEET_CHOICES and value in _FLEET_CHOICES[word][1]:
            args[_FLEET_CHOICES[word][0]] = value
        else:
            return None
    return args


_FIND_FLAGS: Final = {"--runs": "runs", "--json": "json", "--csv": "csv"}


def quick_find_args(argv: list[str]) -> dict[str, Any] | None:
    """The find command's arguments from a plain command line, or None to ask typer.

    One query (not looking like an option), the flags, and options whose
    values typer would take as they are (``--limit`` digits, ``--wait`` a plain
    decimal, ``--format`` one of its choices); anything else goes to typer.
    """
    if not argv or argv[0] != "find":
        return None
    args: dict[str, Any] = {"query": None, "db": None, "runs": False, "fmt": "table"}
    args |= {"limit": 50, "wait": DEFAULT_WAIT}
    chosen = {"json": False, "csv": False}
    words = iter(argv[1:])
    for word in words:
        if word in _FIND_FLAGS:
            flag = _FIND_FLAGS[word]
            if flag == "runs":
                args["runs"] = True
            else:
                chosen[flag] = True
        elif word in ("--db", "--format", "--limit", "--wait"):
            value = next(words, None)
            if value is None or not _find_value(word, value):
                return None
            args[word[2:].replace("format", "fmt")] = _find_typed(word, value)
        elif not word.startswith("-") and args["query"] is None:
            args["query"] = word
        else:
            return None
    if chosen["json"] or chosen["csv"]:  # as the command: --json, then --csv, then --format
        args["fmt"] = "json" if chosen["json"] else "csv"
    return args if args["query"] is not None else None


def _find_value(option: str, value: str) -> bool:
    if option == "--format":
        return value in TABLE_FORMATS
    if option == "--limit":
        return value.isascii() and value.isdigit() and len(value) < 10
    if option == "--wait":
        whole, _, part = value.partition(".")
        return all(p.isascii() and p.isdigit() and len(p) < 10 for p in (whole, part or "0"))
    return not value.startswith("-")


def _find_typed(option: str, value: str) -> Any:
    if option == "--limit":
        return int(value)
    return float(value) if option == "--wait" else value
