"""The foreground-knowledge attack as a fold over groups (:mod:`fastpriv.foreground_fold`).

Pass 1 plans the mining from the distinct (QI, sensitive) cells; pass 2 packs every system
over each set of complete groups, the packs merge and are solved; pass 3 attacks each set
of complete groups with the mined distributions, the summaries merge. On random tables
(nulls, NaN, ties, weights, every null policy, every rule for unreliable signatures) any
split of the groups, merged in any order, gives ``ForegroundSummary.from_attack`` of the
in-memory attack of the same rows — the mined distributions to the bit — and so do
:func:`fastpriv.pushdown.foreground_audit` (DuckDB's rows streamed by group),
:func:`fastpriv.distributed.foreground_audit` (Dask partitions of complete groups),
:func:`fastpriv.stream_counts.foreground_audit` (batches sorted by group) and
:func:`fastpriv.spark.foreground_audit` (on Spark's executors).
"""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import InputError, foreground, pushdown, spark
from fastpriv._foreground_pack import merge_parts, pack_part
from fastpriv.foreground_fold import ForegroundSummary, attack_part, prepare, systems_part
from tests.engines import tables
from tests.spark_session import local_session
from tests.test_engine_folds import pd_types

R = 2.0
MINE = {"min_support": 2, "max_set_size": 2}


@pytest.fixture(scope="module")
def spark_session():
    return local_session("fastpriv-foreground-fold", threads=1)


def _case(data, **kinds) -> tuple[pa.Table, list[str], dict]:
    table, qi, _ = data.draw(tables(max_rows=30, **kinds), label="table")
    n = table.num_rows
    # float group ids: NaN is a null, one group with the null rows (split across batches)
    floats = data.draw(st.booleans(), label="float groups")
    ids = st.sampled_from([0.0, 1.5, float("nan")]) if floats else st.integers(0, 5)
    groups = data.draw(st.lists(st.one_of(ids, st.none()) if data.draw(
        st.booleans(), label="null groups") else ids, min_size=n, max_size=n),
        label="groups")
    weights = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="w")
    table = table.append_column("g", pa.array(groups, pa.float64() if floats else pa.int64())
                                ).append_column("w", pa.array(weights, pa.int64()))
    present = sorted({v for v in table.column("s").to_pylist() if v is not None}, key=str)
    kw = {"weight": data.draw(st.sampled_from([None, "w"]), label="weight"),
          "nulls": data.draw(st.sampled_from(["value", "drop", "error"]), label="nulls"),
          # every value, one value (absent from some groups or every row left), or a set
          "sensitive_values": data.draw(st.sampled_from(
              [None] + [[v] for v in present] + ([[tuple(present[:2])]]
                                                 if len(present) > 1 else [])),
              label="sensitive_values"),
          # the fixed-rate rules give systems a constant log-likelihood (merged exactly)
          "unreliable": data.draw(st.sampled_from(["pooled", "global", "uniform", 0.3]),
                                  label="unreliable")}
    return table, qi, kw


def _counted(table: pa.Table, cols: list[str], weight: str | None) -> pa.Table:
    agg = [([], "count_all")] if weight is None else [(weight, "sum")]
    return table.group_by(cols).aggregate(agg).rename_columns(cols + ["n"])


def _rows(table, qi, weight) -> pa.Table:
    return pushdown.finish_row_counts(_counted(table, qi + ["g", "s"], weight), qi=qi,
                                      group="g", sensitive="s", count="n")


def _options(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if k != "weight"}


def _in_memory(table, qi, kw, max_items: int = 10) -> tuple:
    try:
        rows = _rows(table, qi, kw["weight"])
        res = foreground.attack(rows, qi=qi, group="g", sensitive="s", r=R, weight="n",
                                **_options(kw), **MINE)
        return ("ok", ForegroundSummary.from_attack(res, max_items=max_items).to_dict())
    except InputError:
        return ("refused",)


