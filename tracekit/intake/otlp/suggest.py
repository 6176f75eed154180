"""A starting declaration for a trace's dialect, read from its spans' evidence.

``tracekit dialect suggest FILE`` prints what :func:`suggest_dialect` writes:
the sections the evidence shows (:mod:`tracekit.intake.otlp.evidence`), as
TOML the user checks and edits, then passes with ``--dialect``.

Example:
    >>> from tracekit.intake.otlp.dialect import Dialect, Match
    >>> print(declaration(Dialect("my app", agents=Match(names=("agent:*",)))).strip())
    [dialect]
    name = "my app"
    <BLANKLINE>
    [agents]
    names = ["agent:*"]
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any, Final

from tracekit.errors import TraceFileError
from tracekit.intake.otlp.decode_json import Span, decode_spans
from tracekit.intake.otlp.dialect import Dialect, Match
from tracekit.intake.otlp.evidence import infer

__all__ = ["declaration", "suggest_dialect"]

_SECTIONS: Final = ("agents", "workflows", "routers", "wrappers", "tools", "models")


def suggest_dialect(path: str | Path) -> str:
    """A dialect declaration (TOML text) for the spans of an OTLP JSON file.

    Raises:
        TraceFileError: the file is missing, unreadable or holds no OTLP spans.
    """
    spans = _spans(Path(path))
    found = infer(spans)
    errors = Counter(
        str(s.attrs.get("error.type") or s.exception).rpartition(".")[2]
        for s in spans
        if s.attrs.get("error.type") or s.exception
    )
    head = [f"# A starting dialect for {Path(path).name}, read from the evidence of its spans."]
    if found is None:
        head.append("# No agent evidence found: name your agents' spans below.")
        dialect = Dialect(
            "my app", agents=Match(names=("agent:*",)), tools=Match(names=("tool:*",))
        )
    else:
        head.append(f"# Inferred: {found.line()}.")
        dialect = Dialect("my app", **{k: getattr(found.dialect, k) for k in _SECTIONS},
                          edges=found.dialect.edges, errors=found.dialect.errors)  # fmt: skip
    head.append("# Check it, then: tracekit tree FILE --dialect THIS.toml")
    if errors:
        seen = ", ".join(kind for kind, _ in errors.most_common(8))
        head.append(f"# Exception types seen: {seen}. Under [errors], list those that are")
        head.append(
            "# control flow (control_flow = [...]) or refuse a loop (loop_refusal = [...])."
        )
    return "\n".join(head) + "\n" + declaration(dialect)


def declaration(dialect: Dialect) -> str:
    """A dialect as TOML text (the sections it has; empty ones left out)."""
    out = ["[dialect]", f"name = {_str(dialect.name)}", ""]
    for section in _SECTIONS:
        match: Match = getattr(dialect, section)
        if match:
            out += [f"[{section}]", *_match_lines(match), ""]
    edges = dialect.edges
    lines = _lists({"handoff_tools": edges.handoff_tools, "target_keys": edges.target_keys,
                    "target_attributes": edges.target_attributes})  # fmt: skip
    if lines:
        out += ["[edges]", *lines, ""]
    errors = dialect.errors
    lines = _lists({"control_flow": errors.control_flow, "loop_refusal": errors.loop_refusal,
                    "code_from": errors.code_from})  # fmt: skip
    if lines:
        out += ["[errors]", *lines, ""]
    return "\n".join(out)


def _match_lines(match: Match) -> list[str]:
    lines = _lists({"names": match.names, "attributes": match.attributes})
    if match.where:
        pairs: dict[str, list[str]] = {}
        for key, value in match.where:
            pairs.setdefault(key, []).append(value)
        inner = ", ".join(
            f"{_str(k)} = {_str(v[0]) if len(v) == 1 else _list(v)}" for k, v in pairs.items()
        )
        lines.append(f"where = {{ {inner} }}")
    return lines + _lists({"name_from": match.name_from})


def _lists(values: dict[str, tuple[str, ...]]) -> list[str]:
    return [f"{key} = {_list(list(found))}" for key, found in values.items() if found]


def _list(values: list[str]) -> str:
    return "[" + ", ".join(_str(v) for v in values) + "]"


def _str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


def _spans(path: Path) -> list[Span]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceFileError(str(path), f"cannot read it: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", "replace")
    docs: list[Any] = []
    try:
        docs = [json.loads(text)]
    except ValueError:
        for line in text.splitlines():
            try:
                docs.append(json.loads(line))
            except ValueError:
                continue
    spans: list[Span] = []
    for doc in docs:
        if isinstance(doc, dict) and "resourceSpans" in doc:
            try:
                spans.extend(decode_spans(doc))
            except (ValueError, TypeError):
                continue
    if not spans:
        raise TraceFileError(
            str(path), "no OTLP spans in it", hint="tracekit dialect suggest reads OTLP JSON."
        )
    return spans
