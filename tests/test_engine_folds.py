"""Audits as folds on every engine: only summaries travel, the answer is the in-memory one.

The classical models, the privacy skyline and (c,k)-safety are folds over groups
(:mod:`fastpriv.folds`). A state built from any split of the groups, merged in any order,
answers as the in-memory audit of the whole release (values, curves, witness labels, and
group indices where the parts knew their offsets). DuckDB (:func:`fastpriv.pushdown.audit`:
ordered counts streamed into the clustered fold), Spark (:func:`fastpriv.spark.audit`: the
fold on the executors) and Dask (:func:`fastpriv.distributed.groupwise_audit`) each give
the in-memory answer on random tables with nulls, ties and weights.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import InputError, Release, ck_safety, classic, pushdown, skyline, spark
from fastpriv.folds import CkState, GroupwiseState
from tests.engines import CK_K, POINTS, _without_rows, tables
from tests.spark_session import local_session

SKY = {"*": POINTS}


def _in_memory(table: pa.Table, kw: dict, k: int = CK_K) -> dict | None:
    """The reference: classic, (c,k) and skyline audits of the in-memory release."""
    try:
        rel = Release.from_table(table, **kw)
        return {"classic": classic.audit(rel).to_dict(),
                "ck": _without_rows(ck_safety.audit(rel, k=k).to_dict()),
                "skyline": skyline.check(rel, skylines=SKY).to_dict()}
    except InputError:
        return None


def _without_indices(x):
    """A (c,k) result with its group indices left out (not known across partitions)."""
    if isinstance(x, dict):
        return {k: _without_indices(v) for k, v in x.items() if k not in ("group", "groups")}
    if isinstance(x, list):
        return [_without_indices(v) for v in x]
    return x


def _split_states(rel_table: pa.Table, k: int, cuts: list[int], offsets: bool,
                  order: list[int]) -> CkState:
    """Fold the groups of ``rel_table`` (columns g, s) cut at group positions ``cuts``."""
    rel = Release.from_table(rel_table, group="g", sensitive="s")
    labels = np.array(rel.group_labels)
    bounds = [0, *cuts, rel.n_groups]
    states = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        part = rel_table.filter(pa.array(np.isin(rel_table["g"].to_numpy(), labels[a:b])))
        states.append(CkState(k).update(Release.from_table(part, group="g", sensitive="s"),
                                        offset=a if offsets else None))
    state = states[order[0] % len(states)]
    rest = [s for i, s in enumerate(states) if i != order[0] % len(states)]
    for s in rest:
        state = state.merge(s) if len(order) % 2 else s.merge(state)
    return state


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 8), ties=st.booleans(),
       offsets=st.booleans(), order=st.lists(st.integers(0, 9), min_size=1, max_size=4))
def test_ck_state_any_split_any_merge_order_equals_in_memory(seed, k, ties, offsets, order):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 2000 if ties else 300))
    groups = int(rng.integers(1, 600 if ties else 50))
    values = int(rng.integers(2, 4) if ties else rng.integers(1, 7))
    t = pa.table({"g": rng.integers(0, groups, n), "s": rng.integers(0, values, n)})
    rel = Release.from_table(t, group="g", sensitive="s")
    want = _without_rows(ck_safety.audit(rel, k=k).to_dict())
    n_cuts = min(rel.n_groups - 1, int(rng.integers(0, 6)))
    cuts = sorted(rng.choice(np.arange(1, rel.n_groups), n_cuts, replace=False).tolist()) \
        if n_cuts > 0 else []
    got = _split_states(t, k, cuts, offsets, order).result().to_dict()
    if offsets:
        assert got == want
    else:
        assert _without_indices(got) == _without_indices(want)


def test_ck_state_keeps_a_bounded_number_of_groups():
    """10,000 groups fold into a state of the few groups the answer can depend on."""
    rng = np.random.default_rng(0)
    t = pa.table({"g": np.repeat(np.arange(10_000), 4),
                  "s": rng.integers(0, 3, 40_000)})
    rel = Release.from_table(t, group="g", sensitive="s")
    state = CkState(3).update(rel, offset=0)
    kept = Release.from_counts(state.counts, group=["g"], sensitive="value", count="count",
                               nulls="value")
    assert kept.n_groups <= 60
    assert _without_rows(state.result().to_dict()) == \
        _without_rows(ck_safety.audit(rel, k=3).to_dict())


def test_ck_states_with_different_k_are_not_merged():
    with pytest.raises(InputError, match="different k"):
        CkState(2).merge(CkState(3))
    with pytest.raises(InputError, match="different parameters"):
        GroupwiseState(k=2).merge(GroupwiseState(k=3))


# ------------------------------------------------------------------ DuckDB
def _kw_of(data, table):
    weights = data.draw(st.lists(st.integers(0, 3), min_size=table.num_rows,
                                 max_size=table.num_rows), label="weights")
    table = table.append_column("w", pa.array(weights, pa.int64()))
    weight = data.draw(st.sampled_from([None, "w"]), label="weight")
    nulls = data.draw(st.sampled_from(["value", "drop", "error"]), label="nulls")
    return table, {"sensitive": "s", "nulls": nulls, "weight": weight}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_duckdb_fold_equals_in_memory(data):
    table, kw = _kw_of(data, data.draw(tables(max_rows=40), label="table")[0])
    keys = [c for c in table.column_names if c.startswith("k")]
    batch = data.draw(st.integers(1, 9), label="batch_size")
    want = _in_memory(table, dict(kw, qi=keys))
    rel = duckdb.from_arrow(table)
    if want is None:               # what the in-memory path refuses, the fold refuses
        with pytest.raises(InputError):
            pushdown.audit(rel, qi=keys, skylines=SKY, k=CK_K, batch_size=batch, **kw)
        return
    res = pushdown.audit(rel, qi=keys, skylines=SKY, k=CK_K, batch_size=batch, **kw)
    assert res.classic.to_dict() == want["classic"]        # worst_group indices included
    assert res.skyline.to_dict() == want["skyline"]
    assert res.ck_safety.to_dict() == want["ck"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_duckdb_buckets_of_groups_equal_in_memory(data):
    """``pushdown.audit(split_out=b)``: each bucket of groups (a hash of the keys, floats
    as fastpriv compares them) counted, sorted and folded by its own query, the states
    merged: values, witness labels, skyline and (c,k) as in memory, or a refusal."""
    table, kw = _kw_of(data, data.draw(tables(max_rows=40), label="table")[0])
    keys = [c for c in table.column_names if c.startswith("k")]
    split_out = data.draw(st.integers(2, 5), label="split_out")
    want = _in_memory(table, dict(kw, qi=keys))
    run = dict(qi=keys, skylines=SKY, k=CK_K, batch_size=data.draw(st.integers(1, 9)),
               split_out=split_out, **kw)
    if want is None:
        with pytest.raises(InputError):
            pushdown.audit(duckdb.from_arrow(table), **run)
        return
    res = pushdown.audit(duckdb.from_arrow(table), **run)
    _assert_as_in_memory(res, want)
    assert all(m["worst_group"] is None for m in res.classic.to_dict()["models"].values())


def test_duckdb_auto_buckets_bound_each_query(tmp_path, monkeypatch):
    """``split_out="auto"`` splits ~17,000 pairs (10,000 groups) into buckets of about
    PAIRS_PER_BUCKET: no query folds more groups than a bucket's pairs, each group is in
    one bucket (-0.0 with 0.0), and the answer is memory's."""
    import pyarrow.parquet as pq

    from fastpriv import streaming

    rng = np.random.default_rng(1)
    g = rng.integers(-5_000, 5_000, 50_000) / 4          # float keys, -0.0 among them
    g[rng.random(50_000) < 0.01] = -0.0
    t = pa.table({"g": g, "s": rng.integers(0, 4, 50_000)})
    pq.write_table(t, tmp_path / "t.parquet")
    monkeypatch.setattr(pushdown, "PAIRS_PER_BUCKET", 4_000)
    seen = []
    real = streaming.fold_clustered

    def spy(counts, *, state, **kw):
        before = state.n_groups
        out = real(counts, state=state, **kw)
        seen.append(state.n_groups - before)
        return out

    monkeypatch.setattr(streaming, "fold_clustered", spy)
    res = pushdown.audit(str(tmp_path / "t.parquet"), group="g", sensitive="s", k=2,
                         skylines=SKY)
    monkeypatch.undo()
    _assert_as_in_memory(res, _in_memory(t, {"group": "g", "sensitive": "s"}, k=2))
    assert len(seen) >= 3 and sum(seen) == res.n_groups and max(seen) <= 2 * 4_000
    assert res.passes == 2 + len(seen)          # the estimate, Q, one scan per bucket
    one = pushdown.audit(str(tmp_path / "t.parquet"), group="g", sensitive="s", split_out=1)
    assert one.classic.to_dict() == classic.audit(Release.from_table(t, group="g",
                                                                     sensitive="s")).to_dict()


