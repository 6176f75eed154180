"""Seeded fleets of simulated runs, with the ground truth of each run's class.

:func:`simulate` (in :mod:`~tracekit.simulation.simulator`) writes them; its
parts: ``catalog`` lists the simulated services and agents, ``model`` holds the
invocation tree one run becomes, ``grow`` builds it from a scenario, ``cut``
cancels or crashes it at a moment, ``v1`` and ``otlp`` turn it into records.
"""

from __future__ import annotations

from tracekit.simulation.simulator import SimulationRates, SimulationReport, simulate

__all__ = ["SimulationRates", "SimulationReport", "simulate"]
