"""Ties at the cut-off: an engine's row counts and the in-memory table, in ANY row order,
name the same worst people in the same order (issue 49).

The row counts of DuckDB, Dask and Spark come sorted by content (QI, group, sensitive);
an in-memory table comes in whatever order its rows were written. r-robustness and the
foreground attack break ties (the first of equal posteriors: the witness, the worst-N
list, the problematic entries, a group's tuples) by one content rule
(:attr:`fastpriv.rows.RowView.content_order`), so the result does not depend on the
input's row order. Here the in-memory reference is the expanded table SHUFFLED (unlike
tests/test_engines_rowlevel.py, which sorts it first); each of its row numbers is mapped
to the row of the count table with the same content, and the two ``to_dict()`` must be
equal (floats to 1e-13), timings left out.
"""

from __future__ import annotations

import math
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import Release, foreground, pushdown, robustness
from tests.spark_session import local_session
from tests.test_engines_rowlevel import (
    MODELS,
    SETTINGS,
    _assert_close,
    _expanded,
    _no_seconds,
    _outcome,
    _people_per_row,
    _write_parts,
    row_tables,
)


def _norm(x):
    return None if isinstance(x, float) and math.isnan(x) else x


def _content_rows(counts: pa.Table, ref: pa.Table, cols: list[str]) -> np.ndarray:
    """For each row of ``ref``, the row of ``counts`` with the same labels (NaN = null)."""
    where = {tuple(_norm(v) for v in r.values()): i
             for i, r in enumerate(counts.select(cols).to_pylist())}
    return np.array([where[tuple(_norm(v) for v in r.values())]
                     for r in ref.select(cols).to_pylist()], dtype=np.int64)