def _refusal(fn, *args) -> str | None:
    try:
        fn(*args)
    except InputError as exc:
        return str(exc)
    return None


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_duckdb_bucket_refusals_speak_for_the_whole_input(data):
    """A refusal found in one bucket (a null key, a null or negative weight) names the whole
    input's counts and columns: the words of ``split_out=1``, for the group fold with and
    without its Q pass and for the class histogram."""
    table, kw = _kw_of(data, data.draw(tables(max_rows=40), label="table")[0])
    keys = [c for c in table.column_names if c.startswith("k")]
    if kw["weight"] == "w" and data.draw(st.booleans(), label="bad weights"):
        w = table.column("w").to_pylist()
        w[data.draw(st.integers(0, len(w) - 1), label="at")] = data.draw(
            st.sampled_from([None, -1]), label="bad")
        table = table.set_column(table.schema.get_field_index("w"), "w",
                                 pa.array(w, pa.int64()))
    split_out = data.draw(st.integers(2, 5), label="split_out")
    q = data.draw(st.sampled_from(["compute", None]), label="q")
    calls = [lambda b: pushdown.audit(duckdb.from_arrow(table), qi=keys, q=q, split_out=b,
                                      **kw),
             lambda b: pushdown.class_histogram(duckdb.from_arrow(table), qi=keys,
                                                weight=kw["weight"], nulls=kw["nulls"],
                                                split_out=b)]
    for call in calls:
        assert _refusal(call, split_out) == _refusal(call, 1)


