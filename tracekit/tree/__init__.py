"""The delegation tree: its model, how it is built from records, and its renderings.

- :mod:`~tracekit.tree.model`: the step types (``NodeStep``, ``AgentStep``),
  a run's tree, the forest of a trace and its integrity report;
- :mod:`~tracekit.tree.build`: records to trees, in one pass
  (:func:`agent_tree`, :func:`build_forest`, :func:`agents_in`);
- :mod:`~tracekit.tree.text`: the seed runtime's ``describeAgentTree`` text;
- :mod:`~tracekit.tree.html`: the same tree as collapsible HTML;
- :mod:`~tracekit.tree.measures`: own time and token totals (:func:`measure`);
- :mod:`~tracekit.tree.frame`: the invocations as a pandas DataFrame.

The model and the builder load with the package; the renderings and the
frame (pandas) load on first use.

Example:
    >>> from tracekit.events import Enter, Exit
    >>> tree = agent_tree([
    ...     Enter(ts=1, invocationId="i", runId="c", parentRunId="r", agent="sql", node="ask"),
    ...     Exit(ts=5, invocationId="i", runId="c", parentRunId="r", agent="sql", durationMs=4),
    ... ])
    >>> print(tree)
    ask -> sql (ok, 4ms)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracekit._util.lazy import lazy_names as _lazy_names
from tracekit.tree.build import agent_tree, agents_in, build_forest
from tracekit.tree.forest import AgentTree, Forest, Integrity, RunTree, forest_to_json
from tracekit.tree.measures import measure
from tracekit.tree.model import AgentStep, NodeStep, Step, StepStatus, iter_steps, steps_to_json

if TYPE_CHECKING:
    from tracekit.tree.frame import invocations_frame, read_invocations
    from tracekit.tree.html import tree_to_html
    from tracekit.tree.text import describe_agent_tree, describe_forest

__getattr__ = _lazy_names(
    __name__,
    {
        "describe_agent_tree": "tracekit.tree.text",
        "describe_forest": "tracekit.tree.text",
        "invocations_frame": "tracekit.tree.frame",
        "read_invocations": "tracekit.tree.frame",
        "tree_to_html": "tracekit.tree.html",
    },
)

__all__ = [
    "AgentStep",
    "AgentTree",
    "Forest",
    "Integrity",
    "NodeStep",
    "RunTree",
    "Step",
    "StepStatus",
    "agent_tree",
    "agents_in",
    "build_forest",
    "describe_agent_tree",
    "describe_forest",
    "forest_to_json",
    "invocations_frame",
    "iter_steps",
    "measure",
    "read_invocations",
    "steps_to_json",
    "tree_to_html",
]
