"""Tests of fastpriv.datasets: bundled Adult, hierarchies, synthetic generators.

CI runs on a clean clone without ``../shared``: every test asserts something there. Tests
that can also read the raw UCI files (when present) check the shipped Parquet against an
independent pandas parse; the same facts are asserted unconditionally on the shipped file,
including a content digest that the raw-file comparison ties to the UCI originals.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastpriv
from fastpriv.datasets import (
    ADULT_COLUMNS,
    _build_adult,
    adult_path,
    hierarchy_path,
    list_hierarchies,
    load_adult,
    synthetic,
    synthetic_batches,
    synthetic_release,
)
from fastpriv.datasets import synthetic as synthetic_function

SYN = sys.modules["fastpriv.datasets.synthetic"]

RAW_DIR = Path(os.environ.get(
    "FASTPRIV_ADULT_DIR",
    Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"))
HAVE_RAW = (RAW_DIR / "adult.data").is_file() and (RAW_DIR / "adult.test").is_file()

INT_COLUMNS = {"age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
               "hours_per_week"}
#: Distinct values per column in the cleaned table (UCI README / shared data README).
DISTINCT = {"age": 74, "workclass": 7, "education": 16, "education_num": 16,
            "marital_status": 7, "occupation": 14, "relationship": 6, "race": 5, "sex": 2,
            "native_country": 41, "income": 2}
#: sha256 of the cleaned table's content (see _content_digest), the value that
#: test_adult_equals_independent_pandas_parse obtains from the raw UCI files.
ADULT_DIGEST = "d8d92d0a78b96764d3b32478f0795b40d57d296fc150beedd81b00ea36e6278e"


def _content_digest(columns: dict[str, list]) -> str:
    h = hashlib.sha256()
    for name, values in columns.items():
        h.update(json.dumps([name, values], separators=(",", ":")).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def adult() -> pa.Table:
    return load_adult()


# --------------------------------------------------------------------------------------
# Adult: facts asserted on the shipped file (always)
# --------------------------------------------------------------------------------------

def test_adult_shape_names_types(adult):
    assert adult.num_rows == 45_222
    assert tuple(adult.column_names) == ADULT_COLUMNS
    assert ADULT_COLUMNS == (
        "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
        "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
        "hours_per_week", "native_country", "income")
    for field in adult.schema:
        expected = pa.int64() if field.name in INT_COLUMNS else pa.string()
        assert field.type == expected, field
        assert adult.column(field.name).null_count == 0


def test_adult_known_counts(adult):
    income = dict(zip(*pc.value_counts(adult["income"]).flatten(), strict=True))
    assert {k.as_py(): v.as_py() for k, v in income.items()} == {"<=50K": 34_014,
                                                                  ">50K": 11_208}
    edu = Counter(adult["education"].to_pylist())
    low = {"Preschool": 72, "1st-4th": 222, "5th-6th": 449, "7th-8th": 823}
    assert {k: edu[k] for k in low} == low
    assert sum(edu[k] for k in low) == 1_566
    assert round(100 * 1_566 / adult.num_rows, 2) == 3.46
    for col, n in DISTINCT.items():
        assert len(pc.unique(adult[col])) == n, col
    assert pc.min_max(adult["age"]).as_py() == {"min": 17, "max": 90}


def test_adult_values_are_clean(adult):
    for col in ADULT_COLUMNS:
        if col in INT_COLUMNS:
            continue
        values = pc.unique(adult[col]).to_pylist()
        assert "?" not in values, col
        assert all(v == v.strip() and v for v in values), col
    assert set(pc.unique(adult["income"]).to_pylist()) == {"<=50K", ">50K"}


def test_adult_content_digest(adult):
    # Pins the exact content that test_adult_equals_independent_pandas_parse verified
    # against the raw UCI files, so a clean clone (no raw files) still detects any change.
    assert _content_digest(adult.to_pydict()) == ADULT_DIGEST


def test_adult_file_is_compact_and_credits_source():
    import pyarrow.parquet as pq

    path = adult_path()
    assert os.path.getsize(path) < 1_000_000
    meta = pq.read_metadata(path)
    assert meta.num_rows == 45_222
    assert meta.row_group(0).column(0).compression == "ZSTD"
    kv = {k.decode(): v.decode() for k, v in meta.metadata.items()}
    assert "10.24432/C5XW20" in kv["source"] and kv["license"] == "CC BY 4.0"


def test_load_adult_columns_projection():
    t = load_adult(columns=["sex", "age"])
    assert t.column_names == ["sex", "age"] and t.num_rows == 45_222
    with pytest.raises(ValueError, match="columns.*'nope'.*available"):
        load_adult(columns=["nope"])
    with pytest.raises(TypeError, match="columns"):
        load_adult(columns="age")


def test_docstrings_credit_source():
    import fastpriv.datasets as ds

    for doc in (ds.__doc__, ds.load_adult.__doc__, _build_adult.__doc__):
        assert "Becker" in doc and "Kohavi" in doc and "1996" in doc
        assert "10.24432/C5XW20" in doc and "CC BY 4.0" in doc
    assert "45,222" in ds.load_adult.__doc__ and "?" in ds.load_adult.__doc__


def test_adult_release_classical_facts(adult):
    # The table feeds Release directly (string columns, no nulls).
    rel = fastpriv.Release.from_table(adult, sensitive="occupation", qi=["sex", "race"])
    assert rel.n_rows == 45_222 and rel.n_values == 14 and rel.n_groups == 10


# --------------------------------------------------------------------------------------
# Adult: the raw-file comparison (runs fully when the UCI files are present)
# --------------------------------------------------------------------------------------

RAW_NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
             "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
             "hours-per-week", "native-country", "income"]


def _pandas_parse(folder: Path):
    import pandas as pd

    kw = dict(header=None, names=RAW_NAMES, skipinitialspace=True, na_values="?")
    train = pd.read_csv(folder / "adult.data", **kw)
    test = pd.read_csv(folder / "adult.test", skiprows=1, **kw)
    test["income"] = test["income"].str.rstrip(".")
    out = pd.concat([train, test], ignore_index=True).dropna().reset_index(drop=True)
    out.columns = [c.replace("-", "_") for c in out.columns]
    return out


def test_adult_equals_independent_pandas_parse(adult, tmp_path):
    """Shipped file == README pandas recipe on the raw files (or on a written sample).

    Without the raw UCI files (clean clone) the same recipe runs on a small raw sample
    written here in the UCI layout, against the build script's cleaning function.
    """
    if HAVE_RAW:
        folder = RAW_DIR
        expected = adult
    else:
        folder = tmp_path
        rows_data = [
            "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family,"
            " White, Male, 2174, 0, 40, United-States, <=50K",
            "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband,"
            " Asian-Pac-Islander, Male, 0, 0, 60, South, >50K",
            "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial,"
            " Husband, White, Male, 0, 0, 13, United-States, <=50K",
        ]
        rows_test = [
            "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child,"
            " Black, Male, 0, 0, 40, United-States, <=50K.",
            "18, Private, 103497, Some-college, 10, Never-married, Prof-specialty, Own-child,"
            " White, Female, 0, 0, 30, ?, <=50K.",
            "44, Private, 160323, Some-college, 10, Married-civ-spouse, Machine-op-inspct,"
            " Husband, Black, Male, 7688, 0, 40, United-States, >50K.",
        ]
        (folder / "adult.data").write_text("\n".join(rows_data) + "\n\n")
        (folder / "adult.test").write_text("|1x3 Cross validator\n" + "\n".join(rows_test)
                                           + "\n\n")
        expected = _build_adult.clean(str(folder / "adult.data"), str(folder / "adult.test"),
                                      check_counts=False)
        assert expected.num_rows == 4
        assert expected["income"].to_pylist() == ["<=50K", "<=50K", "<=50K", ">50K"]
    ref = _pandas_parse(folder)
    assert list(ref.columns) == list(ADULT_COLUMNS)
    ref_cols = {c: ref[c].tolist() for c in ref.columns}
    assert ref_cols == expected.to_pydict()
    if HAVE_RAW:
        assert len(ref) == 45_222
        assert _content_digest(ref_cols) == ADULT_DIGEST


def test_build_script_reproduces_shipped_file(tmp_path):
    """Rebuild from the raw files (when present) and compare with the shipped file."""
    import pyarrow.parquet as pq

    shipped = pq.read_table(adult_path())
    # Metadata records the verified source checksums either way.
    meta = shipped.schema.metadata
    for name, _, digest in _build_adult.SOURCES:
        assert f"{name}={digest}".encode() in meta[b"source_sha256"]
    if HAVE_RAW:
        out = tmp_path / "adult.parquet"
        _build_adult.main(["--source", str(RAW_DIR), "--out", str(out)])
        assert pq.read_table(out).equals(shipped)
        with pytest.raises(FileExistsError):
            _build_adult.build(str(RAW_DIR), str(out))
    else:
        assert shipped.num_rows == _build_adult.EXPECTED_ROWS


def test_build_refuses_other_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="adult.data"):
        _build_adult.verify_sources(str(tmp_path))
    (tmp_path / "adult.data").write_text("39, State-gov\n")
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n")
    with pytest.raises(ValueError, match="refusing to build"):
        _build_adult.build(str(tmp_path), str(tmp_path / "out.parquet"))
    assert not (tmp_path / "out.parquet").exists()


def test_build_refuses_to_write_inside_source(tmp_path):
    if not HAVE_RAW:
        # atomic_write's input guard, which build() relies on, with a stand-in input folder.
        from fastpriv._io import atomic_write

        with pytest.raises(ValueError, match="refusing"):
            atomic_write(tmp_path / "x.parquet", lambda p: None, inputs=[str(tmp_path)])
        return
    with pytest.raises(ValueError, match="refusing"):
        _build_adult.build(str(RAW_DIR), str(RAW_DIR / "adult.parquet"))


# --------------------------------------------------------------------------------------
# Hierarchies
# --------------------------------------------------------------------------------------

REQUIRED_LEVELS = {"age": 6, "marital_status": 3, "race": 2, "sex": 2}
ADULT_HIERARCHIES = ["age", "education", "marital_status", "native_country", "occupation",
                     "race", "sex", "workclass"]


def _read_hierarchy(name: str) -> list[list[str]]:
    with open(hierarchy_path(name), newline="", encoding="utf-8") as fh:
        return [row for row in csv.reader(fh, delimiter=";")]


def test_list_hierarchies():
    assert set(ADULT_HIERARCHIES) <= set(list_hierarchies())
    assert list_hierarchies() == sorted(list_hierarchies())


@pytest.mark.parametrize("name", ADULT_HIERARCHIES)
def test_hierarchy_structure(name, adult):
    rows = _read_hierarchy(name)
    n_levels = len(rows[0])
    assert n_levels >= 2
    assert all(len(r) == n_levels for r in rows), "ragged rows"
    assert all(r[-1] == "*" for r in rows)
    assert all(all(cell and cell == cell.strip() for cell in r) for r in rows)
    # No header row: the first row is a value like the others (checked via coverage
    # below: every level-0 entry is a value, and Adult covers all non-age values).
    originals = [r[0] for r in rows]
    assert len(originals) == len(set(originals)), "a value has more than one row"
    # Coarsening: a level-j label determines its level-(j+1) label.
    for j in range(n_levels - 1):
        parent: dict[str, str] = {}
        for r in rows:
            assert parent.setdefault(r[j], r[j + 1]) == r[j + 1], (name, j, r)
    # Every Adult value is covered (hence has a label at every level).
    present = {str(v) for v in pc.unique(adult[name]).to_pylist()}
    missing = present - set(originals)
    assert not missing, missing
    if name != "age":
        assert set(originals) == present, set(originals) - present


@pytest.mark.parametrize("name,levels", sorted(REQUIRED_LEVELS.items()))
def test_required_hierarchy_levels(name, levels):
    rows = _read_hierarchy(name)
    assert {len(r) for r in rows} == {levels}


def test_age_hierarchy_intervals():
    rows = {int(r[0]): r for r in _read_hierarchy("age")}
    assert set(range(0, 101)) <= set(rows)
    for age, r in rows.items():
        assert r[0] == str(age)
        for level, width in enumerate((5, 10, 20, 40), start=1):
            lo = age // width * width
            assert r[level] == f"[{lo}, {lo + width})"
        assert r[5] == "*"
    # The 20-year release of Figure 5 of the (c,k)-safety paper on Adult's ages 17..90.
    assert {rows[a][3] for a in range(17, 91)} == {"[0, 20)", "[20, 40)", "[40, 60)",
                                                   "[60, 80)", "[80, 100)"}


def test_marital_race_sex_hierarchies():
    marital = {r[0]: r[1] for r in _read_hierarchy("marital_status")}
    assert marital == {
        "Married-civ-spouse": "Married", "Married-AF-spouse": "Married",
        "Married-spouse-absent": "Married", "Never-married": "Never-married",
        "Divorced": "Was-married", "Separated": "Was-married", "Widowed": "Was-married"}
    assert {r[0] for r in _read_hierarchy("race")} == {
        "White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"}
    assert {r[0] for r in _read_hierarchy("sex")} == {"Male", "Female"}


def test_education_hierarchy_groups():
    rows = {r[0]: r for r in _read_hierarchy("education")}
    low = {"Preschool", "1st-4th", "5th-6th", "7th-8th"}
    assert {v for v, r in rows.items() if r[1] == "Primary school"} == low
    assert {v for v, r in rows.items() if r[2] == "Higher education"} == {
        "Bachelors", "Masters", "Doctorate", "Prof-school"}
    assert {v for v, r in rows.items() if r[2] == "High school/college"} == {
        "HS-grad", "Some-college", "Assoc-acdm", "Assoc-voc"}


def test_hierarchies_generalize_adult(adult):
    # Generalizing Adult with the hierarchies gives the 72-node lattice's top and bottom.
    maps = {n: {r[0]: r for r in _read_hierarchy(n)} for n in REQUIRED_LEVELS}
    cols = {n: [str(v) for v in adult[n].to_pylist()] for n in REQUIRED_LEVELS}
    top = {n: [maps[n][v][-1] for v in cols[n]] for n in REQUIRED_LEVELS}
    t = pa.table({**top, "occupation": adult["occupation"]})
    rel = fastpriv.Release.from_table(t, sensitive="occupation", qi=list(REQUIRED_LEVELS))
    assert rel.n_groups == 1 and rel.n_rows == 45_222
    age20 = pa.table({"age": [maps["age"][v][3] for v in cols["age"]],
                      "occupation": adult["occupation"]})
    rel = fastpriv.Release.from_table(age20, sensitive="occupation", qi=["age"])
    assert rel.n_groups == 5


def test_hierarchy_path_errors():
    assert hierarchy_path("marital-status") == hierarchy_path("marital_status")
    assert Path(hierarchy_path("age")).name == "age.csv"
    with pytest.raises(ValueError, match=r"attribute.*'zip'.*available: .*age.*sex"):
        hierarchy_path("zip")
    with pytest.raises(ValueError, match="available"):
        hierarchy_path("../data/adult")
    with pytest.raises(TypeError, match="attribute"):
        hierarchy_path(3)


# --------------------------------------------------------------------------------------
# Synthetic
# --------------------------------------------------------------------------------------

def _chi2(observed: np.ndarray, probs: np.ndarray) -> float:
    expected = probs * observed.sum()
    return float(((observed - expected) ** 2 / expected).sum())


# chi-square critical values at p = 1e-6 (df 19: 59.7 … ; df 9: 42.0); the seeds are fixed,
# so these checks are deterministic; they guard against a wrong distribution, not noise.
CHI2_DF19 = 62.0
CHI2_DF9 = 42.0


def test_synthetic_determinism_and_schema():
    a = synthetic(10_000, n_groups=100, seed=3)
    b = synthetic(10_000, n_groups=100, seed=3)
    c = synthetic(10_000, n_groups=100, seed=4)
    assert a.equals(b) and not a.equals(c)
    assert a.schema.names == ["group", "sensitive"]
    assert a.schema.field("group").type == pa.int64()
    assert a.schema.field("sensitive").type == pa.dictionary(pa.int32(), pa.string())
    sens = a.column("sensitive").combine_chunks()
    assert sens.dictionary.to_pylist() == [f"v{i:02d}" for i in range(20)]


def test_synthetic_labels_width():
    assert SYN.value_labels(20)[:2] == ["v00", "v01"] and SYN.value_labels(20)[-1] == "v19"
    assert SYN.value_labels(5) == ["v0", "v1", "v2", "v3", "v4"]
    assert SYN.value_labels(1) == ["v0"]
    assert SYN.value_labels(11)[-1] == "v10" and SYN.value_labels(101)[0] == "v000"
    t = synthetic(50, group_size=5, n_values=3)
    assert set(t["sensitive"].to_pylist()) <= {"v0", "v1", "v2"}
    t = synthetic(50, group_size=5, n_values=1)
    assert set(t["sensitive"].to_pylist()) == {"v0"}


def test_synthetic_group_size_exact():
    t = synthetic(200_000, group_size=100, seed=1)
    g = t["group"].to_numpy()
    assert np.array_equal(g, np.arange(200_000) // 100)
    sizes = np.bincount(g)
    assert sizes.size == 2_000 and (sizes == 100).all()
    with pytest.raises(ValueError, match=r"group_size.*multiple"):
        synthetic(1_001, group_size=100)


@pytest.mark.parametrize("n_rows,n_groups", [(1_000, 1_000), (1_001, 1_000), (50_000, 777),
                                             (10, 1), (5, 9)])
def test_synthetic_n_groups_non_empty(n_rows, n_groups):
    g = synthetic(n_rows, n_groups=n_groups, seed=2)["group"].to_numpy()
    assert g.min() >= 0 and g.max() < n_groups
    counts = np.bincount(g, minlength=n_groups)
    if n_rows >= n_groups:
        assert (counts > 0).all()
    else:
        assert (counts <= 1).all() and counts.sum() == n_rows


def test_synthetic_n_groups_uniform():
    g = synthetic(400_000, n_groups=10, seed=7)["group"].to_numpy()
    assert _chi2(np.bincount(g, minlength=10), np.full(10, 0.1)) < CHI2_DF9


def test_synthetic_uniform_frequencies():
    t = synthetic(400_000, group_size=400, n_values=20, seed=11)
    codes = t["sensitive"].combine_chunks().indices.to_numpy()
    assert _chi2(np.bincount(codes, minlength=20), np.full(20, 0.05)) < CHI2_DF19


@pytest.mark.parametrize("s", [0.0, 1.1, 2.0])
def test_synthetic_zipf_frequencies(s):
    t = synthetic(400_000, n_groups=50, n_values=20, distribution="zipf", zipf_s=s, seed=5)
    codes = t["sensitive"].combine_chunks().indices.to_numpy()
    w = 1.0 / np.arange(1, 21) ** s
    observed = np.bincount(codes, minlength=20)
    assert _chi2(observed, w / w.sum()) < CHI2_DF19
    if s > 0:
        assert observed[0] == observed.max()  # rank 1 = "v00" is the most frequent


def test_synthetic_zipf_is_exact_inverse_cdf():
    # The documented draw: block 0 generator, groups first, then u = rng.random();
    # code = searchsorted(cdf, u, "right"). The guide table must not change any draw.
    n_rows, n_values, s, seed = 300_000, 37, 1.3, 9
    t = synthetic(n_rows, n_groups=10, n_values=n_values, distribution="zipf", zipf_s=s,
                  seed=seed)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed,
                                                                     spawn_key=(0, 0))))
    rng.integers(0, 10, n_rows, dtype=np.int64)
    u = rng.random(n_rows)
    w = 1.0 / np.arange(1, n_values + 1, dtype=np.float64) ** s
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    expected = np.searchsorted(cdf, u, side="right")
    assert np.array_equal(t["sensitive"].combine_chunks().indices.to_numpy(), expected)


def test_synthetic_qi_columns():
    t = synthetic(30_000, qi_cardinalities=[3, 50, 1], n_values=4, seed=1)
    assert t.column_names == ["q0", "q1", "q2", "sensitive"]
    for j, c in enumerate([3, 50, 1]):
        col = t[f"q{j}"]
        assert col.type == pa.int32()
        assert set(np.unique(col.to_numpy())) == set(range(c))
    rel = synthetic_release(30_000, qi_cardinalities=[3, 50, 1], n_values=4, seed=1)
    assert rel.n_groups == 150 and rel.n_rows == 30_000 and rel.values == ["v0", "v1", "v2",
                                                                           "v3"]


def test_synthetic_release():
    rel = synthetic_release(10_000, group_size=100, seed=4)
    assert rel.n_groups == 100 and rel.n_rows == 10_000
    assert (rel.sizes == 100).all()
    assert rel.n_values == 20
    ref = fastpriv.Release.from_table(synthetic(10_000, group_size=100, seed=4),
                                      sensitive="sensitive", group="group")
    assert rel.equals(ref)
    rel = synthetic_release(2_000, n_groups=300, seed=4)
    assert rel.n_groups == 300


@pytest.mark.parametrize("kwargs", [dict(group_size=7), dict(n_groups=100_000),
                                    dict(qi_cardinalities=[4, 5], distribution="zipf")])
def test_synthetic_batches_equal_whole_across_blocks(kwargs):
    n_rows = 7 * 160_000  # > BLOCK_ROWS: the stream crosses an internal block boundary
    assert n_rows > SYN.BLOCK_ROWS
    whole = synthetic(n_rows, seed=12, **kwargs)
    for batch_rows in (333_331, SYN.BLOCK_ROWS, 2_000_000):
        batches = list(synthetic_batches(n_rows, batch_rows=batch_rows, seed=12, **kwargs))
        assert all(b.num_rows == batch_rows for b in batches[:-1])
        assert 0 < batches[-1].num_rows <= batch_rows
        assert pa.Table.from_batches(batches).equals(whole)


@pytest.mark.slow
@given(n_rows=st.integers(1, 60), batch_rows=st.integers(1, 70), block=st.integers(1, 9),
       mode=st.sampled_from(["group_size", "n_groups", "qi"]), seed=st.integers(0, 3),
       dist=st.sampled_from(["uniform", "zipf"]))
def test_synthetic_batches_property(n_rows, batch_rows, block, mode, seed, dist):
    # Small internal blocks make the chunk/batch bookkeeping visible on tiny inputs.
    kwargs = {"group_size": dict(group_size=1), "n_groups": dict(n_groups=7),
              "qi": dict(qi_cardinalities=[2, 3])}[mode]
    old = SYN.BLOCK_ROWS
    SYN.BLOCK_ROWS = block
    try:
        whole = synthetic(n_rows, seed=seed, distribution=dist, n_values=6, **kwargs)
        batches = list(synthetic_batches(n_rows, batch_rows=batch_rows, seed=seed,
                                         distribution=dist, n_values=6, **kwargs))
    finally:
        SYN.BLOCK_ROWS = old
    assert sum(b.num_rows for b in batches) == n_rows
    assert len(batches) == math.ceil(n_rows / batch_rows)
    assert pa.Table.from_batches(batches, schema=whole.schema).equals(whole)


def test_synthetic_batches_feed_release():
    batches = list(synthetic_batches(5_000, batch_rows=1_234, n_groups=50, seed=1))
    rel = fastpriv.Release.from_table(pa.Table.from_batches(batches), sensitive="sensitive",
                                      group="group")
    assert rel.equals(synthetic_release(5_000, n_groups=50, seed=1))


@pytest.mark.parametrize("kwargs,exc,pattern", [
    (dict(n_rows=0, group_size=1), ValueError, "n_rows"),
    (dict(n_rows=1.5, group_size=1), TypeError, "n_rows"),
    (dict(n_rows=10), ValueError, "exactly one of"),
    (dict(n_rows=10, group_size=5, n_groups=2), ValueError, "exactly one of"),
    (dict(n_rows=10, group_size=0), ValueError, "group_size"),
    (dict(n_rows=10, group_size=3), ValueError, "group_size"),
    (dict(n_rows=10, n_groups=0), ValueError, "n_groups"),
    (dict(n_rows=10, n_groups="3"), TypeError, "n_groups"),
    (dict(n_rows=10, qi_cardinalities=[]), ValueError, "qi_cardinalities"),
    (dict(n_rows=10, qi_cardinalities=[3, 0]), ValueError, r"qi_cardinalities\[1\]"),
    (dict(n_rows=10, qi_cardinalities="ab"), TypeError, "qi_cardinalities"),
    (dict(n_rows=10, qi_cardinalities=[2**31]), ValueError, "qi_cardinalities"),
    (dict(n_rows=10, group_size=1, n_values=0), ValueError, "n_values"),
    (dict(n_rows=10, group_size=1, n_values=True), TypeError, "n_values"),
    (dict(n_rows=10, group_size=1, distribution="normal"), ValueError, "distribution"),
    (dict(n_rows=10, group_size=1, distribution=None), TypeError, "distribution"),
    (dict(n_rows=10, group_size=1, distribution="zipf", zipf_s=-1.0), ValueError, "zipf_s"),
    (dict(n_rows=10, group_size=1, zipf_s=float("nan")), ValueError, "zipf_s"),
    (dict(n_rows=10, group_size=1, zipf_s="1"), TypeError, "zipf_s"),
    (dict(n_rows=10, group_size=1, seed=-1), ValueError, "seed"),
    (dict(n_rows=10, group_size=1, seed=None), TypeError, "seed"),
])
def test_synthetic_argument_errors(kwargs, exc, pattern):
    n_rows = kwargs.pop("n_rows")
    for fn in (synthetic, synthetic_release):
        with pytest.raises(exc, match=pattern):
            fn(n_rows, **kwargs)
    with pytest.raises(exc, match=pattern):
        synthetic_batches(n_rows, **kwargs)  # validated eagerly, before iteration


def test_synthetic_batches_argument_errors():
    with pytest.raises(ValueError, match="batch_rows"):
        synthetic_batches(10, batch_rows=0, group_size=1)
    with pytest.raises(TypeError, match="batch_rows"):
        synthetic_batches(10, batch_rows=2.0, group_size=1)
    with pytest.raises(TypeError, match="group_sze"):
        synthetic_batches(10, group_sze=1)


def test_synthetic_accepts_numpy_integers():
    a = synthetic(np.int64(100), group_size=np.int32(10), n_values=np.int16(4),
                  seed=np.uint8(1))
    assert a.equals(synthetic(100, group_size=10, n_values=4, seed=1))
    b = synthetic(100, qi_cardinalities=np.array([2, 3]), seed=1)
    assert b.equals(synthetic(100, qi_cardinalities=[2, 3], seed=1))


# --------------------------------------------------------------------------------------
# Import cost and names
# --------------------------------------------------------------------------------------

def test_import_is_light():
    code = ("import sys, fastpriv.datasets as d; "
            "print(sorted(m for m in ('numba', 'numpy', 'pyarrow', 'pandas') "
            "if m in sys.modules)); print(callable(d.synthetic))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


def test_synthetic_name_is_the_function():
    import fastpriv.datasets as ds

    assert callable(synthetic_function) and ds.synthetic is synthetic_function
    assert fastpriv.datasets.synthetic_batches is synthetic_batches