def test_duckdb_bucket_refusals_of_the_review():
    """The cases where one bucket's words differed: the whole input's count of null
    weights, both null key columns, the weight rule with a null-key class elsewhere."""
    def same(call):
        one = _refusal(call, 1)
        assert one is not None
        for b in (2, 3, 4):
            assert _refusal(call, b) == one

    t = pa.table({"a": pa.array([None, 1, 1], pa.int64()),
                  "w": pa.array([1, None, 1], pa.int64())})
    same(lambda b: pushdown.class_histogram(duckdb.from_arrow(t), qi="a", weight="w",
                                            split_out=b))
    assert "weight" in _refusal(lambda: pushdown.class_histogram(
        duckdb.from_arrow(t), qi="a", weight="w", split_out=3))
    t = pa.table({"a": pa.array([None, 2, 5], pa.int64()),
                  "b": pa.array([1, None, 5], pa.int64()), "s": ["x", "y", "x"]})
    same(lambda b: pushdown.audit(duckdb.from_arrow(t), group=["a", "b"], sensitive="s",
                                  split_out=b))
    t = pa.table({"g": [1, 2, 3], "w": pa.array([None, None, 1], pa.int64()),
                  "s": ["x", "y", "x"]})
    same(lambda b: pushdown.audit(duckdb.from_arrow(t), group="g", sensitive="s",
                                  weight="w", q=None, split_out=b))


@pytest.mark.parametrize("bad", [0, -1, "many", 1.5, True])
def test_duckdb_split_out_is_checked(bad):
    rel = duckdb.from_arrow(pa.table({"a": [1], "g": [1], "s": ["x"]}))
    with pytest.raises(InputError, match="split_out"):
        pushdown.audit(rel, group="g", sensitive="s", split_out=bad)
    for attack in (pushdown.robustness_audit, pushdown.foreground_audit):
        with pytest.raises(InputError, match="split_out"):
            attack(rel, qi="a", group="g", sensitive="s", r=2, split_out=bad)


def test_duckdb_fold_streams_the_counts_in_batches(tmp_path, monkeypatch):
    """The ordered counts reach this process one batch at a time, never as one table."""
    import pyarrow.parquet as pq

    from fastpriv import streaming

    rng = np.random.default_rng(1)
    t = pa.table({"g": rng.integers(0, 5_000, 50_000), "s": rng.integers(0, 4, 50_000)})
    pq.write_table(t, tmp_path / "t.parquet")
    seen = []
    real = streaming.iter_batches

    def spy(data, columns, batch_size):
        for b in real(data, columns, batch_size=batch_size):
            seen.append(b.num_rows)
            yield b

    monkeypatch.setattr(streaming, "iter_batches", spy)
    res = pushdown.audit(str(tmp_path / "t.parquet"), group="g", sensitive="s", k=2,
                         batch_size=1_000)
    monkeypatch.undo()
    rel = Release.from_table(t, group="g", sensitive="s")
    assert res.classic.to_dict() == classic.audit(rel).to_dict()
    assert len(seen) >= 15 and max(seen) <= 2_048     # ~20,000 pairs, in small batches