def _pass_one(table, qi, kw, max_items: int):
    """The fold's driver after pass 1: the mining planned from the cells."""
    source = table
    if kw["nulls"] == "drop":                   # the rows the attack keeps (NaN a null)
        source = table.filter(pa.compute.invert(pa.compute.is_null(table.column("g"),
                                                                    nan_is_null=True)))
    cells = pushdown.finish_row_counts(_counted(source, qi + ["s"], kw["weight"]), qi=qi,
                                       group=[], sensitive="s", count="n")
    return prepare(lambda: cells, qi=qi, group="g", sensitive="s", count="n", r=R,
                   max_items=max_items, **_options(kw), **MINE)


def _split(rows: pa.Table, data) -> list[pa.Table]:
    g = [None if v != v else v for v in rows.column("g").to_pylist()]   # NaN: null
    labels = sorted(set(g), key=lambda v: (v is None, v or 0))
    cut = data.draw(st.integers(0, len(labels)), label="cut")
    return [rows.filter(pa.array([x in side for x in g]))
            for side in (set(labels[:cut]), set(labels[cut:]))]


def _merged(pieces: list, data, label: str):
    pieces = data.draw(st.permutations([p for p in pieces if p is not None]), label=label)
    return pieces[0].merge(*pieces[1:]) if pieces else None


@settings(max_examples=120, deadline=None, derandomize=True)
@given(data=st.data())
def test_any_split_of_the_groups_merges_into_the_in_memory_summary(data):
    table, qi, kw = _case(data)
    top = data.draw(st.sampled_from([1, 3, 10]), label="max_items")   # ties at the cut
    want = _in_memory(table, qi, kw, top)
    try:
        rows = _rows(table, qi, kw["weight"])
        fold = _pass_one(table, qi, kw, top)
        sides = _split(rows, data)
        systems = _merged([systems_part(s, **fold.systems_args()) for s in sides], data,
                          "systems order")
        mined = fold.solve(systems)
        args = fold.attack_args(mined)
        summary = _merged([attack_part(s, **args) for s in sides], data, "summary order")
        got = ("ok", fold.finish(summary, mined).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_parts=st.integers(2, 5))
