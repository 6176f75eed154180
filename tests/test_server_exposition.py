"""The text exposition format: any label value and help text reads back through Prometheus's parser."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from tracekit.server.exposition import Family, escape_label, render

# Names from traces: any text, with the three characters the format escapes made likely.
names = st.text(alphabet=st.characters(blacklist_categories=["Cs"]) | st.sampled_from('\\"\n{}=,'))


@given(value=names, other=names)
def test_any_label_value_reads_back_as_itself(value: str, other: str) -> None:
    help_text = 'Runs\\ by "service"\nand outcome.'  # ours, not data: escaped all the same
    family = Family(
        "tracekit_runs", "gauge", help_text, [({"service": value, "outcome": other}, 3)]
    )
    [parsed] = text_string_to_metric_families(render([family]))
    [sample] = parsed.samples
    assert sample.labels == {"service": value, "outcome": other}
    assert sample.value == 3 and parsed.type == "gauge"
    assert parsed.documentation == help_text


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 2**62))
def test_any_number_reads_back(value: float) -> None:
    text = render([Family("tracekit_x_total", "counter", "x", [({}, value)])])
    [parsed] = text_string_to_metric_families(text)
    got = parsed.samples[0].value
    assert (math.isnan(got) and math.isnan(value)) or got == float(value)


def test_every_line_is_one_line_however_hostile_the_name() -> None:
    text = render([Family("tracekit_runs", "gauge", "a\nb", [({"agent": 'x"\n} 1\n#'}, 1)])])
    assert text.count("\n") == 3 and text.endswith("\n")  # HELP, TYPE, one sample, no more
    assert escape_label('x"\n\\') == 'x\\"\\n\\\\'