# ------------------------------------------------------------------ Spark
@pytest.fixture(scope="module")
def spark_session():
    return local_session("fastpriv-folds", threads=1)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(data=st.data())
def test_spark_fold_equals_in_memory(spark_session, data):
    table, kw = _kw_of(data, data.draw(tables(max_rows=30, key_kinds=("int64", "string",
                                                                      "float", "bool")),
                                       label="table")[0])
    keys = [c for c in table.column_names if c.startswith("k")]
    want = _in_memory(table, dict(kw, qi=keys))
    df = spark_session.createDataFrame(table.to_pandas(types_mapper=pd_types))
    if want is None:
        with pytest.raises(InputError):
            spark.audit(df, qi=keys, skylines=SKY, k=CK_K, partitions=3, **kw)
        return
    res = spark.audit(df, qi=keys, skylines=SKY, k=CK_K, partitions=3, **kw)
    _assert_as_in_memory(res, want)


def _assert_as_in_memory(res, want: dict) -> None:
    """A fold without group indices: values and witness labels, skyline and (c,k) as in
    memory (the indices are not known across partitions)."""
    got = res.classic.to_dict()["models"]
    for key, m in want["classic"]["models"].items():
        assert (got[key]["value"], got[key]["worst_label"]) == \
            (m["value"], m["worst_label"]), key
    assert res.skyline.to_dict() == want["skyline"]
    assert _without_indices(res.ck_safety.to_dict()) == _without_indices(want["ck"])


def pd_types(t):
    """Keep nullable integers and booleans as such when a table goes through pandas."""
    import pandas as pd

    return {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(),
            pa.string(): pd.StringDtype()}.get(t)


def test_spark_fold_sends_one_state_per_partition_not_one_row_per_group(spark_session,
                                                                       monkeypatch):
    rng = np.random.default_rng(2)
    t = pa.table({"g": rng.integers(0, 3_000, 12_000), "s": rng.integers(0, 5, 12_000)})
    df = spark_session.createDataFrame(t.to_pandas())
    collected = []
    real = spark._collect
    monkeypatch.setattr(spark, "_collect",
                        lambda frame: collected.append(real(frame)) or collected[-1])
    res = spark.audit(df, group="g", sensitive="s", k=2, skylines=SKY, partitions=4)
    monkeypatch.undo()
    rel = Release.from_table(t, group="g", sensitive="s")
    assert res.n_groups == rel.n_groups > 2_000
    assert res.skyline.to_dict() == skyline.check(rel, skylines=SKY).to_dict()
    assert _without_indices(res.ck_safety.to_dict()) == \
        _without_indices(_without_rows(ck_safety.audit(rel, k=2).to_dict()))
    # the first pass (Q) and the fold: one row per partition each, never per group
    assert [c.num_rows for c in collected] and all(c.num_rows <= 4 for c in collected)


