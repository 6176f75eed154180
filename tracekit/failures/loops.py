"""The loop a run went round: the one it stopped at, or one it ran and finished.

A run stopped at a limit while its activations repeated a circle gets its
finding here (:func:`limit_finding`: the rules :func:`~tracekit.failures.rules.limit_loop`
and :func:`~tracekit.failures.rules.limit_stop` ask for it); every finding
then gets its :class:`~tracekit.failures.model.Loop` (:func:`with_loop`): the
limit's, a refusal's on the call path, or, for a run that finished (``ok``
or ``degraded``), a ``finished`` loop when its agents went round
:data:`LOOP_MIN` times or more. The members of a loop are the activations from the first entry of
its cycle to the end of the last: the store sums their cost.

Example:
    >>> from tracekit.failures.model import Call, RunFacts
    >>> calls = tuple(Call(f"i{n}", f"i{n - 1}" if n else None, a, "ok", start_ms=n)
    ...               for n, a in enumerate(["a", "b"] * 3 + ["a"]))
    >>> loop = with_loop(RunFacts("r", "desk", True, True, sequence=calls), Finding("ok"), 3).loop
    >>> loop.circle, loop.revisits, loop.stopped, len(loop.members)
    ('a -> b -> a', 3, 'finished', 7)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from tracekit.failures.circles import call_path, innermost
from tracekit.failures.limits import is_limit, limit_hit
from tracekit.failures.model import Finding, Loop, RunFacts, Stopped
from tracekit.failures.outcomes import Outcome
from tracekit.failures.sequence import Cycle, path_cycle, sequence_cycle

__all__ = ["LOOP_MIN", "limit_finding", "with_loop"]

#: How many times a run's agents go round a circle before a run that did not
#: stop at it carries a loop finding (the default of ``loop_min``).
LOOP_MIN: Final = 3

_Path = list[tuple[str, str | None]]
#: The outcomes of a run that finished: only they carry a ``finished`` loop.
_FINISHED: Final = frozenset({"ok", "degraded"})


def _members(path: _Path, cycle: Cycle) -> tuple[str | None, ...]:
    """The activations of the stretch, each once (a caller comes back between its delegates)."""
    return tuple(dict.fromkeys(invocation for _, invocation in path[cycle.first : cycle.last + 1]))


def limit_finding(outcome: Outcome, run: RunFacts, stopped: Stopped) -> Finding | None:
    """A run that a limit stopped while its activations repeated a circle (None: no limit, or no circle).

    The origin is where the limit struck: the activation whose own error is
    the limit (or whose step's is), else the last activation of the circle,
    running when a limit above the agents (the root, the runner) struck.
    """
    hit = limit_hit(run)
    found = sequence_cycle(run) if hit is not None else None
    if hit is None or found is None:
        return None
    cycle, path = found
    last = path[cycle.last][1]
    calls = {c.invocation_id: c for c in (*run.sequence, *run.calls)}
    origin = hit.call or (calls.get(last) if last is not None else None)
    agent = hit.agent or path[cycle.last][0]
    code = (innermost(hit.error) or hit.error).code
    loop = Loop(cycle.circle, cycle.revisits, stopped, code, agent, _members(path, cycle))
    return Finding(outcome, cycle.circle, origin, agent, code, loop=loop)


def with_loop(run: RunFacts, finding: Finding, loop_min: int = LOOP_MIN) -> Finding:
    """The finding with its loop: the one it stopped at, else one its agents went round ``loop_min`` times."""
    if finding.loop is not None:
        return finding
    if finding.outcome == "failed:recursion" and finding.circle:
        return replace(finding, loop=_refused_loop(run, finding))
    if finding.outcome not in _FINISHED:
        return finding
    found = sequence_cycle(run)
    if found is None or found[0].revisits < max(loop_min, 1):
        return finding
    cycle, path = found
    loop = Loop(cycle.circle, cycle.revisits, "finished", members=_members(path, cycle))
    return replace(finding, loop=loop)


def _refused_loop(run: RunFacts, finding: Finding) -> Loop:
    """The loop a refusal on the call path stopped: from the circle's first entry to the origin."""
    origin = finding.origin
    members: tuple[str | None, ...] = (origin.invocation_id,) if origin is not None else ()
    revisits = 1
    if origin is not None:
        path = call_path(run, origin)
        cycle = path_cycle([name for name, _ in path])
        if cycle is not None:
            members, revisits = _members(path, cycle), cycle.revisits
    limit = is_limit(origin.error if origin is not None else run.error)
    stopped: Stopped = "limit" if limit else "refused"
    return Loop(
        finding.circle or "", revisits, stopped, finding.origin_code, finding.origin_agent, members
    )
