"""Re-identification risk as an anonymization criterion (ARX's risk-based privacy models)."""

import json
import math
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import risk
from fastpriv.anonymize import lattice_search
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.cli import main
from fastpriv.errors import InputError
from fastpriv.predicates import (
    AverageRisk,
    HighestRisk,
    RecordsAtRisk,
    criteria_from,
)

QI = ["age", "sex", "race", "marital_status"]


def _release(sizes):
    groups = np.repeat(np.arange(len(sizes)), sizes)
    return fp.Release.from_table(pa.table({"g": groups, "s": np.zeros(groups.size, np.int8)}),
                                 sensitive="s", group="g")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=25), st.floats(0.01, 1.0))
def test_risk_values_are_the_risk_audit_numbers(sizes, thr):
    rel = _release(sizes)
    n, u = sum(sizes), len(sizes)
    assert HighestRisk(0.5).value(rel) == pytest.approx(1 / min(sizes))
    assert AverageRisk(0.5).value(rel) == pytest.approx(u / n)
    at = sum(s for s in sizes if 1 / s > thr) / n
    assert RecordsAtRisk(thr, 0.5).value(rel) == pytest.approx(at)
    # the same numbers as risk.audit on the rows
    t = pa.table({"q": np.repeat(np.arange(len(sizes)), sizes)})
    m = risk.audit(t, qi=["q"], threshold=thr).measures
    assert m["prosecutor_max"] == pytest.approx(HighestRisk(0.5).value(rel))
    assert m["prosecutor_avg"] == pytest.approx(AverageRisk(0.5).value(rel))
    assert m["prosecutor_above_threshold"] == pytest.approx(at)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 30), min_size=2, max_size=25), st.data())
def test_average_and_records_at_risk_are_monotone(sizes, data):
    # merging two classes (what generalization does) never raises either risk
    i = data.draw(st.integers(0, len(sizes) - 2))
    merged = sizes[:i] + [sizes[i] + sizes[i + 1]] + sizes[i + 2:]
    a, b = _release(sizes), _release(merged)
    assert AverageRisk(1).value(b) <= AverageRisk(1).value(a)
    assert RecordsAtRisk(0.2, 1).value(b) <= RecordsAtRisk(0.2, 1).value(a)
    assert HighestRisk(1).value(b) <= HighestRisk(1).value(a)


def test_highest_risk_is_k_anonymity_with_k_ceil_inverse():
    assert HighestRisk(0.2).k == 5 and HighestRisk(0.21).k == 5 and HighestRisk(0.19).k == 6
    assert HighestRisk(1).k == 1
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(InputError, match="max_risk"):
            HighestRisk(bad)


@pytest.fixture(scope="module")
def adult():
    return fp.datasets.load_adult().select(QI)


@pytest.mark.parametrize("kw", [{"max_risk": 0.1}, {"max_avg_risk": 0.02},
                                {"max_records_at_risk": 0.01, "risk_threshold": 0.1}])
def test_lattice_search_meets_a_monotone_risk_criterion_minimally(adult, kw):
    crit = criteria_from(**kw)
    res = lattice_search(adult, qi=QI, predicate=crit)      # no sensitive column needed
    assert crit(res.release)
    # every node one step below a minimal node fails the criterion
    from fastpriv.anonymize.lattice import GeneralizationLattice

    lat = GeneralizationLattice(adult, QI, None)
    for node in res.minimal:
        for a in range(len(node)):
            if node[a] == 0:
                continue
            below = tuple(x - (i == a) for i, x in enumerate(node))
            assert not crit(lat.release(below)), (node, below)


def test_population_uniqueness_search_checks_every_node(adult):
    crit = criteria_from(max_uniqueness=0.001, population=1_000_000)
    assert not crit.monotone
    sub = adult.select(["age", "sex", "race"])
    res = lattice_search(sub, qi=["age", "sex", "race"], predicate=crit)
    from fastpriv.anonymize.lattice import GeneralizationLattice

    lat = GeneralizationLattice(sub, ["age", "sex", "race"], None)
    sat = {tuple(map(int, n)) for n in lat.nodes if crit(lat.release(tuple(map(int, n))))}
    minimal = {n for n in sat if not any(m != n and all(x <= y for x, y in zip(m, n,
                                                                              strict=True))
                                          for m in sat)}
    assert set(map(tuple, res.minimal)) == minimal
    with pytest.raises(InputError, match="population"):
        criteria_from(max_uniqueness=0.01)