# ------------------------------------------------------------------ Dask
def test_dask_fold_carries_ck_safety(tmp_path):
    import dask

    from fastpriv import distributed

    rng = np.random.default_rng(3)
    t = pa.table({"g": np.sort(rng.integers(0, 400, 3_000)), "s": rng.integers(0, 4, 3_000)})
    import pyarrow.parquet as pq

    folder = tmp_path / "parts"
    folder.mkdir()
    g = t["g"].to_numpy()
    for i, (lo, hi) in enumerate([(0, 100), (100, 250), (250, 400)]):
        pq.write_table(t.filter(pa.array((g >= lo) & (g < hi))), folder / f"p{i}.parquet")
    with dask.config.set(scheduler="synchronous"):
        res = distributed.groupwise_audit(str(folder), group="g", sensitive="s", k=3,
                                          split_every=2)
    rel = Release.from_table(t, group="g", sensitive="s")
    assert _without_indices(res.ck_safety.to_dict()) == \
        _without_indices(_without_rows(ck_safety.audit(rel, k=3).to_dict()))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_dask_buckets_of_pairs_equal_in_memory(data, tmp_path_factory):
    """``groupwise_audit(split_out=)``: rows split over files at random (groups span
    them), pairs counted per file, bucketed by a hash of the group keys, each bucket folded:
    the in-memory audit (values, witness labels, skyline, (c,k)), or a refusal."""
    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed

    table, kw = _kw_of(data, data.draw(tables(max_rows=40), label="table")[0])
    keys = [c for c in table.column_names if c.startswith("k")]
    want = _in_memory(table, dict(kw, qi=keys))
    folder = tmp_path_factory.mktemp("buckets")
    which = data.draw(st.lists(st.integers(0, 2), min_size=table.num_rows,
                               max_size=table.num_rows), label="file of each row")
    for f in set(which):
        pq.write_table(table.filter(pa.array([w == f for w in which])), folder / f"{f}.parquet")
    split_out = data.draw(st.integers(1, 4), label="split_out")
    run = dict(qi=keys, skylines=SKY, k=CK_K, split_out=split_out, split_every=2, **kw)
    with dask.config.set(scheduler="synchronous"):
        if want is None:
            with pytest.raises(InputError):
                distributed.groupwise_audit(str(folder), **run)
            return
        res = distributed.groupwise_audit(str(folder), **run)
    _assert_as_in_memory(res, want)


def test_dask_split_out_is_checked(tmp_path):
    from fastpriv import distributed

    with pytest.raises(InputError, match="split_out"):
        distributed.groupwise_audit(str(tmp_path), group="g", sensitive="s", split_out=0)
    with pytest.raises(InputError, match="split_out.*partition_by_group"):
        distributed.groupwise_audit(str(tmp_path), group="g", sensitive="s", split_out=2,
                                    partition_by_group=True)


# ------------------------------------------------------------------ declared models
#: a hierarchy of the sensitive values the declared-model tests draw (ARX's hierarchical
#: t-closeness, registered with a per-group statistic: :mod:`fastpriv.hierarchical_t`)
_VALUES = ["a", "b", "c", "d", "e", "f"]
_HIERARCHY_ROWS = [[v, "ab" if v in "ab" else "cd" if v in "cd" else "ef", "*"] for v in _VALUES]


def _declared_case(seed: int) -> tuple[pa.Table, dict, dict]:
    """A random table, the options naming its hierarchy, the in-memory answer."""
    from fastpriv.hierarchical_t import hierarchical_t_closeness
    from fastpriv.hierarchies import Hierarchy

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 1500))
    t = pa.table({"g": np.sort(rng.integers(0, int(rng.integers(2, 200)), n)),
                  "s": rng.choice(_VALUES[:int(rng.integers(2, 7))], n),
                  "w": rng.integers(0, 3, n)})
    h = Hierarchy(_HIERARCHY_ROWS, name="s")
    ref = hierarchical_t_closeness(t, hierarchy=h, sensitive="s", group="g", weight="w")
    return t, {"hierarchies": h}, {"value": ref.value, "worst_label": ref.witness.label}


def _answer(res) -> dict:
    m = res.models["hierarchical_t"]
    return {"value": m["value"], "worst_label": m["worst_label"]}


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(3, 400))
def test_declared_model_folds_on_duckdb_and_streams(seed, batch):
    from fastpriv import streaming

    t, options, want = _declared_case(seed)
    kw = {"sensitive": "s", "group": "g", "weight": "w", "options": options}
    assert _answer(pushdown.audit(duckdb.from_arrow(t), batch_size=batch, **kw)) == want
    assert _answer(streaming.clustered_audit(t, batch_size=batch, **kw)) == want
    assert _answer(streaming.audit_stream(t, batch_size=batch, **kw)) == want


def test_declared_model_runs_when_its_options_are_given_and_q_is_known():
    t, options, want = _declared_case(1)
    res = pushdown.audit(duckdb.from_arrow(t), sensitive="s", group="g", weight="w")
    assert "hierarchical_t" not in res.models and "hierarchical_t" not in res.skipped
    res = pushdown.audit(duckdb.from_arrow(t), sensitive="s", group="g", weight="w",
                         options=options, q=None)
    assert "hierarchical_t" not in res.models
    assert "distribution" in res.skipped["hierarchical_t"]
    res = pushdown.audit(duckdb.from_arrow(t), sensitive="s", group="g", weight="w",
                         options=options, classic=False)
    assert _answer(res) == want and res.classic is None


