"""Figure builders (plotly): the only package of tracekit that imports plotly."""
