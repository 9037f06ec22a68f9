"""The class-based models where the data lives: re-identification risk, k-map and δ-presence
read the QI equivalence classes, which DuckDB, Dask and Spark count with a ``GROUP BY qi``
(``class_counts`` of pushdown, distributed and spark), and give the answer of the table in
memory.

The reference is the table itself: ``risk.audit(table, qi=..., weight=..., nulls=...,
population=...)`` and ``population.k_map`` / ``delta_presence`` with the population table,
counted in memory. The engine's answer is the same call on the engine's class counts of the
sample and of the population. Compared: the classes (labels, label types, sizes, policy) and
the ``to_dict()`` of every result, to the bit, for each null policy; under ``nulls="error"``
the same error (see :func:`_same_error` for the one difference, with ``weight=``).

Needs DuckDB, Dask, PySpark and a Java runtime (the '.[all]' test install and
``apt-get install -y openjdk-17-jre-headless``, as .ci/run does).
"""

from __future__ import annotations

import os
import re
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, population, pushdown, risk
from tests.engines import _KINDS, CLASS_REFUSAL_TABLE, CLASS_REFUSALS
from tests.spark_session import local_session

SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
POLICIES = ("error", "drop", "value")
#: float labels with NaN (a null) and -0.0 (the label 0.0): both read as in memory
_FLOATS = st.sampled_from([0.0, -0.0, 1.5, -2.25, float("nan")])


# ------------------------------------------------------------------ random tables
@st.composite
def class_tables(draw, max_rows: int = 20):
    """``(sample, people, qi, weight)``: a sample of 1–3 QI columns of mixed types (nulls,
    NaN and -0.0 sometimes; few values, so classes tie), a weight column (0..3) sometimes,
    and a population table holding every record of the sample plus a few people more, in
    another row order."""
    n = draw(st.integers(1, max_rows))
    n_qi = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(sorted(_KINDS))) for _ in range(n_qi)]
    qi = [f"q{i} {k}" for i, k in enumerate(kinds)]          # a space: quoted identifiers
    elems = {}
    for name, kind in zip(qi, kinds, strict=True):
        e = _FLOATS if kind == "float" else _KINDS[kind][1]
        elems[name] = st.one_of(e, st.none()) if draw(st.booleans()) else e
    extra = draw(st.integers(0, 8))

    def rows(k: int) -> dict:
        return {c: draw(st.lists(elems[c], min_size=k, max_size=k)) for c in qi}

    sample = {c: pa.array(v, _KINDS[k][0]) for (c, v), k in zip(rows(n).items(), kinds,
                                                                 strict=True)}
    weight = None
    if draw(st.booleans()):
        weight = "w"
        sample["w"] = pa.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
                               pa.int64())
    sample = pa.table(sample)
    records = _expanded(sample, weight)
    more = pa.table({c: pa.array(v, _KINDS[k][0]) for (c, v), k in zip(
        rows(extra).items(), kinds, strict=True)})
    people = pa.concat_tables([records, more])
    perm = draw(st.permutations(range(people.num_rows)))
    return sample, people.take(pa.array(perm, pa.int64())), qi, weight


def _expanded(table: pa.Table, weight: str | None) -> pa.Table:
    """One row per record: each row repeated ``weight`` times (the meaning of weight=)."""
    if weight is None:
        return table
    w = table.column(weight).to_numpy()
    return table.drop_columns([weight]).take(pa.array(np.repeat(np.arange(len(w)), w)))