def test_declared_model_folds_on_dask(tmp_path):
    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed

    for seed in (3, 4, 5):
        t, options, want = _declared_case(seed)
        folder = tmp_path / f"parts{seed}"
        folder.mkdir()
        g = t["g"].to_numpy()
        cut = int(np.median(g))
        pq.write_table(t.filter(pa.array(g <= cut)), folder / "a.parquet")
        pq.write_table(t.filter(pa.array(g > cut)), folder / "b.parquet")
        with dask.config.set(scheduler="synchronous"):
            res = distributed.groupwise_audit(str(folder), sensitive="s", group="g",
                                              weight="w", options=options, split_every=2)
        assert _answer(res) == want


def test_declared_model_folds_on_spark_executors(spark_session):
    for seed in (6, 7):
        t, options, want = _declared_case(seed)
        df = spark_session.createDataFrame(t.to_pandas())
        res = spark.audit(df, sensitive="s", group="g", weight="w", options=options,
                          partitions=3)
        assert _answer(res) == want


# ------------------------------------------------------------------ risk: the histogram
def _risk(fn) -> tuple:
    try:
        return ("ok", fn().to_dict())
    except InputError:
        return ("refused",)


def _risk_case(data, **kinds) -> tuple[pa.Table, list[str], dict]:
    table, keys, _ = data.draw(tables(max_rows=30, **kinds), label="table")
    weights = data.draw(st.lists(st.integers(0, 3), min_size=table.num_rows,
                                 max_size=table.num_rows), label="weights")
    table = table.append_column("w", pa.array(weights, pa.int64()))
    kw = {"weight": data.draw(st.sampled_from([None, "w"]), label="weight"),
          "nulls": data.draw(st.sampled_from(["value", "drop", "error"]), label="nulls")}
    return table, keys, kw


@settings(max_examples=150, deadline=None, derandomize=True)
@given(data=st.data())
def test_class_histogram_merged_from_any_split_equals_in_memory(data):
    from fastpriv import risk
    from fastpriv.class_histogram import ClassHistogram

    table, keys, kw = _risk_case(data)
    want = _risk(lambda: risk.audit(table, qi=keys, population=1000, **kw))
    try:
        classes = risk.class_counts(table, qi=keys, **kw)
    except InputError:
        assert want == ("refused",)
        return
    if want == ("refused",):        # no record left: nothing to summarize either
        with pytest.raises(InputError):
            ClassHistogram.from_class_counts(classes)
        return
    cut = data.draw(st.integers(0, classes.n_classes), label="cut")
    parts = [ClassHistogram.from_class_counts(risk.ClassCounts(
        classes.qi, classes.keys.slice(a, b - a), classes.sizes[a:b], nulls=classes.nulls))
        for a, b in ((0, cut), (cut, classes.n_classes)) if b > a]
    merged = parts[-1].merge(*parts[:-1])
    assert _risk(lambda: risk.audit(merged, population=1000)) == want


@settings(max_examples=80, deadline=None, derandomize=True)
@given(data=st.data())
def test_class_histogram_on_duckdb_and_dask_equals_in_memory(data, tmp_path_factory):
    import tempfile

    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed, risk

    table, keys, kw = _risk_case(data)
    split_out = data.draw(st.integers(1, 4), label="split_out")   # classes split by hash
    want = _risk(lambda: risk.audit(table, qi=keys, population=1000, **kw))
    got = _risk(lambda: risk.audit(pushdown.class_histogram(
        duckdb.from_arrow(table), qi=keys, split_out=split_out, **kw), population=1000))
    assert got == want
    folder = tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())
    cut = data.draw(st.integers(0, table.num_rows), label="cut")
    pq.write_table(table.slice(0, cut), f"{folder}/a.parquet")
    pq.write_table(table.slice(cut), f"{folder}/b.parquet")
    with dask.config.set(scheduler="synchronous"):
        got = _risk(lambda: risk.audit(distributed.class_histogram(
            folder, qi=keys, split_every=2, split_out=split_out, **kw), population=1000))
    assert got == want


