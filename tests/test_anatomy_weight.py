"""Anatomy and ART read ``weight=`` as everywhere in fastpriv (issue 49.2): each row stands
for ``weight`` identical people, and the result is exactly that of the table expanded into
one row per person (same seed); bad weights are refused naming the parameter, and
``fastpriv anonymize --weight`` calls the keyword instead of expanding the table itself."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv import _budget
from fastpriv.anonymize import anatomy, art
from fastpriv.anonymize._art import prepare_art
from fastpriv.errors import InputError, InputTypeError


def _weighted(seed: int = 0, n: int = 120, with_zero: bool = True) -> pa.Table:
    """A GROUP BY count: QI age, zip; sensitive dis; weight n (0 to 4 people a row)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0 if with_zero else 1, 5, n)
    return pa.table({"age": rng.integers(20, 60, n), "zip": rng.choice(["a", "b", "c"], n),
                     "dis": rng.choice(["flu", "hiv", "cold", "gout", "asthma"], n),
                     "n": pa.array(w, pa.int32())})


def _expanded(t: pa.Table, weight: str = "n") -> pa.Table:
    """``t`` with each row repeated ``weight`` times (written out here, independently)."""
    w = np.asarray(t[weight].to_numpy(), dtype=np.int64)
    return t.drop_columns([weight]).take(pa.array(np.repeat(np.arange(t.num_rows), w)))


