"""Recursion from structure: loop guards, limits and the circles a failing path closes.

An app's loop guard or a framework's limit (:func:`loop_refusal`) refuses a
loop where its agent is already on the failing path (:func:`call_path`,
:func:`path_circle`), or names the loop in its message when it refused in
the caller (:func:`named_circle`).

Example:
    >>> path_circle(["desk", "planner", "critic", "planner"])
    'critic -> planner -> critic'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from tracekit.events import ErrorInfo, canonical_circle
from tracekit.failures.limits import is_limit
from tracekit.failures.model import Call, RunFacts

__all__ = ["agent_path", "call_path", "innermost", "loop_refusal", "named_circle", "path_circle"]


def innermost(error: ErrorInfo | None) -> ErrorInfo | None:
    """The deepest ``cause`` of an error (the error itself when it has none).

    Example:
        >>> innermost(ErrorInfo(code="AGENT_FAILED", cause=ErrorInfo(code="TIMEOUT"))).code
        'TIMEOUT'
    """
    while error is not None and error.cause is not None:
        error = error.cause
    return error


#: What a loop guard's or a depth or step limit's error says, in its type or message.
_LOOPISH: Final = re.compile(
    r"recursi|loop|cycl|re-?entr|depth|step.?limit|max.?(?:turns|steps|iterations)|too many",
    re.IGNORECASE,
)


def loop_refusal(error: ErrorInfo | None) -> bool:
    """An app's own error that refuses a loop: its type or message says loop, cycle,
    recursion, re-entry, or a depth or step limit, or it is a framework's
    limit (:func:`~tracekit.failures.limits.is_limit`). tracekit's own codes
    (``AGENT_...``) say exactly what they are and are never read this way.

    Example:
        >>> loop_refusal(ErrorInfo(code="RecursionError", message="delegation loop"))
        True
        >>> loop_refusal(ErrorInfo(code="AGENT_DEPTH_EXCEEDED")), loop_refusal(ErrorInfo(code="KeyError"))
        (False, False)
    """
    for found in (error, innermost(error)):
        if found is None or found.code.startswith("AGENT_"):
            continue
        if _LOOPISH.search(found.code) or _LOOPISH.search(found.message):
            return True
    return is_limit(error)


def call_path(run: RunFacts, call: Call) -> list[tuple[str, str | None]]:
    """The failing path down to ``call`` as ``(agent, invocation id)``, the root agent's id None.

    Only failed callers are followed (a caller that ended ok is not on the
    failing path), so the path is the same whether the facts hold every call
    or only the failed ones.

    Example:
        >>> a = Call("i1", None, "planner", "error")
        >>> b = Call("i2", "i1", "critic", "error")
        >>> call_path(RunFacts("r", "desk", True, False, calls=(a, b)), b)
        [('desk', None), ('planner', 'i1'), ('critic', 'i2')]
    """
    by_id = {c.invocation_id: c for c in run.calls}
    path: list[tuple[str, str | None]] = [(call.agent, call.invocation_id)]
    cur: Call | None = call
    while cur is not None and len(path) <= len(by_id) + 1:
        if cur.parent_invocation_id is None:
            if run.agent is not None:
                path.append((run.agent, None))
            break
        cur = by_id.get(cur.parent_invocation_id)
        if cur is None or not cur.failed:
            break
        path.append((cur.agent, cur.invocation_id))
    path.reverse()
    return path


def agent_path(run: RunFacts, call: Call) -> list[str]:
    """The agents on the failing path from the run's root agent down to ``call`` (:func:`call_path`).

    Example:
        >>> a = Call("i1", None, "planner", "error")
        >>> b = Call("i2", "i1", "critic", "error")
        >>> agent_path(RunFacts("r", "desk", True, False, calls=(a, b)), b)
        ['desk', 'planner', 'critic']
    """
    return [name for name, _ in call_path(run, call)]


def path_circle(path: Sequence[str]) -> str | None:
    """The canonical circle a path of agents closed: the last agent's own loop, else the deepest.

    Example:
        >>> path_circle(["desk", "planner", "critic", "planner"]), path_circle(["a", "a"])
        ('critic -> planner -> critic', 'a -> a')
        >>> path_circle(["a", "b", "a", "c"]), path_circle(["a", "b"])
        ('a -> b -> a', None)
    """
    for end in range(len(path) - 1, 0, -1):
        name = path[end]
        earlier = path[:end]
        if name in earlier:
            start = end - 1 - earlier[::-1].index(name)
            return canonical_circle(path[start : end + 1])
    return None


#: A loop written out in an error message: names joined by arrows (``a -> b -> a``).
_ARROWS: Final = re.compile(r"[^\s,;:()'\"\[\]]+(?:\s*(?:->|→)\s*[^\s,;:()'\"\[\]]+)+")


def named_circle(error: ErrorInfo | None, path: Sequence[str]) -> str | None:
    """The circle a guard refused in the caller, when its message names it and the path agrees.

    A guard that checks before it opens the callee's span leaves only the
    caller on the failing path. Its message often writes the loop out
    (``delegation loop: planner -> critic -> planner``): when the failing
    path, with the refused agent (the loop's last name) added below it, ends
    with exactly that loop, the loop is the circle. A message that names a
    loop the path does not hold gives nothing.

    Example:
        >>> guard = ErrorInfo(code="LoopDetected", message="delegation loop: planner -> critic -> planner")
        >>> named_circle(guard, ["desk", "planner", "critic"]), named_circle(guard, ["desk", "critic"])
        ('critic -> planner -> critic', None)
    """
    for found in (error, innermost(error)):
        if found is None:
            continue
        for text in _ARROWS.findall(found.message):
            loop = [name.strip() for name in re.split(r"->|→", text)]
            closed = [*path, loop[-1]]
            if len(loop) >= 2 and loop[0] == loop[-1] and closed[-len(loop) :] == loop:
                return canonical_circle(loop)
    return None
