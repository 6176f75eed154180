"""The tree's steps and their JSON.

A tree is a list of steps. A :class:`NodeStep` is a step of the run itself; an
:class:`AgentStep` is an agent invocation, with the steps of the child run
nested in ``steps``. Their JSON is the seed runtime's shape with camelCase
keys: ``{"type": "node", "id"}`` and ``{"type": "agent", "agent", "node",
"kind", "runId", "parentRunId", "invocationId", "ok", "status", "durationMs",
"error"?, "steps"}``.

The models are msgspec structs rather than pydantic models because of a
measurement on this machine: building one step took 0.22 us with msgspec
against 2.9 us (pydantic, validated) or 4.9 us (``model_construct``), and a
1,000,000-event trace builds three quarters of a million steps.

The runs and forests that hold them are in :mod:`tracekit.tree.forest`.

Example:
    >>> steps_to_json([NodeStep("decide")])
    b'[{"type":"node","id":"decide"}]'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Final, Literal, TypeAlias

import msgspec

from tracekit.events import Call, EdgeInfo, ErrorInfo, Kind, Usage

__all__ = [
    "MARK_NO_ENTER",
    "AgentStep",
    "NodeStep",
    "Step",
    "StepStatus",
    "iter_steps",
    "steps_to_json",
]

MARK_NO_ENTER: Final = "exit without enter"

StepStatus: TypeAlias = Literal["ok", "error", "refused", "cancelled", "pending", "running"]


class NodeStep(msgspec.Struct, tag_field="type", tag="node", omit_defaults=True, frozen=True):
    """A step of a run: ``{"type": "node", "id": ...}``.

    ``id`` is the step's own name: a path such as ``delegate/sql/say`` shows
    its last part. ``ok`` and ``durationMs`` appear when the record had them;
    ``call`` (``tool`` or ``llm``), ``error`` and ``usage`` when the step was
    a tool call or a model turn. Frozen: a tree may share one object between
    repeats of the same step.
    """

    id: str
    ok: bool | None = None
    durationMs: float | None = None
    call: Call | None = None
    error: ErrorInfo | None = None
    usage: Usage | None = None

    @property
    def type(self) -> Literal["node"]:
        """Always ``"node"``; the JSON tag."""
        return "node"


class AgentStep(msgspec.Struct, tag_field="type", tag="agent", kw_only=True, omit_defaults=True):
    """An agent invocation and, in ``steps``, the child run's own steps.

    ``status`` is ``running`` (and ``ok``/``durationMs`` are null) while no
    exit was seen. ``error`` is left out when there is none. ``startTs`` and
    ``endTs`` (milliseconds) are tracekit's additions, for timelines; ``mark``
    says what was odd about this invocation, if anything (``"exit without
    enter"``, a cycle cut here, a run claimed twice).

    ``edge`` is how a reader found the parent (absent when the runtime knew
    it); ``usage`` is the invocation's own model usage, from its exit;
    ``ownMs`` and ``totalUsage`` are filled by
    :func:`tracekit.tree.measures.measure` (the tree JSON and the invocations
    frame call it; a plain build leaves them None, as it costs half a build on
    a bushy tree): the time not covered by its child invocations, and its
    usage with the whole subtree's.
    """

    agent: str
    node: str | None
    kind: Kind
    runId: str
    parentRunId: str | None
    invocationId: str
    ok: bool | None
    status: StepStatus
    durationMs: float | None
    error: ErrorInfo | None = None
    startTs: float | None = None
    endTs: float | None = None
    mark: str | None = None
    edge: EdgeInfo | None = None
    usage: Usage | None = None
    ownMs: float | None = None
    totalUsage: Usage | None = None
    steps: list[Step]

    @property
    def type(self) -> Literal["agent"]:
        """Always ``"agent"``; the JSON tag."""
        return "agent"


Step: TypeAlias = NodeStep | AgentStep


def iter_steps(trees: Iterable[Sequence[Step]]) -> Iterator[Step]:
    """Yield every step of the trees in pre-order, without recursion.

    Example:
        >>> [s.id for s in iter_steps([[NodeStep("a"), NodeStep("b")]])]
        ['a', 'b']
    """
    stack: list[Iterator[Step]] = [iter(tree) for tree in reversed(list(trees))]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        yield step
        if type(step) is AgentStep and step.steps:
            stack.append(iter(step.steps))


_ENCODER: Final = msgspec.json.Encoder()


def steps_to_json(steps: Sequence[Step]) -> bytes:
    """Encode steps as JSON, the seed's shape; any depth (no RecursionError).

    Example:
        >>> steps_to_json([NodeStep("decide")])
        b'[{"type":"node","id":"decide"}]'
    """
    try:
        return _ENCODER.encode(steps)
    except RecursionError:  # deeper than msgspec's recursive encoder goes
        return _encode_deep(steps)


def _encode_deep(steps: Sequence[Step]) -> bytes:
    """Write nested steps with an explicit stack; an agent's ``steps`` is its last key."""
    out = bytearray(b"[")
    stack: list[Iterator[Step]] = [iter(steps)]
    first = [True]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            first.pop()
            out += b"]}" if stack else b"]"
            continue
        if not first[-1]:
            out += b","
        first[-1] = False
        if type(step) is AgentStep and step.steps:
            head = _ENCODER.encode(msgspec.structs.replace(step, steps=[]))
            out += head[:-2]  # drop the empty list's "]}" and open it
            stack.append(iter(step.steps))
            first.append(True)
        else:
            out += _ENCODER.encode(step)
    return bytes(out)
