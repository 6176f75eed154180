"""The parts of :mod:`tracekit.simulate`: a catalogue, a run grower, two writers.

``catalog`` lists the simulated services and agents, ``model`` holds the
invocation tree one run becomes, ``grow`` builds it from a scenario, ``cut``
cancels or crashes it at a moment, ``v1`` and ``otlp`` turn it into records.
"""
