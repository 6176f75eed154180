"""How a run stopped when its root span does not say it: a limit the app handled, or a cut-off.

A framework that stops looping agents at a limit does not always fail the
run's root span, and sometimes fails it though the run answered:

* handled: the root span failed with a framework's limit
  (:func:`~tracekit.intake.otlp.shapes.limits.is_limit`), and the span above
  it, the app's own (outside any agent run), ended well: the app caught the
  limit and answered. The run ended ok; its stop is the limit.
* cut off: the root ended ok with no error, but the trace's last word is a
  handoff that no agent took (a team stopped at ``max_turns`` or a
  termination condition between two turns), and no agent of the run failed.
  The run ended ok; its stop is
  :data:`~tracekit.intake.otlp.shapes.limits.CUT_OFF`, naming both agents.
* out of steps: the root agent used every step its family's step budget
  allows (:attr:`~tracekit.intake.otlp.shapes.base.Shape.step_budget`,
  a code agent's ``max_steps``) and its last step gave no final answer. The run
  ended ok; its stop is the budget's setting.
* answered at its limit: the family declares the step whose model call is
  an answer it asked for because a limit struck
  (:attr:`~tracekit.intake.otlp.shapes.base.Shape.forced_answer`: a workflow's
  output parser at ``max_iterations``), and the run holds one. The run ended
  ok; its stop is that limit.

The stop is written as the ``run.end``'s error beside ``ok: true``: the
classification reads a run that ended ok at a limit as ``degraded`` when
its agents went round a circle (:func:`tracekit.failures.rules.limit_stop`).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> root = Span("t", "a", "", "invoke_agent triage", 1, 9,
    ...     {"gen_ai.operation.name": "invoke_agent"}, False, "", None)
    >>> run_stops(SpanIndex({("t", "a"): root}), {})
    {}
"""

from __future__ import annotations

from tracekit.events import ErrorInfo
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.kinds import is_llm
from tracekit.intake.otlp.markers import marker_target
from tracekit.intake.otlp.shapes.limits import BUDGETED, CUT_OFF, FORCED, is_limit
from tracekit.intake.otlp.spans import Key, SpanIndex
from tracekit.intake.otlp.steps import own_error

__all__ = ["limit_above", "run_stops"]


def limit_above(index: SpanIndex, key: Key) -> ErrorInfo | None:
    """The limit a root agent's run was stopped at by the runner above it, if it was.

    A workflow runner that is no agent (a workflow engine's ``workflow.run``)
    raises its superstep limit on its own span, above the root agent (with
    its executor's span between), whose span ended ok: the run stopped at
    that limit. The first failed span above decides.

    Example:
        >>> from tracekit.intake.otlp.decode_json import Span
        >>> runner = Span("t", "w", "", "workflow.run", 0, 9, {"error.type": "WorkflowConvergenceException"},
        ...     True, "Runner did not converge after 100 iterations", None)
        >>> root = Span("t", "a", "w", "invoke_agent triage", 1, 8,
        ...     {"gen_ai.operation.name": "invoke_agent"}, False, "", None)
        >>> limit_above(SpanIndex({("t", "w"): runner, ("t", "a"): root}), ("t", "a")).code
        'WorkflowConvergenceException'
    """
    span = index.spans.get(key)
    seen = 0
    while span is not None and span.parent and seen <= len(index.spans):
        seen += 1
        up = (key[0], span.parent)
        span = index.spans.get(up)
        if span is None or up in index.agent_set:
            return None
        error = own_error(span)
        if error is not None:
            return error if is_limit(error) else None
    return None


def run_stops(index: SpanIndex, errors: dict[Key, ErrorInfo]) -> dict[Key, ErrorInfo]:
    """Each root agent span whose run ended ok at a limit: the limit it stopped at."""
    runs = _runs(index)
    stops: dict[Key, ErrorInfo] = {}
    for root, agents in runs.items():
        error = errors.get(root)
        if error is not None:
            if is_limit(error) and _handled_above(index, root):
                stops[root] = error
        elif not any(key in errors for key in agents):
            found = (
                _cut_off(index, agents)
                or _out_of_steps(index, root)
                or _forced_answer(index, root, agents)
            )
            if found is not None:
                stops[root] = found
    return stops


