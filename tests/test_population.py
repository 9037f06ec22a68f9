"""k-map and δ-presence have one implementation (issue 49).

``risk.audit`` reports them among its measures and :mod:`fastpriv.population` as verdict
models with a witness; both read the
:class:`~fastpriv.class_histogram.PopulationHistogram` of the match (in memory as on every
engine), so they cannot drift apart. (The oracle tests of both models are in ``tests/test_registry.py``.)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import population, risk
from fastpriv.class_histogram import PopulationHistogram
from fastpriv.errors import InputError

QI = ["a", "b"]


def _tables(seed: int) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    n, extra = int(rng.integers(1, 200)), int(rng.integers(0, 200))
    pop = pa.table({"a": rng.integers(0, int(rng.integers(1, 6)), n + extra),
                    "b": rng.choice(["x", "y", "z"], n + extra)})
    return pop.take(pa.array(rng.choice(n + extra, size=n, replace=False))), pop


def test_both_read_the_one_population_match(monkeypatch):
    """Change the one implementation and both callers follow."""
    sample, pop = _tables(0)
    monkeypatch.setattr(PopulationHistogram, "k_map", lambda self: (12345, self.rarest))
    monkeypatch.setattr(PopulationHistogram, "delta",
                        lambda self: (0.75, 0.25, self.most_exposed))
    m = risk.audit(sample, qi=QI, population=pop).measures
    assert (m["k_map"], m["delta_max"], m["delta_min"]) == (12345, 0.75, 0.25)
    assert population.k_map(sample, qi=QI, population=pop).value == 12345
    dp = population.delta_presence(sample, qi=QI, population=pop)
    assert (dp.value, dp.delta_min) == (0.75, 0.25)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(0, 10_000))
def test_audit_and_the_models_agree_and_match_the_definitions(seed):
    sample, pop = _tables(seed)
    m = risk.audit(sample, qi=QI, population=pop).measures
    km = population.k_map(sample, qi=QI, population=pop)
    dp = population.delta_presence(sample, qi=QI, population=pop)
    assert (m["k_map"], m["delta_max"], m["delta_min"]) == (km.value, dp.value, dp.delta_min)
    f = sample.group_by(QI).aggregate([([], "count_all")]).to_pylist()
    big = {(r["a"], r["b"]): r["count_all"]
           for r in pop.group_by(QI).aggregate([([], "count_all")]).to_pylist()}
    assert km.value == min(big[(r["a"], r["b"])] for r in f)
    assert dp.value == max(r["count_all"] / big[(r["a"], r["b"])] for r in f)
    assert dp.delta_min == (min(r["count_all"] / big[(r["a"], r["b"])] for r in f)
                            if len(f) == len(big) else 0.0)
    for res in (km, dp):                    # the witness class attains the value
        w = res.witness
        assert w.population_size == big[(w.qi_values["a"], w.qi_values["b"])]
    assert km.witness.population_size == km.value
    assert dp.witness.size / dp.witness.population_size == dp.value


def test_match_population_refuses_a_population_without_the_data():
    cc = risk.class_counts(pa.table({"a": [1, 1], "b": ["x", "x"]}), qi=QI)
    with pytest.raises(InputError, match="the population must contain the data"):
        risk.match_population(cc, pa.table({"a": [1], "b": ["x"]}))
    match = risk.match_population(cc, pa.table({"a": [1, 1, 1, 2], "b": ["x"] * 4}))
    assert match.big_f.tolist() == [3.0]
    assert (match.n_population, match.n_population_classes) == (4, 2)
    one = {"qi_values": {"a": 1, "b": "x"}, "size": 2, "population_size": 3}
    assert match.histogram().k_map() == (3, one)
    assert match.histogram().delta() == (2 / 3, 0.0, one)
