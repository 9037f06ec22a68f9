"""Class counts keep the null policy they were counted under (issue 49).

Counts aggregated by an engine (a ``GROUP BY``) must give exactly the risk of the rows they
count, under every null policy: a row of the counts stands for ``count`` records, so
``nulls="error"`` counts null *records*, ``"drop"`` leaves out the records of a null QI and
``"value"`` keeps null as a value. The result says which policy it was computed under, and
a population table is counted under the same one. Where the counts cannot tell what a
policy dropped (a Release counted from aggregated rows under ``nulls="drop"``) they are
refused.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fastpriv as fp
from fastpriv import population, risk
from fastpriv.errors import InputError

POLICIES = ("error", "drop", "value")
QI = ["zip", "age", "score"]


def _rows(n: int = 2000, seed: int = 0, with_nulls: bool = True) -> pa.Table:
    """Records with nulls in three QI types (NaN too) and in the sensitive column."""
    rng = np.random.default_rng(seed)

    def holes(p: float) -> np.ndarray:
        return rng.random(n) < (p if with_nulls else 0.0)

    zips = [None if h else f"z{v}" for h, v in zip(holes(0.08), rng.integers(0, 6, n),
                                                    strict=True)]
    ages = [None if h else int(v) for h, v in zip(holes(0.05), rng.integers(20, 27, n),
                                                  strict=True)]
    score = rng.integers(0, 3, n).astype(float)
    score[holes(0.03)] = np.nan                       # NaN is a null
    null_score = holes(0.02)
    disease = [None if h else f"d{v}" for h, v in zip(holes(0.2), rng.integers(0, 4, n),
                                                      strict=True)]
    return pa.table({"zip": pa.array(zips, pa.string()), "age": pa.array(ages, pa.int64()),
                     "score": pa.array(score, mask=null_score),
                     "disease": pa.array(disease, pa.string()),
                     "w": rng.uniform(1.0, 40.0, n)})


def _group_by(t: pa.Table, keys: list[str]) -> pa.Table:
    """What an engine sends back: one row per distinct key, COUNT(*) and Σ sampling weights."""
    return t.group_by(keys).aggregate([([], "count_all"), ("w", "sum")])


def _outcome(fn):
    """The result's dict, or the refusal: (type, message)."""
    try:
        return fn().to_dict()
    except InputError as exc:
        return (type(exc).__name__, str(exc))


# ------------------------------------------------------------------ counts = rows
@pytest.mark.parametrize("nulls", POLICIES)
@pytest.mark.parametrize("keys", [QI, QI + ["disease"]], ids=["qi", "qi+sensitive"])
def test_group_by_counts_audit_like_the_rows(nulls, keys):
    t = _rows()
    agg = _group_by(t, keys)
    assert agg.num_rows < t.num_rows
    cc = lambda: risk.ClassCounts.from_counts(agg, qi=QI, count="count_all", nulls=nulls)  # noqa: E731
    got = _outcome(lambda: risk.audit(cc()))
    want = _outcome(lambda: risk.audit(t, qi=QI, nulls=nulls))
    if nulls == "error":    # both refuse, counting the same null records
        assert got == want
        assert got[0] == "InputError" and "'zip' has" in got[1] and "NaN" in got[1]
        return
    assert isinstance(got, dict) and isinstance(want, dict)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    assert got["params"]["nulls"] == nulls
    assert risk.combinations(cc(), max_set_size=2).to_dict() == \
        risk.combinations(t, qi=QI, max_set_size=2, nulls=nulls).to_dict()


@pytest.mark.parametrize("nulls", ["drop", "value"])
def test_group_by_counts_with_population_and_sampling_weights(nulls):
    t = _rows(seed=1)
    pop = pa.concat_tables([t, _rows(seed=2)]).select(QI)   # holds the sample, has nulls
    agg = _group_by(t, QI)
    cc = risk.ClassCounts.from_counts(agg, qi=QI, count="count_all", nulls=nulls)
    # the population table is counted under the counts' policy (nulls= not repeated)
    got = risk.audit(cc, population=pop).to_dict()
    want = risk.audit(t, qi=QI, population=pop, nulls=nulls).to_dict()
    assert got == want and got["params"]["nulls"] == nulls and got["k_map"] is not None
    # sampling weights: the individual risk (Σ weights summed in another order: approx)
    sw = risk.ClassCounts.from_counts(agg, qi=QI, count="count_all",
                                      sampling_weight_sum="w_sum", nulls=nulls)
    got = risk.audit(sw).to_dict()
    want = risk.audit(t, qi=QI, sampling_weight="w", nulls=nulls).to_dict()
    assert got["individual_max"] is not None
    # the params name the column the sums were read from
    assert got["params"] == {**want["params"], "sampling_weight": "w_sum"}
    for key in set(want) - {"params"}:
        if isinstance(want[key], float):
            assert got[key] == pytest.approx(want[key], rel=1e-12), key
        else:
            assert got[key] == want[key], key
    for fn in (population.k_map, population.delta_presence):
        a = fn(cc, population=pop).to_dict()
        b = fn(t, qi=QI, population=pop, nulls=nulls).to_dict()
        assert a == b and a["params"]["nulls"] == nulls


def test_error_counts_null_records_not_rows():
    agg = pa.table({"a": pa.array([1, None, None, 2], pa.int64()),
                    "b": pa.array([0.5, float("nan"), 1.0, None]), "n": [4, 7, 5, 3]})
    with pytest.raises(InputError) as exc:
        risk.ClassCounts.from_counts(agg, qi=["a", "b"], count="n")
    assert str(exc.value) == (
        "'a' has 12 nulls, 'b' has 10 nulls (including 7 NaN: NaN is a missing value); pass "
        "nulls='drop' to remove those rows or nulls='value' to treat null as a value")


