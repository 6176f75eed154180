r"""The Prometheus text exposition format, version 0.0.4: families of samples as text.

One ``# HELP`` and one ``# TYPE`` line a family, then one line a sample:
``name{label="value",...} number``. Label values are data (agent, service and
circle names from traces), so each is escaped as the format asks: a backslash
as ``\\``, a double quote as ``\"``, a line feed as ``\n``; any other
character, control characters too, stands as itself inside the quotes. HELP
text escapes the backslash and the line feed. The text ends with a line feed.

Example:
    >>> family = Family("tracekit_runs", "gauge", "Root runs.", [({"agent": 'say "hi"'}, 3)])
    >>> print(render([family]), end="")
    # HELP tracekit_runs Root runs.
    # TYPE tracekit_runs gauge
    tracekit_runs{agent="say \"hi\""} 3
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["CONTENT_TYPE", "Family", "escape_help", "escape_label", "render"]

#: The reply's media type: the text format, version 0.0.4.
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(slots=True)
class Family:
    """One metric: its name, type, help and samples (labels, value).

    A counter's name ends in ``_total``, as the format's readers expect.
    """

    name: str
    kind: Literal["counter", "gauge"]
    help: str
    samples: Sequence[tuple[Mapping[str, str], float]] = field(default_factory=list)


def escape_label(value: str) -> str:
    r"""A label value as it goes between the quotes.

    Example:
        >>> print(escape_label('a"b\\c\nd'))
        a\"b\\c\nd
    """
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """A HELP line's text: backslash and line feed escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items()) + "}"


def render(families: Iterable[Family]) -> str:
    """The families as exposition text, in the order given (a family without samples too)."""
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        lines.extend(
            f"{family.name}{_labels(labels)} {_number(value)}" for labels, value in family.samples
        )
    return "\n".join(lines) + "\n"
