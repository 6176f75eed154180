"""Seeded fleets of simulated runs, with the ground truth of each run's class.

:func:`simulate` (in :mod:`~tracekit.simulation.simulator`) writes them; its
parts: ``catalog`` lists the simulated services and agents, ``model`` holds the
invocation tree one run becomes, ``grow`` builds it from a scenario, ``cut``
cancels or crashes it at a moment, ``v1`` and ``otlp`` turn it into records.

``otel_apps``, ``otel_fleet`` and ``otel_export`` are another kind of fleet:
real Python agents run on the plain OpenTelemetry SDK (no tracekit attribute),
whose code records each run's truth as it runs, exported as OTLP JSON (see
``docs/otel-apps.md``).
"""

from __future__ import annotations

from tracekit.simulation.simulator import SimulationRates, SimulationReport, simulate

__all__ = ["SimulationRates", "SimulationReport", "simulate"]
