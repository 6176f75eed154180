"""Framework shapes are asked only of the spans they may claim (tracekit.intake.otlp.shapes)."""

from __future__ import annotations

from pathlib import Path

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from tracekit.intake.otlp import shapes
from tracekit.intake.otlp.decode_json import Span, decode_spans
from tracekit.intake.otlp.inputs import CURRENT_AGENT

RECORDINGS = Path(__file__).parent / "frameworks" / "recordings"
FRAMEWORKS = sorted(p.name for p in RECORDINGS.iterdir() if p.is_dir())


def _claimable(shape: shapes.Shape, span: Span) -> bool:
    named = shape.names is None or shape.names(span.name)
    return named or not shape.keys.isdisjoint(span.attrs)


def _recorded_spans() -> list[Span]:
    found: list[Span] = []
    for path in sorted(RECORDINGS.glob("*/*.otlp.json")):
        found.extend(decode_spans(msgspec.json.decode(path.read_bytes())))
    return found


def test_every_recorded_span_a_shape_recognises_is_one_its_names_or_keys_admit() -> None:
    spans = _recorded_spans()
    assert len({span.trace for span in spans}) >= len(FRAMEWORKS)
    recognised = {shape.name: 0 for shape in shapes.SHAPES}
    for span in spans:
        for shape in shapes.SHAPES:
            if shape.recognise(span):
                recognised[shape.name] += 1
                assert _claimable(shape, span), (shape.name, span.name)
    assert recognised["smolagents"] and recognised["llama_index"] and recognised["OpenInference"]


_NAMES = st.sampled_from(
    ["billing.run", "AgentWorkflow.run", "FunctionAgent.run", "Step 1", "invoke_agent a", "x.run"]
) | st.text(max_size=12)
_KEYS = st.sampled_from(
    [CURRENT_AGENT, "smolagents.max_steps", "openinference.span.kind", "gen_ai.agent.name", "x"]
)


@given(name=_NAMES, keys=st.lists(_KEYS, max_size=3), value=st.sampled_from(["AGENT", "TOOL", "b"]))
def test_a_span_no_shape_may_claim_gets_no_verdict(name: str, keys: list[str], value: str) -> None:
    span = Span("t", "a", "", name, 1, 2, dict.fromkeys(keys, value), False, "", None)
    for shape in shapes.SHAPES:
        assert not shape.recognise(span) or _claimable(shape, span), shape.name
    if not shapes.may_decide(span):
        assert shapes.agent_verdict(span) is None
        assert shapes.workflow_verdict(span) is None


def test_a_span_name_is_looked_up_once() -> None:
    span = Span("t", "a", "", "a name only this test uses", 1, 2, {}, False, "", None)
    assert not shapes.may_decide(span)
    assert shapes.DECIDER_NAMES["a name only this test uses"] is False
    smol = Span("t", "b", "", "billing.run", 1, 2, {"smolagents.max_steps": 6}, False, "", None)
    assert shapes.may_decide(smol) and shapes.agent_verdict(smol) is True
    assert shapes.agent_name(smol) == "billing"
