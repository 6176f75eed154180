"""MLflow tracing's spans, as its OTLP exporter would send them, captured in memory.

MLflow traces are OpenTelemetry spans underneath. With an OTLP traces endpoint set,
MLflow exports them through its own ``OtelSpanProcessor`` (a batch processor that
registers each trace with MLflow's trace manager and writes ``mlflow.spanType``,
``mlflow.spanInputs`` and the rest as span attributes): that exporter is swapped for
an in-memory one, and the endpoint is the closed port, so nothing leaves the machine.
The tracking URI is a temporary folder.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from _recording import CLOSED, Recorder, instrumented_by
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def mlflow_exporter(service: str) -> InMemorySpanExporter:
    """Point MLflow's OTLP export at memory; call before MLflow makes its first span."""
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{CLOSED}/v1/traces"
    os.environ["OTEL_SERVICE_NAME"] = service
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    import mlflow
    import mlflow.tracing.provider as tracing_provider

    mlflow.set_tracking_uri(f"file://{tempfile.mkdtemp(prefix='mlflow-recording-')}")
    exporter = InMemorySpanExporter()
    tracing_provider.get_otlp_exporter = lambda: exporter  # type: ignore[attr-defined]
    return exporter


class MlflowRecorder(Recorder):
    """A recorder that flushes MLflow's batch span processor before it writes."""

    def write(self, scenario: str, **kwargs: Any) -> None:
        import mlflow.tracing.provider as tracing_provider

        tracing_provider.provider.get().force_flush()
        super().write(scenario, **kwargs)


def mlflow_recorder(name: str, framework: str, **options: Any) -> MlflowRecorder:
    """A recorder of MLflow tracing on ``framework``, its spans exported as OTLP to memory.

    The service is named after the recording; ``options`` are the recorder's.
    Turn on the framework's autolog after this: the exporter is set first.
    """
    exporter = mlflow_exporter(f"{name.replace('_', '-')}-recording")
    return MlflowRecorder(name, framework, instrumented_by("mlflow-tracing"), exporter, **options)