def test_a_null_qi_row_of_count_zero_stands_for_nobody():
    """As a row of weight 0 in a table read with weight=: dropped before the null policy."""
    agg = pa.table({"a": pa.array([1, None, 2], pa.int64()), "n": [3, 0, 2]})
    cc = risk.ClassCounts.from_counts(agg, qi=["a"], count="n")
    ref = risk.class_counts(agg, qi=["a"], weight="n")
    assert cc.to_table().equals(ref.to_table()) and cc.nulls == ref.nulls == "error"


@pytest.mark.parametrize("nulls", POLICIES)
def test_a_null_count_is_refused_under_every_policy(nulls):
    agg = pa.table({"a": [1, 2, 3], "n": pa.array([3, None, 2], pa.int64())})
    with pytest.raises(InputError, match="count: 1 null counts in column 'n'"):
        risk.ClassCounts.from_counts(agg, qi=["a"], count="n", nulls=nulls)


# ------------------------------------------------------------------ the policy is carried
@pytest.mark.parametrize("nulls", POLICIES)
def test_every_constructor_carries_its_policy(nulls, tmp_path):
    t = _rows(with_nulls=nulls != "error")
    path = tmp_path / "t.parquet"
    pq.write_table(t, path, row_group_size=500)
    built = {
        "from_table": risk.ClassCounts.from_table(t, qi=QI, nulls=nulls),
        "from_table path": risk.ClassCounts.from_table(str(path), qi=QI, nulls=nulls),
        "from_table weighted": risk.ClassCounts.from_table(
            _group_by(t, QI), qi=QI, weight="count_all", nulls=nulls),
        "from_counts": risk.ClassCounts.from_counts(_group_by(t, QI), qi=QI,
                                                    count="count_all", nulls=nulls),
        "from_batches": risk.ClassCounts.from_batches(str(path), qi=QI, nulls=nulls,
                                                      batch_size=300),
        "class_counts": risk.class_counts(t, qi=QI, nulls=nulls),
        "merge": risk.class_counts(t.slice(0, 900), qi=QI, nulls=nulls).merge(
            risk.class_counts(t.slice(900), qi=QI, nulls=nulls)),
    }
    ref = built["from_table"]
    for name, cc in built.items():
        assert cc.nulls == nulls, name
        assert cc.params == {"qi": QI, "nulls": nulls}, name
        assert cc.to_dict()["nulls"] == nulls, name
        assert cc.to_table().equals(ref.to_table()), name
        assert risk.audit(cc).params["nulls"] == nulls, name
        assert risk.combinations(cc, max_set_size=1).params["nulls"] == nulls, name


def test_counts_refuse_another_policy_and_parts_of_different_policies():
    t = _rows()
    drop = risk.class_counts(t, qi=QI, nulls="drop")
    assert risk.class_counts(drop, nulls="drop") is drop
    with pytest.raises(InputError, match="counted with nulls='drop', not 'value'"):
        risk.audit(drop, nulls="value")
    with pytest.raises(InputError, match="nulls must be one of"):
        risk.audit(drop, nulls="keep")
    with pytest.raises(InputError, match="different null policies"):
        drop.merge(risk.class_counts(t, qi=QI, nulls="value"))
    with pytest.raises(InputError, match="nulls must be one of"):
        risk.ClassCounts.from_counts(_group_by(t, QI), qi=QI, count="count_all", nulls="x")


# ------------------------------------------------------------------ releases
def test_release_with_null_keys_is_read_under_value():
    t = _rows()
    rel = fp.Release.from_table(t, qi=QI, sensitive="disease", nulls="value")
    cc = risk.class_counts(rel)
    assert cc.nulls == "value"
    assert risk.audit(rel).to_dict() == risk.audit(t, qi=QI, nulls="value").to_dict()
    for other in ("error", "drop"):
        with pytest.raises(InputError, match="holds null values in"):
            risk.audit(rel, nulls=other)


def test_release_without_nulls_keeps_the_given_policy():
    t = _rows(with_nulls=False)
    rel = fp.Release.from_table(t, qi=QI, sensitive="disease", nulls="drop")
    for nulls in POLICIES:       # no null anywhere: every policy counts the same classes
        assert risk.audit(rel, nulls=nulls).to_dict() == \
            risk.audit(t, qi=QI, nulls=nulls).to_dict()


def test_release_counted_from_engine_counts_under_drop_is_refused():
    """The engine's counts dropped the rows of a null sensitive value too: unknowable here."""
    t = _rows()
    agg = _group_by(t, QI + ["disease"])
    rel = fp.Release.from_counts(agg, group=QI, sensitive="disease", count="count_all",
                                 nulls="drop")
    for data in (rel, fp.Release.from_batches(t.to_batches(max_chunksize=400), qi=QI,
                                              sensitive="disease", nulls="drop")):
        with pytest.raises(InputError, match="keeps no record of the rows nulls='drop' "
                                             "removed.*ClassCounts.from_counts"):
            risk.audit(data, nulls="drop")
        with pytest.raises(InputError, match="keeps no record"):
            population.k_map(data, population=t, nulls="drop")
    # what the message says to do gives the in-memory answer
    cc = risk.ClassCounts.from_counts(agg, qi=QI, count="count_all", nulls="drop")
    assert risk.audit(cc).to_dict() == risk.audit(t, qi=QI, nulls="drop").to_dict()
    # the refused release really would be wrong: it lost the null-sensitive records
    assert rel.n_individuals < cc.n_records
    assert int(pc.sum(agg.column("count_all")).as_py()) > cc.n_records