def test_packs_of_any_split_merge_into_the_whole_pack(seed, n_parts):
    """Counts, constants and the distinct group profiles, in the whole pack's order."""
    rng = np.random.default_rng(seed)
    G = int(rng.integers(1, 40))
    sizes = rng.integers(1, 6, G)
    goff = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(sizes, out=goff[1:])
    R_ = int(goff[-1])
    m_of_a = np.array([2, 3], dtype=np.int64)
    var_rows = np.concatenate([rng.integers(-1, m, R_) for m in m_of_a]).astype(np.int32)
    n_x = 2
    gcount = np.stack([rng.integers(0, sizes + 1) for _ in range(n_x)])
    sys_a = np.repeat(np.arange(2), n_x).astype(np.int64)
    sys_x = np.tile(np.arange(n_x), 2).astype(np.int64)
    whole = pack_part(goff, np.arange(R_), var_rows, gcount, sys_a, sys_x, m_of_a)
    owner = rng.integers(0, n_parts, G)
    parts = []
    for p in rng.permutation(n_parts):
        gs = np.flatnonzero(owner == p)
        if not gs.size:
            continue
        rows = np.concatenate([np.arange(goff[g], goff[g + 1]) for g in gs])
        sub_off = np.zeros(gs.size + 1, dtype=np.int64)
        np.cumsum(sizes[gs], out=sub_off[1:])
        sub_var = np.concatenate([var_rows[a * R_ + rows] for a in range(2)])
        parts.append(pack_part(sub_off, np.arange(rows.size), sub_var, gcount[:, gs], sys_a,
                               sys_x, m_of_a))
    got = merge_parts(*parts)
    for name in ("var_off", "T", "C0", "C1", "k0", "k1", "grp_off", "grp_n", "grp_N", "grp_w",
                 "cls_off", "cls_var", "cls_mult"):
        np.testing.assert_array_equal(getattr(got, name), getattr(whole, name), err_msg=name)
    assert got.log_binom == whole.log_binom


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_systems_solved_in_any_blocks_join_into_the_whole_solve(data):
    """Blocks of systems selected from the pack, solved apart (each seeded by its own id)
    and joined, give the solve of the whole pack, array for array."""
    import dataclasses

    from fastpriv._foreground_pack import assemble_counts
    from fastpriv.foreground_fold import block_solution, block_summary

    table, qi, kw = _case(data)
    try:
        fold = _pass_one(table, qi, kw, 10)
        whole = systems_part(_rows(table, qi, kw["weight"]), **fold.systems_args())
    except InputError:
        return
    if whole is None:
        return
    want = fold.solve(whole)
    blocks = fold.blocks(data.draw(st.integers(1, 5), label="blocks"))
    order = data.draw(st.permutations(range(len(blocks))), label="block order")
    summaries = [(blocks[b], *block_summary(whole.select(blocks[b]), n_random=fold.n_random))
                 for b in order]
    counts = assemble_counts(fold.var_off, [(ids, c) for ids, c, _, _ in summaries])
    got = fold.solve_in_blocks(
        counts, sum(w for _, _, w, _ in summaries), max(g for _, _, _, g in summaries),
        lambda: [block_solution(whole.select(blocks[b]), blocks[b], **fold.block_args())
                 for b in order])
    for f in dataclasses.fields(want._sol):
        np.testing.assert_array_equal(getattr(got._sol, f.name), getattr(want._sol, f.name),
                                      err_msg=f.name)
    for name in ("var_off", "T", "C0", "C1", "const", "f0"):
        np.testing.assert_array_equal(getattr(got._packed, name), getattr(want._packed, name),
                                      err_msg=name)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_duckdb_foreground_fold_equals_in_memory(data):
    import duckdb

    table, qi, kw = _case(data)
    want = _in_memory(table, qi, kw)
    batch = data.draw(st.integers(1, 8), label="batch_size")
    try:
        split_out = data.draw(st.sampled_from(["auto", 1, 2, 3]), label="split_out")
        got = ("ok", pushdown.foreground_audit(duckdb.from_arrow(table), qi=qi, group="g",
                                               sensitive="s", r=R, batch_size=batch, **kw,
                                               split_out=split_out, **MINE).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_stream_foreground_fold_equals_in_memory(data):
    from fastpriv import stream_counts

    table, qi, kw = _case(data)
    want = _in_memory(table, qi, kw)
    table = table.sort_by([("g", "ascending")], null_placement="at_end")
    batch = data.draw(st.integers(1, 8), label="batch_size")
    try:
        got = ("ok", stream_counts.foreground_audit(table, qi=qi, group="g", sensitive="s",
                                                    r=R, batch_size=batch, **kw,
                                                    **MINE).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


def test_stream_foreground_fold_needs_sorted_groups_and_three_readings():
    from fastpriv import stream_counts

    t = pa.table({"a": [1, 2, 1, 2], "g": [0, 1, 0, 1], "s": ["x", "y", "x", "y"]})
    with pytest.raises(InputError, match="not sorted by"):
        stream_counts.foreground_audit(t, qi="a", group="g", sensitive="s", r=2,
                                       min_support=1, batch_size=1)
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
    with pytest.raises(InputError, match="three times"):
        stream_counts.foreground_audit(reader, qi="a", group="g", sensitive="s", r=2,
                                       min_support=1)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_dask_foreground_fold_equals_in_memory(data, tmp_path_factory):
    import tempfile

    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed

    table, qi, kw = _case(data)
    want = _in_memory(table, qi, kw)
    folder = tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())
    g = [None if x != x else x for x in table.column("g").to_pylist()]   # NaN: null
    cut = data.draw(st.integers(0, 5), label="cut")
    for i, side in enumerate(([x is not None and x < cut for x in g],
                              [x is None or x >= cut for x in g])):
        pq.write_table(table.filter(pa.array(side)), f"{folder}/part-{i}.parquet")
    try:
        with dask.config.set(scheduler="synchronous"):
            got = ("ok", distributed.foreground_audit(folder, qi=qi, group="g", sensitive="s",
                                                      r=R, split_every=2, **kw,
                                                      **MINE).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


def test_dask_foreground_fold_refuses_a_group_split_over_partitions(tmp_path):
    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed

    t = pa.table({"a": [1, 2, 1, 2], "g": [0, 1, 1, 2], "s": ["x", "y", "x", "y"]})
    pq.write_table(t.slice(0, 2), tmp_path / "a.parquet")
    pq.write_table(t.slice(2), tmp_path / "b.parquet")
    with dask.config.set(scheduler="synchronous"), \
            pytest.raises(InputError, match="group 1 is split over 2 partitions"):
        distributed.foreground_audit(str(tmp_path), qi="a", group="g", sensitive="s", r=2,
                                     min_support=1)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(data=st.data())
def test_spark_foreground_fold_equals_in_memory(spark_session, data):
    table, qi, kw = _case(data, key_kinds=("int64", "string", "float", "bool"))
    want = _in_memory(table, qi, kw)
    df = spark_session.createDataFrame(table.to_pandas(types_mapper=pd_types))
    try:
        got = ("ok", spark.foreground_audit(df, qi=qi, group="g", sensitive="s", r=R,
                                            partitions=2, **kw, **MINE).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


def test_spark_foreground_fold_sends_counts_solutions_and_summaries(spark_session,
                                                                   monkeypatch):
    """3,000 groups of 4: the driver receives the cells, each block of systems' counts and
    solution (the groups' profiles stay on the executors) and one summary per partition."""
    rng = np.random.default_rng(5)
    n = 12_000
    t = pa.table({"a": rng.integers(0, 5, n), "b": rng.integers(0, 3, n),
                  "g": np.repeat(np.arange(3_000), 4), "s": rng.choice(["x", "y", "z"], n)})
    collected = []
    real = spark._collect
    monkeypatch.setattr(spark, "_collect",
                        lambda frame: collected.append(real(frame)) or collected[-1])
    got = spark.foreground_audit(spark_session.createDataFrame(t.to_pandas()), qi=["a", "b"],
                                 group="g", sensitive="s", r=R, partitions=3, min_support=20)
    monkeypatch.undo()
    # the cells, then per block (at most 3) its counts and its solution, then the states
    assert sum(c.num_rows for c in collected) <= 5 * 3 * 3 + 3 + 3 + 3
    received = [pickle.loads(b) for c in collected[1:] for b in c.column("state").to_pylist()]
    assert not any(getattr(x, "grp_n", np.zeros(0)).size for r in received
                   for x in (r if isinstance(r, tuple) else (r,)))
    rows = _rows(t, ["a", "b"], None)
    res = foreground.attack(rows, qi=["a", "b"], group="g", sensitive="s", r=R, weight="n",
                            min_support=20)
    assert got.to_dict() == ForegroundSummary.from_attack(res).to_dict()
    assert got.n_rows == n
    packed = res.mined._packed
    assert packed.grp_n.size < 3_000 * packed.n_systems / 4      # profiles merged


def test_bad_arguments_are_refused_naming_them():
    import duckdb

    t = duckdb.from_arrow(pa.table({"a": [1], "g": [0], "h": [0], "s": ["x"]}))
    with pytest.raises(InputError, match="r"):
        pushdown.foreground_audit(t, qi="a", group="g", sensitive="s", r=0.5)
    with pytest.raises(TypeError, match="unrelaible"):
        pushdown.foreground_audit(t, qi="a", group="g", sensitive="s", r=2, unrelaible=0.5)
    with pytest.raises(InputError, match="tol"):
        pushdown.foreground_audit(t, qi="a", group="g", sensitive="s", r=2, tol="x")
    with pytest.raises(InputError, match="one group column"):
        pushdown.foreground_audit(t, qi="a", group=["g", "h"], sensitive="s", r=2)
    with pytest.raises(InputError, match="sensitive_values"):
        pushdown.foreground_audit(t, qi="a", group="g", sensitive="s", r=2, min_support=1,
                                  sensitive_values=["nope"])
