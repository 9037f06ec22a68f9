"""Re-identification risk in the data owner's words (issue 48): journalist and marketer
always shown (the value, or why not and what gives it), population uniques as a share of
the population, sampling-weight measures only when sampling weights are given."""

import pyarrow as pa

from fastpriv import risk


def _table():
    return pa.table({"age": [30, 30, 30, 40, 40, 50], "sex": ["M", "M", "M", "F", "F", "F"],
                     "w": [2.0, 2.0, 2.0, 3.0, 3.0, 10.0]})


def test_population_size_names_what_journalist_risk_needs_and_gives_uniques_as_a_share():
    res = risk.audit(_table(), qi=["age", "sex"], population=1_000_000)
    text = res.summary()
    assert "Journalist and marketer risk: not measured" in text
    assert "--population TABLE" in text
    pu = res.measures["population_uniques"]["dankar"]
    assert f"{pu:,.0f} people" in text
    assert f"{pu / 1_000_000:.4%} of the population of 1,000,000" in text
    assert "e+" not in text
    assert "Individual risk" not in text          # no sampling weights were given
    assert res.measures["individual_max"] is not None  # still in the JSON


def test_without_population_journalist_equals_prosecutor_and_is_shown():
    res = risk.audit(_table(), qi=["age", "sex"])
    text = res.summary()
    assert "Journalist (sample (no population given)): highest 1," in text


def test_sampling_weights_show_individual_risk():
    res = risk.audit(_table(), qi=["age", "sex"], sampling_weight="w")
    assert "Individual risk (sampling weights 'w')" in res.summary()


def test_population_table_gives_journalist_and_marketer_values():
    pop = pa.table({"age": [30] * 5 + [40] * 4 + [50] * 2,
                    "sex": ["M"] * 5 + ["F"] * 6})
    res = risk.audit(_table(), qi=["age", "sex"], population=pop)
    text = res.summary()
    assert f"highest {res.measures['journalist_max']:.4g}" in text
    assert f"marketer {res.measures['marketer']:.4g}" in text