def _same_anatomy(a, b) -> None:
    assert np.array_equal(a.group_ids, b.group_ids)
    assert a.release.equals(b.release)
    assert a.params == b.params
    for name in ("mode", "residual_rows", "group_size_counts", "dropped_nulls",
                 "max_value_count", "qi", "sensitive", "group_column"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.qi_table().equals(b.qi_table())
    assert a.sensitive_table().equals(b.sensitive_table())
    assert a.auditor_view().equals(b.auditor_view())


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("l", [2, 3])
def test_anatomy_weight_equals_the_expanded_table(seed, l):  # noqa: E741
    t = _weighted(seed)
    kw = {"sensitive": "dis", "l": l, "qi": ["age", "zip"], "seed": seed}
    res = anatomy(t, weight="n", **kw)
    ref = anatomy(_expanded(t), **kw)
    _same_anatomy(res, ref)
    assert res.source.equals(_expanded(t))        # the people: the rows the ids index
    assert res.group_ids.shape[0] == int(np.sum(t["n"].to_numpy()))


def test_anatomy_weight_sensitive_set_default_qi_and_nulls():
    """The sensitive-set mode, the default QI (every column but the sensitive one: never
    the weight column) and nulls="drop" read the expanded table too."""
    t = _weighted(3)
    dis = t["dis"].to_pylist()
    dis[5] = None
    t = t.set_column(2, "dis", pa.array(dis))
    kw = {"sensitive": "dis", "l": 3, "seed": 2, "nulls": "drop",
          "sensitive_values": ["hiv"]}
    res = anatomy(t, weight="n", **kw)
    _same_anatomy(res, anatomy(_expanded(t), **kw))
    assert res.qi == ("age", "zip")
    assert res.dropped_nulls == t["n"][5].as_py()


def _same_art(a, b) -> None:
    assert np.array_equal(a.group_ids, b.group_ids)
    assert a.release.equals(b.release)
    assert a.params == b.params
    assert a.facts() == b.facts()            # merges, stranded groups, exact audit, …


@pytest.mark.parametrize("seed", [0, 4])
@pytest.mark.parametrize("condition", ["delta", "exact"])
def test_art_weight_equals_the_expanded_table(seed, condition):
    t = _weighted(seed, n=200)
    kw = {"qi": ["age", "zip"], "sensitive": "dis", "r": 2, "condition": condition}
    res = art(t, weight="n", **kw)
    ref = art(_expanded(t), **kw)
    _same_art(res, ref)
    assert res.source.equals(_expanded(t))
    assert res.group_ids.shape[0] == int(np.sum(t["n"].to_numpy()))
    # the people are what the release publishes and the auditor's view shows
    assert res.release_tables(res.source)["qi"].equals(ref.release_tables(_expanded(t))["qi"])
    assert res.auditor_view(res.source).equals(ref.auditor_view(_expanded(t)))


def test_art_weight_through_prepare_art():
    """prepare_art reads weight= too (reuse across r); art refuses it a second time."""
    t = _weighted(5, n=150)
    kw = {"sensitive_values": ["hiv", "flu"], "nulls": "drop"}
    prep = prepare_art(t, ["age", "zip"], "dis", weight="n", **kw)
    res = art(None, qi=["age", "zip"], sensitive="dis", r=3, prepared=prep)
    _same_art(res, art(_expanded(t), qi=["age", "zip"], sensitive="dis", r=3, **kw))
    assert res.source.equals(_expanded(t))
    with pytest.raises(InputError, match="weight"):
        art(None, qi=["age", "zip"], sensitive="dis", r=3, prepared=prep, weight="n")


def _anatomy(t, weight):
    return anatomy(t, sensitive="dis", l=2, qi=["age", "zip"], weight=weight)


def _art(t, weight):
    return art(t, qi=["age", "zip"], sensitive="dis", r=2, weight=weight)


@pytest.mark.parametrize("run", [_anatomy, _art], ids=["anatomy", "art"])
@pytest.mark.parametrize("column, weight, error, match", [
    (pa.array([1, -2] * 60, pa.int64()), "w", InputError, "negative"),
    (pa.array([1.0, 2.0] * 60), "w", InputTypeError, "integers"),
    (pa.array([1, None] * 60, pa.int64()), "w", InputError, "null"),
    (pa.array([True, False] * 60), "w", InputTypeError, "integers"),
    (pa.array([1, 2] * 60, pa.int64()), "missing", InputError, "weight"),
    (pa.array([1, 2] * 60, pa.int64()), 3, InputTypeError, "weight must be a column name"),
    (pa.array([1, 2] * 60, pa.int64()), "dis", InputError, "also a qi or sensitive"),
    (pa.array([1, 2] * 60, pa.int64()), "age", InputError, "also a qi or sensitive"),
])
def test_bad_weights_are_refused_naming_the_parameter(run, column, weight, error, match):
    t = _weighted(1).append_column("w", column)
    with pytest.raises(error, match=match) as exc:
        run(t, weight)
    assert "weight" in str(exc.value)


@pytest.mark.parametrize("run", [_anatomy, _art], ids=["anatomy", "art"])
def test_weights_beyond_the_rows_or_the_memory_are_refused_before_expanding(run,
                                                                           monkeypatch):
    t = _weighted(2, with_zero=False)
    big = t.set_column(3, "n", pa.array([2**31] + [1] * (t.num_rows - 1), pa.int64()))
    with pytest.raises(InputError, match="people"):
        run(big, "n")
    monkeypatch.setattr(_budget, "available_memory", lambda: 1 << 10)   # 1 KiB free
    with pytest.raises(InputError, match="memory"):
        run(t, "n")


@pytest.mark.parametrize("method, function", [("anatomy", "fastpriv.anonymize._anatomy.anatomy"),
                                              ("art", "fastpriv.anonymize._art.art")])
def test_cli_calls_the_weight_keyword(method, function, tmp_path, monkeypatch, capsys):
    """fastpriv anonymize --method anatomy/art --weight n hands the weighted table and
    weight="n" to the Python function (one expansion, its own), and publishes the same
    release as the expanded table."""
    import importlib

    from fastpriv.cli import main

    t = _weighted(6, n=150)
    pq.write_table(t, tmp_path / "agg.parquet")
    pq.write_table(_expanded(t), tmp_path / "big.parquet")
    module_name, name = function.rsplit(".", 1)
    module = importlib.import_module(module_name)
    real = getattr(module, name)
    calls = []

    def spy(data, **kw):
        calls.append((data, kw.get("weight")))
        return real(data, **kw)

    monkeypatch.setattr(module, name, spy)
    crit = ["--min-l", "2"] if method == "anatomy" else ["--r", "2"]
    common = ["--method", method, "--qi", "age", "zip", "--sensitive", "dis", *crit]
    assert main(["anonymize", str(tmp_path / "agg.parquet"), *common, "--weight", "n",
                 "-o", str(tmp_path / "w.parquet")]) == 0
    assert main(["anonymize", str(tmp_path / "big.parquet"), *common,
                 "-o", str(tmp_path / "e.parquet")]) == 0
    (weighted_data, weight), (_, no_weight) = calls
    assert weight == "n" and no_weight is None
    assert pq.read_table(weighted_data).num_rows == t.num_rows     # not expanded by the CLI
    assert "expanded into" in capsys.readouterr().err
    for part in ("qi", "sensitive"):
        w = pq.read_table(tmp_path / f"w.{part}.parquet")
        e = pq.read_table(tmp_path / f"e.{part}.parquet")
        assert w.equals(e), part
