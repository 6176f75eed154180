"""The typer commands of ``tracekit``, a module a group; :mod:`tracekit.cli.app` registers them.

- :mod:`~tracekit.cli.commands.options`: the formats and options they share;
- :mod:`~tracekit.cli.commands.trees`: tree, diff;
- :mod:`~tracekit.cli.commands.simulate`: simulate;
- :mod:`~tracekit.cli.commands.store`: ingest, runs, session, rejects, sql, find;
- :mod:`~tracekit.cli.commands.health`: export, fleet, dashboard;
- :mod:`~tracekit.cli.commands.serve`: serve.
"""