def sorted_by_keys(table: pa.Table, keys: list[str]) -> pa.Table:
    """``table`` sorted by ``keys`` in fastpriv's key order (NaN a null, nulls last)."""
    import pyarrow.compute as pc

    helpers = []
    for i, k in enumerate(keys):
        col = table.column(k)
        if pa.types.is_floating(col.type):
            col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)
        table = table.append_column(f"_sort{i}", col)
        helpers.append(f"_sort{i}")
    table = table.sort_by([(h, "ascending") for h in helpers], null_placement="at_end")
    return table.drop_columns(helpers)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(data=st.data())
def test_class_histogram_of_a_stream_equals_in_memory(data):
    """Any order (every class held, or spilled into ``split_out`` files by a hash of the
    QI), and sorted by the QI (a fold of runs of classes), in batches of 1–5 rows: the
    risk of the table in memory."""
    from fastpriv import risk, stream_counts

    table, keys, kw = _risk_case(data)
    want = _risk(lambda: risk.audit(table, qi=keys, population=1000, **kw))
    batch = data.draw(st.integers(1, 5), label="batch_size")
    split_out = data.draw(st.integers(1, 5), label="split_out")
    for how, rows in (({}, table), ({"clustered": True}, sorted_by_keys(table, keys)),
                      ({"split_out": split_out}, table)):
        got = _risk(lambda: risk.audit(stream_counts.class_histogram(  # noqa: B023
            rows.to_batches(max_chunksize=batch), qi=keys, **how, **kw),  # noqa: B023
            population=1000))
        assert got == want, how


def test_clustered_stream_is_checked_and_refuses_with_memorys_words():
    from fastpriv import risk, stream_counts

    t = pa.table({"a": [1, 2, 1], "b": ["x", "y", "x"]})
    with pytest.raises(InputError, match="not sorted by"):
        stream_counts.class_histogram(t.to_batches(max_chunksize=1), qi=["a", "b"],
                                      clustered=True)
    nulls = pa.table({"a": [1.0, 1.0, float("nan"), None], "b": ["x", None, "y", None]})
    with pytest.raises(InputError) as memory:
        risk.audit(nulls, qi=["a", "b"])
    with pytest.raises(InputError) as stream:
        stream_counts.class_histogram(nulls.to_batches(max_chunksize=1), qi=["a", "b"],
                                      clustered=True)
    assert str(stream.value) == str(memory.value)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(data=st.data())
def test_class_histogram_on_spark_equals_in_memory(spark_session, data):
    from fastpriv import risk

    # the kinds a pandas round trip keeps (dates and int32: tests/test_engines_classes.py)
    table, keys, kw = _risk_case(data, key_kinds=("int64", "string", "float", "bool"))
    want = _risk(lambda: risk.audit(table, qi=keys, population=1000, **kw))
    df = spark_session.createDataFrame(table.to_pandas(types_mapper=pd_types))
    got = _risk(lambda: risk.audit(spark.class_histogram(df, qi=keys, **kw),
                                   population=1000))
    assert got == want


def test_class_histogram_sends_sizes_not_classes(spark_session, monkeypatch):
    """20,000 classes: the driver receives one row per distinct size and one class."""
    from fastpriv import risk

    rng = np.random.default_rng(5)
    t = pa.table({"a": rng.integers(0, 200, 40_000), "b": rng.integers(0, 100, 40_000)})
    collected = []
    real = spark._collect
    monkeypatch.setattr(spark, "_collect",
                        lambda frame: collected.append(real(frame)) or collected[-1])
    hist = spark.class_histogram(spark_session.createDataFrame(t.to_pandas()),
                                 qi=["a", "b"])
    monkeypatch.undo()
    classes = risk.class_counts(t, qi=["a", "b"])
    assert hist.n_classes == classes.n_classes > 15_000
    assert sum(c.num_rows for c in collected) <= hist.size.size + 1
    assert risk.audit(hist).to_dict() == risk.audit(classes).to_dict()


def test_class_histogram_refuses_what_needs_each_class():
    from fastpriv import risk
    from fastpriv.class_histogram import ClassHistogram

    t = pa.table({"a": [1, 1, 2], "b": ["x", "y", "y"]})
    hist = ClassHistogram.from_class_counts(risk.class_counts(t, qi=["a"]))
    with pytest.raises(InputError, match="population table"):
        risk.audit(hist, population=t)
    with pytest.raises(InputError, match="sampling"):
        risk.audit(hist, sampling_weight="b")
    with pytest.raises(InputError, match="null policies|different"):
        hist.merge(ClassHistogram.from_class_counts(risk.class_counts(t, qi=["b"])))