def _mapped(d, row_of: np.ndarray):
    """Replace every reference row number (key ``"row"``) by its count-table row."""
    if isinstance(d, dict):
        return {k: (int(row_of[v]) if k == "row" and isinstance(v, int) and v >= 0
                    else _mapped(v, row_of)) for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [_mapped(v, row_of) for v in d]
    return d


MODEL_PARAMS = [pytest.param("robustness", id="robustness"),
                pytest.param("foreground", id="foreground")]


def assert_same_in_any_order(counts: pa.Table, table: pa.Table, qi: list[str], group: str,
                             sensitive: str, weight: str | None, perm: np.ndarray,
                             nulls_policies=("value", "drop"), models=tuple(MODELS)) -> None:
    """The audits of ``counts`` (``weight="count"``) equal those of the expanded ``table``
    with its individuals in the order ``perm``, rows mapped by content."""
    cols = qi + [group, sensitive]
    ref = _expanded(table, weight)
    assert perm.size == ref.num_rows
    ref = ref.take(pa.array(perm, pa.int64()))
    row_of = _content_rows(counts, ref, cols) if ref.num_rows else np.zeros(0, np.int64)
    for nulls in nulls_policies:
        kw = dict(qi=qi, group=group, sensitive=sensitive, nulls=nulls)
        for name in models:
            model = MODELS[name]
            want = _outcome(model, ref, **kw)
            got = _outcome(model, counts, weight="count", **kw)
            assert got[0] == want[0], (name, nulls, got, want)
            if want[0] != "ok":
                assert got == want
                continue
            g, w = got[1].to_dict(), _mapped(want[1].to_dict(), row_of)
            if name == "foreground":
                w["worst"] = _people_per_row(w["worst"])
                assert sum(t["people"] for t in g["worst"]) == min(10, got[1].n_rows)
                for k in (1, 3, int(want[1].posterior.size)):
                    _assert_close(_no_seconds(got[1].worst(k)),
                                  _people_per_row(_mapped(want[1].worst(k), row_of)),
                                  f"{name}.worst({k})")
            _assert_close(_no_seconds(g), w, f"{name} nulls={nulls}")


def _shuffled(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n)


def _n_people(table: pa.Table, weight: str | None) -> int:
    return int(np.sum(table.column(weight).to_numpy())) if weight else table.num_rows


# ------------------------------------------------------------------ the reported case
def _tied_table(seed: int, n: int = 60) -> pa.Table:
    """Few distinct values: many equal posteriors, the 10th worst tied with the 11th."""
    rng = np.random.default_rng(seed)
    return pa.table({"q": pa.array(rng.integers(0, 3, n)), "g": pa.array(rng.integers(0, 4, n)),
                     "s": pa.array(rng.choice(["a", "b"], n))})


def _tied_counts(t: pa.Table):
    import duckdb

    counts = pushdown.row_counts(duckdb.from_arrow(t), qi=["q"], group="g", sensitive="s")
    return counts, _content_rows(counts, t, ["q", "g", "s"])


def test_foreground_worst_ten_tied_at_the_cut_off_duckdb():
    """The report: the ten worst people, tied with the eleventh; the engine named other
    people (in fewer list entries) than memory, which took the tied rows in input order."""
    t = _tied_table(0)
    counts, row_of = _tied_counts(t)
    kw = dict(qi=["q"], group="g", sensitive="s", r=2)
    mem = foreground.attack(t, **kw)
    eng = foreground.attack(counts, weight="count", **kw)
    post = np.sort(mem.posterior)[::-1]
    assert post[9] == post[10]                    # a tie at the cut-off
    people = _people_per_row(_mapped(mem.worst(10), row_of))
    assert [(p["row"], p["people"]) for p in people] == \
        [(p["row"], p["people"]) for p in eng.worst(10)]
    assert row_of[mem.witness.row] == eng.witness.row


def test_robustness_witness_and_problematic_order_tied_duckdb():
    """r-robustness on the same table: the witness and the problematic list (all tied at
    the maximum) name the same people in memory and on DuckDB's row counts."""
    t = _tied_table(0)
    counts, row_of = _tied_counts(t)
    kw = dict(qi=["q"], group="g", sensitive="s", r=2)
    mem = robustness.audit(t, **kw)
    eng = robustness.audit(counts, weight="count", **kw)
    assert np.unique(mem.problematic_posteriors).size < mem.n_problematic     # ties
    assert row_of[mem.witness.row] == eng.witness.row
    assert row_of[mem.problematic_rows].tolist() == eng.problematic_rows.tolist()
    gw = mem.group_witness_row
    assert np.where(gw >= 0, row_of[np.maximum(gw, 0)], -1).tolist() == \
        eng.group_witness_row.tolist()
    assert_same_in_any_order(counts, t, ["q"], "g", "s", None, np.arange(t.num_rows),
                             models=("robustness",))


@pytest.mark.parametrize("model", MODEL_PARAMS)
def test_result_does_not_depend_on_row_order(model):
    """In memory alone: the same table in two row orders names the same people (rows of
    equal content are interchangeable: both are mapped to their content's row count)."""
    t = _tied_table(1, 40)
    u = t.take(pa.array(_shuffled(t.num_rows, 5)))
    counts, rows_t = _tied_counts(t)
    rows_u = _content_rows(counts, u, ["q", "g", "s"])
    fn = MODELS[model]
    kw = dict(qi=["q"], group="g", sensitive="s")
    a, b = _mapped(fn(t, **kw).to_dict(), rows_t), _mapped(fn(u, **kw).to_dict(), rows_u)
    if model == "foreground":
        a["worst"], b["worst"] = _people_per_row(a["worst"]), _people_per_row(b["worst"])
    _assert_close(_no_seconds(b), _no_seconds(a), model)


def test_content_order_is_the_row_counts_order():
    """The rule itself: held rows by QI codes, group, sensitive value, then row number."""
    import duckdb

    from fastpriv import InputError

    t = pa.table({"a": [3, 1, 3, 2, 1], "g": [1, 0, 1, 0, 0], "s": ["y", "x", "x", "y", "x"]})
    v = Release.from_table(t, qi=["a"], group="g", sensitive="s").rows
    assert v.content_order.tolist() == [1, 4, 3, 2, 0]
    assert v.content_rank[v.content_order].tolist() == list(range(5))
    goff, order = v.group_order
    assert goff.tolist() == [0, 3, 5] and order.tolist() == [1, 4, 3, 2, 0]
    score = np.array([0.5, 0.5, np.nan, 0.9, 0.5])
    assert v.ranked(score).tolist() == [3, 1, 4, 0, 2]
    counts = pushdown.row_counts(duckdb.from_arrow(t), qi="a", group="g", sensitive="s")
    rows = t.take(pa.array(v.content_order)).select(["a", "g", "s"]).to_pylist()
    distinct = [r for i, r in enumerate(rows) if i == 0 or r != rows[i - 1]]
    assert counts.select(["a", "g", "s"]).to_pylist() == distinct      # rows 1, 4: one
    with pytest.raises(InputError, match="score"):
        v.ranked(np.zeros(3))


# ------------------------------------------------------------------ DuckDB and Dask
@pytest.mark.parametrize("model", MODEL_PARAMS)
@settings(max_examples=40, **SETTINGS)
@given(data=row_tables(max_rows=20), seed=st.integers(0, 2**16))
def test_random_tables_any_row_order_duckdb_and_dask(model, data, seed):
    import dask
    import duckdb

    from fastpriv import distributed

    table, qi, group, sens, weight = data
    kw = dict(qi=qi, group=group, sensitive=sens, weight=weight)
    duck = pushdown.row_counts(duckdb.from_arrow(table), **kw)
    with tempfile.TemporaryDirectory() as tmp, dask.config.set(scheduler="synchronous"):
        _write_parts(table, tmp, 2)
        dsk = distributed.row_counts(tmp, split_every=2, **kw)
    assert dsk.equals(duck)
    assert_same_in_any_order(duck, table, qi, group, sens, weight,
                             _shuffled(_n_people(table, weight), seed), models=(model,))


# ------------------------------------------------------------------ Spark (small)
@pytest.mark.slow
@pytest.mark.parametrize("model", MODEL_PARAMS)
def test_tied_tables_any_row_order_spark(model):
    import fastpriv.spark as fs

    spark = local_session("fastpriv-ties-tests")
    for seed, weighted in ((2, False), (3, True)):
        t = _tied_table(seed, 30)
        if weighted:
            t = t.append_column("w", pa.array(np.random.default_rng(seed).integers(0, 3, 30)))
        weight = "w" if weighted else None
        df = spark.createDataFrame(t).repartition(2)
        got = fs.row_counts(df, qi=["q"], group="g", sensitive="s", weight=weight)
        assert_same_in_any_order(got, t, ["q"], "g", "s", weight,
                                 _shuffled(_n_people(t, weight), seed),
                                 nulls_policies=("error",), models=(model,))
