"""Where the current run lives: a context variable, carried by asyncio and by hand into threads.

``asyncio`` copies the context into every task (``create_task`` included), so a
background subagent started from a step keeps that step's run as its parent
even after the step has ended. Threads start with an empty context: wrap the
thread's function with :func:`propagate_context`.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import os
from collections.abc import Callable
from typing import Any, Final, ParamSpec, TypeVar

import msgspec

__all__ = ["Frame", "current_frame", "new_ids", "propagate_context"]

P = ParamSpec("P")
R = TypeVar("R")


class Frame(msgspec.Struct, eq=False):
    """The run that code is running in.

    A struct rather than a plain class: one is made per scope, and its
    constructor runs in C.

    Attributes:
        run_id: the run's id; an invocation started here is its child.
        chain: the agents running, outermost first (the recursion guard's view).
        depth: 0 for a root run, 1 for its children, and so on.
        prefix: what the ids of this run's steps start with (``hand_over/billing/``).
        step: the innermost open step, or None.
        session: the root run's session (``gen_ai.conversation.id``), or None.
        owner: the run or invocation whose own model usage a step adds to.

    Example:
        >>> Frame("r-1", ("desk",), 0, "").depth
        0
    """

    run_id: str
    chain: tuple[str, ...]
    depth: int
    prefix: str
    step: Any = None
    session: str | None = None
    owner: Any = None


_CURRENT: Final[contextvars.ContextVar[Frame | None]] = contextvars.ContextVar(
    "tracekit_frame", default=None
)
current_frame = _CURRENT.get


class _Ids:
    """Unique ids without a system call each: a random per-process prefix and a counter."""

    def __init__(self) -> None:
        self.reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(5).hex()
        self.counter = itertools.count(1)


_IDS: Final = _Ids()


def new_ids() -> tuple[str, str]:
    """Return a fresh ``(run_id, invocation_id)`` pair, unique across processes."""
    own = f"{_IDS.prefix}-{next(_IDS.counter)}"
    return "r-" + own, "i-" + own


def propagate_context(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap ``fn`` so it runs in the caller's context, in whatever thread calls it.

    Threads do not inherit context variables; without this, an agent invoked
    from a worker thread would start a new tree instead of joining the
    caller's run. Capture happens when ``propagate_context`` is called.

    Example:
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> from tracekit.sdk import AgentTracer, MemorySink
        >>> sink = MemorySink()
        >>> tk = AgentTracer(sink)
        >>> def work(item):
        ...     with tk.delegate("worker", node="fan_out"):
        ...         return item * 2
        >>> with tk.run("planner") as run, ThreadPoolExecutor() as pool:
        ...     pool.submit(propagate_context(work), 21).result()
        42
        >>> enter = sink.events[1]  # the worker's call joined the planner's run
        >>> enter.agent, enter.parentRunId == run.run_id
        ('worker', True)
    """
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        # A context can be entered by one thread at a time: copy it per call.
        return captured.copy().run(fn, *args, **kwargs)

    return run