def test_risk_threshold_search_from_the_cli(tmp_path, capsys):
    out = tmp_path / "r.parquet"
    rc = main(["anonymize", "adult", "--method", "lattice", "--qi", *QI,
               "--max-risk", "0.05", "--max-avg-risk", "0.01", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "highest-risk(max=0.05)" in text and "average-risk(max=0.01)" in text
    import pyarrow.parquet as pq

    rel = pq.read_table(out)
    assert rel.column_names == [*QI, "group_id"]             # no sensitive column
    sizes = np.bincount(rel.column("group_id").to_numpy())
    assert sizes.min() >= math.ceil(1 / 0.05) and sizes.size / sizes.sum() <= 0.01
    assert main(["anonymize", "adult", "--method", "lattice", "--qi", *QI, "--l", "2"]) == 2
    assert "reads the sensitive value; pass sensitive=" in capsys.readouterr().err


# ---------------------------------------------------------------------- ARX's own files
ARX_DIR = os.path.join(os.path.dirname(__file__), "data", "arx")
ARX_ADULT = os.path.join(ARX_DIR, "adult.csv.gz")
ARX_QI = ["sex", "age", "race", "marital-status", "education", "native-country",
          "workclass", "occupation", "salary-class"]
USA = 317_238_626       # ARXPopulationModel.Region.USA


@pytest.fixture(scope="module")
def arx_adult():
    return fp.read_csv(ARX_ADULT)


def _kept_sizes(group_ids):
    gid = np.asarray(group_ids)
    return np.bincount(gid[gid >= 0])


def test_average_risk_with_suppression_is_arx(arx_adult):
    """ARX 3.9.2 on its Adult (9 QIs, its hierarchies), 2 % suppression, average risk 0.01,
    loss, optimum: loss 0.2892, 509 rows suppressed."""
    res = lattice_search(arx_adult, qi=ARX_QI, hierarchies=ARX_DIR,
                         predicate=criteria_from(max_avg_risk=0.01), suppression=0.02,
                         utility="loss", objective="optimal")
    assert round(res.optimum["value"], 4) == 0.2892
    gid = np.asarray(res.group_ids)
    assert int(np.sum(gid < 0)) == 509 <= math.floor(0.02 * arx_adult.num_rows)
    sizes = _kept_sizes(gid)
    assert sizes.size / sizes.sum() <= 0.01          # the risk of the records kept
    # the classes suppressed are the smallest of the node's classes (ARX's enforcement)
    lat = GeneralizationLattice(arx_adult, ARX_QI, None, ARX_DIR)
    g, n = lat.cell_groups(res.best)
    every = np.bincount(g, weights=lat._cw, minlength=n)
    kept_class = np.zeros(n, dtype=bool)
    kept_class[g[lat._row_cell][gid >= 0]] = True
    assert every[~kept_class].max() <= every[kept_class].min()
    assert lat.utility(res.best, "loss", predicate=criteria_from(max_avg_risk=0.01),
                       suppression=0.02) == res.optimum["value"]
    # the keyword form
    kw = lattice_search(arx_adult, qi=ARX_QI, hierarchies=ARX_DIR, max_avg_risk=0.01,
                        suppression=0.02, utility="loss", objective="optimal",
                        materialize=False)
    assert (kw.best, kw.optimum["value"]) == (res.best, res.optimum["value"])


def test_average_risk_with_suppression_is_arx_from_the_cli(tmp_path, capsys):
    out, j = tmp_path / "release.parquet", tmp_path / "summary.json"
    rc = main(["anonymize", ARX_ADULT, "--method", "lattice", "--qi", *ARX_QI,
               "--hierarchies", ARX_DIR, "--max-avg-risk", "0.01", "--suppression", "0.02",
               "--utility", "loss", "--objective", "optimal", "-o", str(out),
               "--json", str(j)])
    assert rc in (0, None)
    payload = json.loads(j.read_text())
    assert payload["n_suppressed"] == 509
    assert round(payload["optimum"]["value"], 4) == 0.2892
    import pyarrow.parquet as pq

    sizes = np.bincount(pq.read_table(out).column("group_id").to_numpy())
    assert sizes.sum() == 30162 - 509 and sizes.size / sizes.sum() <= 0.01


def test_records_at_risk_with_suppression(adult):
    """Records at risk with a budget: the release suppresses at most the budget and meets it."""
    crit = criteria_from(max_records_at_risk=0.05, risk_threshold=0.2)
    res = lattice_search(adult, qi=QI, predicate=crit, suppression=0.01, utility="loss",
                         objective="optimal")
    assert res.strategy == "bounded"          # not monotone with suppression
    gid = np.asarray(res.group_ids)
    assert int(np.sum(gid < 0)) <= math.floor(0.01 * adult.num_rows)
    sizes = _kept_sizes(gid)
    assert sizes[sizes < 5].sum() / sizes.sum() <= 0.05
    with pytest.raises(InputError, match="suppression needs"):
        lattice_search(fp.datasets.load_adult(QI + ["occupation"]), qi=QI,
                       sensitive="occupation", suppression=0.01,
                       predicate=[fp.predicates.CKSafety(0.9, 1), criteria_from(max_risk=0.1)])


@pytest.mark.slow   # the exhaustive search checks all 12,960 nodes (about 15 s)
def test_uniqueness_optimum_bounded_equals_exhaustive_on_arx_adult(arx_adult):
    """Population uniqueness (Dankar, USA, 0.01) on ARX's Adult, 9 QIs: the bounded search
    (ARX checks 37 nodes) returns the exhaustive search's optimum under every measure with
    a node-only bound."""
    lat = GeneralizationLattice(arx_adult, ARX_QI, None, ARX_DIR)
    crit = criteria_from(max_uniqueness=0.01, population=USA)
    exh = lat.search(crit, utility="loss", objective="optimal", strategy="exhaustive",
                     materialize=False)
    sat = lat.nodes[exh.satisfying]
    for m in ("loss", "entropy", "nm_entropy", "nm_precision", "height", "precision"):
        res = lat.search(crit, utility=m, objective="optimal", materialize=False)
        assert res.strategy == "bounded" and res.n_checked < 50, (m, res.n_checked)
        vals = lat._node_scores(sat, m)            # every satisfying node's score
        want = min(zip(vals.tolist(), sat.sum(1).tolist(), map(tuple, sat.tolist()), strict=True))
        assert (res.best, res.scores[res.best]) == (want[2], want[0]), m
        got = lat.utility(res.best, m)
        assert res.scores[res.best] == (-got if m == "precision" else got)
        if m == "loss":
            assert (res.best, res.scores[res.best]) == (exh.best, exh.scores[exh.best])
            assert res.n_checked <= 37