def _write_parts(table: pa.Table, folder: str, n_files: int) -> None:
    """Split the rows by position into ``n_files`` Parquet files of row groups of 3 rows:
    classes span files and row groups."""
    os.makedirs(folder, exist_ok=True)
    step = max(1, -(-table.num_rows // n_files))
    for i, start in enumerate(range(0, table.num_rows, step)):
        pq.write_table(table.slice(start, step), os.path.join(folder, f"part-{i}.parquet"),
                       row_group_size=3)


# ------------------------------------------------------------------ the comparison
def _outcome(fn, *args, **kw):
    try:
        return "ok", fn(*args, **kw)
    except (InputError, InputTypeError) as exc:
        return "error", type(exc).__name__, str(exc)


def _same_error(got: tuple, want: tuple, weighted: bool) -> None:
    """The same error. With ``weight=``, ``nulls="error"`` counts a column's nulls in rows
    in memory (``ClassCounts.from_table``) and in records on an engine
    (``ClassCounts.from_counts`` of the ``GROUP BY``: a count row is its records): the same
    words, columns and NaN note; the numbers (and so the plural of "null") may differ."""
    assert got[:2] == want[:2], (got, want)
    if weighted:
        def words(text: str) -> str:
            return re.sub(r"\d+", "N", re.sub(r"\b(\d+) nulls?\b", "N nulls", text))

        assert words(got[2]) == words(want[2]), (got, want)
    else:
        assert got[2] == want[2], (got, want)


def _assert_same_classes(got: risk.ClassCounts, want: risk.ClassCounts) -> None:
    assert got.qi == want.qi and got.nulls == want.nulls
    assert got.keys.schema == want.keys.schema
    assert got.keys.equals(want.keys), (got.keys, want.keys)
    assert got.sizes.dtype == want.sizes.dtype == np.int64
    assert got.sizes.tolist() == want.sizes.tolist()


def _dicts(res) -> str:
    """``to_dict()`` as text (NaN equals NaN); the k-map/δ-presence ``params["weight"]`` is
    left out: it names the weight column of a table, and class counts have none."""
    d = res.to_dict()
    if isinstance(d.get("params"), dict):
        d["params"] = {k: v for k, v in d["params"].items() if k != "weight"}
    return repr(d)


def _models(sample, people, n: int, **kw) -> dict:
    """Risk (with the population table, with a population size ``n``, without), k-map and
    δ-presence of ``sample`` against ``people``; ``kw``: the reading of a table."""
    return {
        "risk": lambda: risk.audit(sample, population=people, **kw),
        "risk_n": lambda: risk.audit(sample, population=n, **kw),
        "risk_alone": lambda: risk.audit(sample, **kw),
        "k_map": lambda: population.k_map(sample, population=people, **kw),
        "delta_presence": lambda: population.delta_presence(sample, population=people, **kw),
    }


def assert_classes_same(count, sample_src, people_src, sample: pa.Table, people: pa.Table,
                        qi: list[str], weight: str | None, policies=POLICIES) -> None:
    """``count(source, qi=, weight=, nulls=)`` (an engine's class_counts) of the sample and
    of the population give, for every null policy, the classes and the answers of every
    class-based model of the tables in memory."""
    for nulls in policies:
        want = _outcome(risk.class_counts, sample, qi=qi, weight=weight, nulls=nulls)
        got = _outcome(count, sample_src, qi=qi, weight=weight, nulls=nulls)
        assert got[0] == want[0], (nulls, got, want)
        if want[0] == "error":
            _same_error(got, want, weight is not None)
            continue
        _assert_same_classes(got[1], want[1])
        pop_want = _outcome(risk.class_counts, people, qi=qi, nulls=nulls)
        pop_got = _outcome(count, people_src, qi=qi, nulls=nulls)
        assert pop_got[0] == pop_want[0], (nulls, pop_got, pop_want)
        if pop_want[0] == "error":        # nulls="error", a null among the people only
            assert pop_got == pop_want
            continue
        _assert_same_classes(pop_got[1], pop_want[1])
        n = 10 * people.num_rows
        ref = _models(sample, people, n, qi=qi, weight=weight, nulls=nulls)
        eng = _models(got[1], pop_got[1], n)
        for name in ref:
            a, b = _outcome(eng[name]), _outcome(ref[name])
            assert a[0] == b[0], (name, nulls, a, b)
            if b[0] == "ok":
                assert _dicts(a[1]) == _dicts(b[1]), (name, nulls)
            else:
                assert a == b, (name, nulls)


# ------------------------------------------------------------------ DuckDB and Dask
#: NaN and null in a float QI (one class in memory; DuckDB and Arrow group them apart),
#: -0.0 and 0.0 (one class), weights 0..3, a class of weight 0 only, rows across files
NAN_EXAMPLE = (
    pa.table({"q0 float": [float("nan"), None, 1.5, -0.0, 1.5, None, 0.0, 1.5, 2.0],
              "q1 string": ["a", "a", "b", "a", "b", "a", "a", None, "c"],
              "w": pa.array([1, 2, 0, 3, 1, 1, 2, 1, 0], pa.int64())}),
    None, ["q0 float", "q1 string"], "w")


#: no null in the sample, one among the people: nulls="error" refuses the population
NULL_PEOPLE = (pa.table({"q0 int64": [1, 2, 2]}),
               pa.table({"q0 int64": [2, None, 1, 2, 3]}), ["q0 int64"], None)


def _with_people(data):
    """Fill in the population of an explicit example: its records and two people more."""
    sample, people, qi, weight = data
    if people is None:
        people = pa.concat_tables([_expanded(sample, weight), _expanded(sample, weight)
                                   .slice(0, 2)])
    return sample, people, qi, weight


@pytest.mark.slow
@settings(max_examples=30, **SETTINGS)
@given(data=class_tables(), n_files=st.integers(1, 3))
@example(data=NAN_EXAMPLE, n_files=2)
@example(data=NULL_PEOPLE, n_files=2)
def test_random_tables_duckdb_and_dask_equal_in_memory(data, n_files):
    import dask
    import dask.dataframe as dd
    import duckdb

    from fastpriv import distributed

    sample, people, qi, weight = _with_people(data)
    with tempfile.TemporaryDirectory() as tmp:
        s_dir, p_dir = os.path.join(tmp, "sample"), os.path.join(tmp, "people")
        _write_parts(sample, s_dir, n_files)
        _write_parts(people, p_dir, n_files)
        sources = {  # engine: (its class_counts, the sample's source, the population's)
            "duckdb relation": (pushdown.class_counts, duckdb.from_arrow(sample),
                                duckdb.from_arrow(people)),
            "duckdb parquet": (pushdown.class_counts, s_dir, p_dir),
            "dask parquet": (lambda d, **kw: distributed.class_counts(d, split_every=2, **kw),
                             s_dir, p_dir),
            "dask frame": (distributed.class_counts, dd.read_parquet(s_dir),
                           dd.read_parquet(p_dir)),
        }
        with dask.config.set(scheduler="synchronous"):
            for name, (count, s_src, p_src) in sources.items():
                if name == "dask frame":
                    # pandas holds a float null as NaN: the "error" message cannot tell them
                    # apart, so that policy is compared on the Arrow sources only
                    policies = ("drop", "value")
                else:
                    policies = POLICIES
                try:
                    assert_classes_same(count, s_src, p_src, sample, people, qi, weight,
                                        policies)
                except AssertionError as exc:
                    raise AssertionError(f"{name}: {exc}") from exc


def test_classes_span_partitions_and_files(tmp_path):
    """A few thousand rows in four files of many row groups, every class in several of
    them; int16 weights; one QI column and three."""
    import dask

    from fastpriv import distributed

    rng = np.random.default_rng(11)
    n = 3000
    sample = pa.table({
        "age": pa.array(rng.integers(20, 30, n), pa.int32()),
        "zip": pa.array(rng.choice(["100", "101", "102", None], n, p=[.4, .3, .29, .01])),
        "bmi": rng.choice([18.5, 22.0, float("nan")], n, p=[.5, .49, .01]),
        "n": pa.array(rng.integers(0, 4, n), pa.int16()),
    })
    people = pa.concat_tables([_expanded(sample, "n"), _expanded(sample, "n").slice(0, 500)])
    s_dir, p_dir = str(tmp_path / "sample"), str(tmp_path / "people")
    for t, d in ((sample, s_dir), (people, p_dir)):
        os.makedirs(d)
        for i in range(4):
            pq.write_table(t.slice(i * t.num_rows // 4, t.num_rows // 4 + 1),
                           os.path.join(d, f"part-{i}.parquet"), row_group_size=100)
    sample, people = pq.read_table(s_dir), pq.read_table(p_dir)
    for qi in (["age"], ["age", "zip", "bmi"]):
        with dask.config.set(scheduler="synchronous"):
            got = {"dask": distributed.class_counts(s_dir, qi=qi, weight="n", nulls="value"),
                   "duckdb": pushdown.class_counts(s_dir, qi=qi, weight="n", nulls="value")}
        assert got["dask"].n_classes < n
        for t in got.values():
            _assert_same_classes(t, got["duckdb"])
        with dask.config.set(scheduler="synchronous"):
            assert_classes_same(distributed.class_counts, s_dir, p_dir, sample, people, qi,
                                "n")


# ------------------------------------------------------------------ bad input
def test_bad_input_names_the_parameter(tmp_path):
    import dask
    import duckdb

    from fastpriv import distributed

    t = pa.table(CLASS_REFUSAL_TABLE)
    folder = str(tmp_path / "p")
    _write_parts(t, folder, 1)
    engines = {"duckdb": lambda **kw: pushdown.class_counts(duckdb.from_arrow(t), **kw),
               "duckdb parquet": lambda **kw: pushdown.class_counts(folder, **kw),
               "dask": lambda **kw: distributed.class_counts(folder, **kw)}
    cases = CLASS_REFUSALS
    for name, fn in engines.items():
        for kw, exc, match in cases:
            with dask.config.set(scheduler="synchronous"), pytest.raises(exc, match=match):
                fn(**kw)
                pytest.fail(f"{name}: {kw} accepted")
        with pytest.raises(InputError, match="nulls"):       # checked before the count
            fn(qi="nope", nulls="maybe")
    for kw, exc, match in cases[-4:]:                        # the weights, as in memory
        with pytest.raises(exc, match=match):
            risk.class_counts(t, **kw)
    with pytest.raises(InputTypeError, match="DuckDB relation or a path"):
        pushdown.class_counts(t, qi="q")
    with pytest.raises(InputTypeError, match="dask DataFrame or a path"):
        distributed.class_counts(t, qi="q")
    with pytest.raises(InputError, match="no such file"):
        pushdown.class_counts(str(tmp_path / "none"), qi="q")
    with pytest.raises(InputError, match="split_every"):
        distributed.class_counts(folder, qi="q", split_every=1)


def test_weights_adding_past_int64_are_refused(tmp_path):
    """Each file's weights fit in int64, their total does not: refused as in memory (the
    merge of the partitions' sums would wrap)."""
    import dask

    from fastpriv import distributed

    t = pa.table({"q": [1, 1], "w": pa.array([2**62, 2**62], pa.int64())})
    folder = str(tmp_path / "p")
    _write_parts(t, folder, 2)
    with pytest.raises(InputError, match="past 2"):
        risk.class_counts(t, qi="q", weight="w")
    with pytest.raises(InputError, match="past 2"):
        pushdown.class_counts(folder, qi="q", weight="w")
    with dask.config.set(scheduler="synchronous"), pytest.raises(InputError, match="past 2"):
        distributed.class_counts(folder, qi="q", weight="w", split_every=2)


# ------------------------------------------------------------------ Spark
@pytest.fixture(scope="module")
def spark():
    """One local[1] session for the module (a session already started in this process is
    reused)."""
    return local_session("fastpriv-classes-tests")


@pytest.mark.slow
def test_spark_classes_equal_in_memory(spark, monkeypatch):
    """Two tables (the NaN example; a random one with one QI column, the case a fold of
    (keys, value) pairs cannot hold), four partitions, collected in blocks of 4 classes."""
    import duckdb

    import fastpriv.spark as fs

    monkeypatch.setattr(fs, "PAIRS_PER_COLLECT", 4)
    rng = np.random.default_rng(5)
    n = 60
    one = pa.table({"age": pa.array(rng.integers(20, 32, n), pa.int32()),
                    "w": pa.array(rng.integers(0, 3, n), pa.int64())})
    cases = [_with_people(NAN_EXAMPLE),
             (one, pa.concat_tables([_expanded(one, "w"), _expanded(one, "w")]), ["age"],
              "w")]
    for sample, people, qi, weight in cases:
        s_df = spark.createDataFrame(sample).repartition(4)
        p_df = spark.createDataFrame(people).repartition(4)
        assert_classes_same(fs.class_counts, s_df, p_df, sample, people, qi, weight)
        got = fs.class_counts(s_df, qi=qi, weight=weight, nulls="value")
        _assert_same_classes(got, pushdown.class_counts(
            duckdb.from_arrow(sample), qi=qi, weight=weight, nulls="value"))
    bad = spark.createDataFrame(pa.table({"q": [1, 2], "w": [1, -1], "f": [1.0, 2.0]}))
    with pytest.raises(InputError, match="negative"):
        fs.class_counts(bad, qi="q", weight="w")
    with pytest.raises(InputTypeError, match="integers"):
        fs.class_counts(bad, qi="q", weight="f")
    with pytest.raises(InputError, match="'nope' not found"):
        fs.class_counts(bad, qi="nope")
    with pytest.raises(InputTypeError, match="pyspark.sql.DataFrame"):
        fs.class_counts(sample, qi=qi)
