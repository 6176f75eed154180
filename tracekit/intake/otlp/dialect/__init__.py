"""A dialect: how one instrumentation or app writes its spans, declared as data (TOML).

A dialect says how to recognise its traces, which spans are agents,
workflows, routers, wrappers, tools and model calls, how an agent is named,
where the edge evidence is, which exceptions are control flow and where the
error code is. Every section is optional but ``[dialect] name``; a section
matches a span by its name (globs), by attributes it carries, or by
attribute values (``where``). The built-in declarations live in
:mod:`tracekit.intake.otlp.shapes`; a user's is given with ``--dialect FILE``
(or ``[tool.tracekit] dialect`` in ``pyproject.toml``, or ``tracekit.toml``).

The modules: ``refs`` (an attribute, or a path into its JSON value),
``match`` (:class:`Match`: a section's claim on spans), ``model``
(:class:`Dialect`, :class:`Edges`, :class:`Errors`), ``parse`` (the TOML
format and its checks), ``files`` (where a user's dialect is declared).

Example:
    >>> text = '''
    ... [dialect]
    ... name = "my app"
    ... [agents]
    ... names = ["agent:*"]
    ... name_from = ["app.agent"]
    ... [errors]
    ... loop_refusal = ["LoopRefused"]
    ... '''
    >>> dialect = parse_dialect(text, "tracekit.toml")
    >>> dialect.name, dialect.agents.names, dialect.errors.loop_refusal
    ('my app', ('agent:*',), ('LoopRefused',))
    >>> parse_dialect("[agents]\\nnames = 3\\n", "d.toml")
    Traceback (most recent call last):
    ...
    tracekit.errors.DialectError: d.toml:2: agents.names: expected a list of strings, got 3
"""

from __future__ import annotations

from tracekit.intake.otlp.dialect.files import OWN_FILE, find_dialects, load_dialect
from tracekit.intake.otlp.dialect.match import Match
from tracekit.intake.otlp.dialect.model import Dialect, Edges, Errors
from tracekit.intake.otlp.dialect.parse import parse_dialect
from tracekit.intake.otlp.dialect.refs import PATH_MARK, attribute_of, key_of

__all__ = [
    "OWN_FILE",
    "PATH_MARK",
    "Dialect",
    "Edges",
    "Errors",
    "Match",
    "attribute_of",
    "find_dialects",
    "key_of",
    "load_dialect",
    "parse_dialect",
]
