"""A dialect declaration as data: its sections, its edges and what its failures mean.

Example:
    >>> d = Dialect("my app", agents=Match(names=("agent:*",)), errors=Errors(limits=("TooDeep",)))
    >>> d.name, bool(d.agents), bool(d.tools), d.errors.limits
    ('my app', True, False, ('TooDeep',))
"""

from __future__ import annotations

from dataclasses import dataclass

from tracekit.intake.otlp.dialect.match import Match

__all__ = ["Dialect", "Edges", "Errors"]


@dataclass(frozen=True, slots=True)
class Edges:
    """Where a dialect writes who called whom, besides the span tree.

    Attributes:
        handoff_tools: tool-name globs that hand control on (``transfer_to_*``).
        target_keys: tool arguments that name the agent handed to.
        target_attributes: span attributes that name it (an association property).
        goto: spans that only say where control goes next (``gen_ai.operation.name = goto``).
        step_from: span attributes holding a graph's step order (the ``graph.step`` rule).
        metadata_from: attribute prefixes (ending in ``.``) under which a graph
            framework's run metadata is written one key an attribute (values
            JSON): read as that metadata (its node, step and namespace).
    """

    handoff_tools: tuple[str, ...] = ()
    target_keys: tuple[str, ...] = ()
    target_attributes: tuple[str, ...] = ()
    goto: Match = Match()
    step_from: tuple[str, ...] = ()
    metadata_from: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Errors:
    """What a dialect's failures mean.

    Attributes:
        control_flow: exception types used to jump or hand off: no failure.
        loop_refusal: exception types that refuse a loop (``AGENT_RECURSION``).
        limits: exception types that stop a run at a limit (recursion, turns).
        cancellation: signals that end a branch cancelled on purpose: no
            failure when the span above them did not fail.
        code_from: attributes holding the error code, first found wins.
        failed_where: attribute values that say a span failed though its
            status does not (``{"out#tool_output.is_error" = "true"}``: an
            error the framework caught and gave back as the tool's output).
        turn_error_ends_run: an unhandled error in an agent's turn ends the
            team's run (None: the dialect does not say).
        step_budget: how an agent's step limit shows when it stops without
            raising: (the agent span's attribute holding the limit, its step
            spans' name prefix, the tool that gives a final answer).
    """

    control_flow: tuple[str, ...] = ()
    loop_refusal: tuple[str, ...] = ()
    limits: tuple[str, ...] = ()
    cancellation: tuple[str, ...] = ()
    code_from: tuple[str, ...] = ()
    failed_where: tuple[tuple[str, str], ...] = ()
    turn_error_ends_run: bool | None = None
    step_budget: tuple[str, str, str] | None = None


@dataclass(frozen=True, slots=True)
class Dialect:
    """One declaration (see the module's docstring); ``origin`` is where it was read.

    ``turns`` are spans that start an agent's turn where no span is the agent
    (``name_from`` names it): each run of one agent's turns is an invocation.
    """

    name: str
    origin: str = ""
    recognise: Match = Match()
    agents: Match = Match()
    workflows: Match = Match()
    routers: Match = Match()
    wrappers: Match = Match()
    tools: Match = Match()
    models: Match = Match()
    turns: Match = Match()
    edges: Edges = Edges()
    errors: Errors = Errors()