def _out_of_steps(index: SpanIndex, root: Key) -> ErrorInfo | None:
    """The root agent used its whole step budget and its last step gave no final answer."""
    span = index.spans[root]
    for shape in BUDGETED:
        if shape.step_budget is None or not shape.recognise(span):
            continue
        setting, prefix, final = shape.step_budget
        try:
            budget = int(span.attrs.get(setting, ""))
        except ValueError:
            continue
        steps = [k for k, s in index.spans.items() if k[0] == root[0] and s.parent == span.id
                 and s.name.startswith(prefix)]  # fmt: skip
        if budget <= 0 or len(steps) < budget:
            return None
        last = max(steps, key=lambda k: (index.spans[k].start, k))
        if not _gave_answer(index, last, final):
            agent = index.agent_name(span)
            name = setting.rsplit(".", 1)[-1]
            message = f"{agent} used its {budget} steps ({name}) without a final answer"
            return ErrorInfo(code=name, message=message)
    return None


def _forced_answer(index: SpanIndex, root: Key, agents: list[Key]) -> ErrorInfo | None:
    """The framework asked a model for a last answer because a limit struck (its declared step)."""
    span = index.spans[root]
    for shape in FORCED:
        if shape.forced_answer is None or not shape.recognise(span):
            continue
        suffix, limit = shape.forced_answer
        traces = {key[0] for key in agents}
        for key, model in index.spans.items():
            step = index.spans.get((key[0], model.parent)) if key[0] in traces else None
            if step is not None and step.name.endswith(suffix) and is_llm(model):
                message = f"the run answered at its limit ({limit}): {step.name} asked the model"
                return ErrorInfo(code=limit, message=message)
    return None


def _gave_answer(index: SpanIndex, step: Key, final: str) -> bool:
    """A span under the step, not inside another agent's run, is the final-answer tool."""
    below = {step[1]}
    for key, span in sorted(index.spans.items(), key=lambda item: item[1].start):
        if key[0] != step[0] or span.parent not in below or key in index.agent_set:
            continue
        if span.attrs.get("tool.name") == final or span.attrs.get("gen_ai.tool.name") == final:
            return True
        below.add(span.id)
    return False


def _runs(index: SpanIndex) -> dict[Key, list[Key]]:
    """Each root agent span and the agent spans of its run (across traces, by its edges)."""
    root_of: dict[Key, Key] = {}
    for key in index.agents:
        chain: list[Key] = []
        cur: Key | None = key
        while cur is not None and cur not in root_of and len(chain) <= len(index.agents):
            chain.append(cur)
            cur = index.edges[cur].parent if not index.is_root(cur) else None
        top = root_of[cur] if cur is not None and cur in root_of else chain[-1]
        root_of.update(dict.fromkeys(chain, top))
    runs: dict[Key, list[Key]] = {}
    for key, root in root_of.items():
        if index.is_root(root):
            runs.setdefault(root, []).append(key)
    return runs


def _handled_above(index: SpanIndex, key: Key) -> bool:
    """Spans above the root (the app's, outside any agent run) all ended well: one caught it."""
    span: Span | None = index.spans[key]
    found = False
    while span is not None and span.parent:
        span = index.spans.get((key[0], span.parent))
        if span is None:
            break
        if span.end is None or own_error(span) is not None:
            return False  # still open, or the limit went on up: nobody caught it
        found = True
    return found


def _cut_off(index: SpanIndex, agents: list[Key]) -> ErrorInfo | None:
    """A handoff no agent took, after every agent of the run had started: the run stopped there."""
    started = max(index.spans[k].start for k in agents)
    owners = set(agents)
    dangling = [
        marker
        for trace in {k[0] for k in agents}
        for marker in index.markers.get(trace, ())
        if marker not in index.claimed
        and index.otel.get(marker) in owners
        and index.spans[marker].start > started
        and marker_target(index.spans[marker]) is not None
    ]
    if not dangling:
        return None
    last = max(dangling, key=lambda k: (index.spans[k].start, k))
    owner = index.otel[last]
    by = index.agent_name(index.spans[owner]) if owner is not None else "an agent"
    target = marker_target(index.spans[last])
    message = f"{by} handed off to {target}, who never ran: the run stopped at a limit"
    return ErrorInfo(code=CUT_OFF, message=message)
