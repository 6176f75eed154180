"""The OTLP subsystem: OpenTelemetry traces of agents mapped to v1 records.

``decode_json`` (with its fast path ``decode_json_fast``) and ``decode_proto``
turn OTLP/JSON and OTLP/protobuf into the same flat spans; ``kinds`` says what
a span is, ``edges`` who called whom, ``spans`` indexes a trace, ``steps`` and
``errors`` fill an agent's run, and ``convert`` (:class:`OtlpConverter`) maps
a file's spans to records (see ``docs/otlp.md``).
"""
