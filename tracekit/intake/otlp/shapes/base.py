"""The declaration of one framework family's span shape (see :mod:`tracekit.intake.otlp.shapes`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span


__all__ = ["Shape"]


@dataclass(frozen=True, slots=True)
class Shape:
    """What a framework family's spans mean where the generic conventions do not say it.

    A shape is asked about a span only when its name or its attributes may be
    the family's (:attr:`names`, :attr:`keys`): most spans of a fleet are no
    framework's, and their names repeat, so that test is one lookup per span
    (:func:`tracekit.intake.otlp.shapes.may_claim`). So ``recognise(span)``
    must imply ``names(span.name)`` or a key of :attr:`keys` in ``span.attrs``.

    Attributes:
        name: the family, as docs/otlp.md names it.
        recognise: whether a span was written by this family.
        agent_name: the name of an agent span, or None to leave it to the next shape.
        is_agent: True (an agent invocation), False (a wrapper, router or step
            that only looks like one), None (the generic rules decide).
        is_workflow: True (the whole run: its agents are its invocations), False
            (an agent, though the generic rules would take it for a run's root),
            None (the generic rules decide).
        names: whether a span of this name may be the family's (asked once per
            distinct name); None: any name may be.
        keys: attributes that may make a span the family's whatever its name.
        limits: the family's own limits, as data: the exception types and the
            words (a setting's name, a message's phrase) its errors or stop
            reasons carry when the framework stopped a run at a limit of its
            own (recursion, turns, steps, iterations, requests, usage).
            Matched case-blind against an error's type and message by
            :func:`tracekit.failures.limits.is_limit`, beside the general
            vocabulary (:data:`tracekit.intake.otlp.shapes.limits.GENERAL`).
        turn_error_ends_run: an error out of an agent's turn ends the whole
            run (AutoGen's teams): a run whose last activation failed, with
            nothing after it, failed with it, though its root span says ok.
        step_budget: how an agent's step limit shows, when it stops without
            raising: ``(attribute, step name prefix, final tool)``: the
            agent span's attribute holding the limit, the prefix of its step
            spans, and the tool that gives a final answer. An agent that used
            every step and whose last step gave no final answer was stopped
            at its limit (smolagents' ``max_steps``).
        forced_answer: how a limit shows when the framework answers at it
            instead of raising: ``(step name suffix, limit)``: a model call
            under a step span whose name ends with the suffix is the last
            answer the framework asked for because the limit struck
            (LlamaIndex's ``early_stopping_method="generate"`` at
            ``max_iterations``: its output parser calls the model only then).
    """

    name: str
    recognise: Callable[[Span], bool]
    agent_name: Callable[[Span], str | None] | None = None
    is_agent: Callable[[Span], bool | None] | None = None
    is_workflow: Callable[[Span], bool | None] | None = None
    names: Callable[[str], bool] | None = None
    keys: frozenset[str] = field(default_factory=frozenset)
    limits: tuple[str, ...] = ()
    turn_error_ends_run: bool = False
    step_budget: tuple[str, str, str] | None = None
    forced_answer: tuple[str, str] | None = None
