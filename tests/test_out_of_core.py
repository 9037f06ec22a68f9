"""Out-of-core releases (issue 45): the histogram, the search on it, the release streamed.

The oracle is the in-memory path: the anonymizer on the whole table, its release table
(:meth:`fastpriv.anonymize.Anonymized.table`). The out-of-core release must be the same
table — rows, order, group ids, columns and metadata — whatever the batch size, the input's
form (table, Parquet path, CSV path, iterator of batches) and the input's row order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv.anonymize import lattice_search, minimal_ck_safe, mondrian, skyline_anonymize
from fastpriv.anonymize import out_of_core as ooc
from fastpriv.anonymize._publish import canonical_order, canonical_order_of_counts
from fastpriv.errors import InputError

ADULT = fp.datasets.load_adult()
QI = ["age", "sex", "race"]

CASES = {
    "lattice-k-l-suppression": ("lattice", lattice_search,
                                dict(qi=QI, sensitive="occupation", min_size=5, l=2,
                                     suppression=0.02, hierarchies="bundled")),
    "lattice-t": ("lattice", lattice_search,
                  dict(qi=["age", "marital_status", "race", "sex"], sensitive="occupation",
                       min_size=10, t=0.3, hierarchies="bundled")),
    "lattice-k-only": ("lattice", lattice_search,
                       dict(qi=QI, sensitive=None, min_size=20, hierarchies="bundled")),
    "mondrian": ("mondrian", mondrian, dict(qi=QI, sensitive="occupation", min_size=5, l=3)),
    "skyline": ("skyline", skyline_anonymize,
                dict(qi=QI, sensitive="occupation", skylines={"*": [(1, 1, 1, 0.9)]})),
    "minimal_ck_safe": ("minimal_ck_safe", minimal_ck_safe,
                        dict(qi=["age", "marital_status", "race", "sex"],
                             sensitive="occupation", c=0.8, k=2, hierarchies="bundled")),
}


def _in_memory(fn, data, kw):
    res = fn(data, **kw)
    anon = res.anonymized if hasattr(res, "anonymized") else res
    return anon.table(data)


@pytest.mark.parametrize("case", sorted(CASES))
def test_release_equals_the_in_memory_release(case, tmp_path):
    method, fn, kw = CASES[case]
    expected = _in_memory(fn, ADULT, kw)
    out = tmp_path / "release.parquet"
    r = ooc.release_out_of_core(ADULT, output=out, method=method, batch_rows=4096, **kw)
    got = pq.read_table(out)
    assert got.equals(expected)
    assert got.schema.metadata == expected.schema.metadata
    assert r.value and r.reaudit["groups_equal"]
    assert r.reaudit["criterion_holds"] in (True, None if kw.get("sensitive") is None else True)
    assert r.n_written == expected.num_rows and r.paths == [str(out.resolve())]
    assert r.to_dict()["holds"] is True and "re-audit" in r.summary()


def test_inputs_of_every_form_and_order_give_the_same_bytes(tmp_path):
    method, fn, kw = CASES["lattice-k-l-suppression"]
    expected = _in_memory(fn, ADULT, kw)
    rng = np.random.default_rng(7)
    shuffled = ADULT.take(pa.array(rng.permutation(ADULT.num_rows)))
    pq.write_table(shuffled, tmp_path / "in.parquet", row_group_size=5000)
    pacsv.write_csv(ADULT, tmp_path / "in.csv")
    sources = {"parquet": str(tmp_path / "in.parquet"), "csv": str(tmp_path / "in.csv"),
               "batches": iter(shuffled.to_batches(max_chunksize=3000)),
               "reader": pa.RecordBatchReader.from_batches(
                   ADULT.schema, ADULT.to_batches(max_chunksize=10_000))}
    blobs = set()
    for name, src in sources.items():
        out = tmp_path / f"{name}.parquet"
        ooc.release_out_of_core(src, output=out, method=method, batch_rows=2048, **kw)
        got = pq.read_table(out)
        assert got.equals(expected.replace_schema_metadata(got.schema.metadata)), name
        blobs.add(out.read_bytes())
    assert len(blobs) == 1          # row order of the input never reaches the file


def test_histogram_merges_partial_counts(monkeypatch):
    monkeypatch.setattr(ooc, "_MERGE_ROWS", 10)
    h = ooc.histogram(ADULT, QI + ["occupation"], batch_size=1000)
    direct = ADULT.group_by(QI + ["occupation"]).aggregate([([], "count_all")])
    assert h.num_rows == direct.num_rows
    assert int(pa.compute.sum(h.column(ooc.PEOPLE)).as_py()) == ADULT.num_rows
    assert h.schema.metadata == ADULT.schema.metadata      # the bundled data's mark


def test_weighted_input_equals_the_expanded_table(tmp_path):
    agg = ADULT.group_by(QI + ["occupation"]).aggregate([([], "count_all")]).rename_columns(
        QI + ["occupation", "n"]).replace_schema_metadata(ADULT.schema.metadata)
    method, fn, kw = CASES["mondrian"]
    expected = _in_memory(fn, ADULT, kw)
    out = tmp_path / "w.parquet"
    ooc.release_out_of_core(agg, output=out, method=method, weight="n", **kw)
    assert pq.read_table(out).equals(expected)


@pytest.mark.parametrize("nulls", ["error", "drop"])
def test_nulls_as_in_memory(nulls, tmp_path):
    ages = ADULT.column("age").to_pylist()
    ages[::97] = [None] * len(ages[::97])
    data = ADULT.set_column(ADULT.schema.get_field_index("age"), "age", pa.array(ages))
    method, fn, kw = CASES["mondrian"]
    kw = dict(kw, nulls=nulls)
    out = tmp_path / "n.parquet"
    if nulls == "error":
        with pytest.raises(InputError, match="age"):
            _in_memory(fn, data, kw)
        with pytest.raises(InputError, match="age"):
            ooc.release_out_of_core(data, output=out, method=method, **kw)
        assert not out.exists()
        return
    expected = _in_memory(fn, data, kw)
    ooc.release_out_of_core(data, output=out, method=method, **kw)
    assert pq.read_table(out).equals(expected)


def test_refusals_and_atomic_commit(tmp_path):
    method, fn, kw = CASES["mondrian"]
    src = tmp_path / "in.parquet"
    pq.write_table(ADULT, src)
    with pytest.raises(InputError, match="keep"):
        ooc.release_out_of_core(src, output=tmp_path / "o.parquet", method=method,
                                keep=["income"], **kw)
    with pytest.raises(InputError, match="method"):
        ooc.release_out_of_core(src, output=tmp_path / "o.parquet", method="anatomy", **kw)
    before = src.read_bytes()
    with pytest.raises(Exception, match="input"):
        ooc.release_out_of_core(src, output=src, method=method, overwrite=True, **kw)
    assert src.read_bytes() == before
    out = tmp_path / "o.parquet"
    out.write_bytes(b"old")
    with pytest.raises(FileExistsError):
        ooc.release_out_of_core(src, output=out, method=method, **kw)
    assert out.read_bytes() == b"old"
    with pytest.raises(InputError):          # the search fails: the old file stays
        ooc.release_out_of_core(src, output=out, method=method, overwrite=True,
                                **dict(kw, min_size=10**9))
    assert out.read_bytes() == b"old"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(1, 5)),
                min_size=1, max_size=40),
       st.integers(0, 2**32 - 1))
def test_order_of_counts_is_the_order_of_the_rows(cells, seed):
    """canonical_order_of_counts on (row, count) = canonical_order on the rows written out."""
    values = pa.table({"v": [c[0] for c in cells], "s": [c[1] for c in cells]})
    counts = np.array([c[2] for c in cells], dtype=np.int64)
    groups = np.random.default_rng(seed).integers(0, 3, len(cells)).astype(np.int64)
    groups = np.unique(groups, return_inverse=True)[1].astype(np.int64)   # 0..G-1, all used
    order, new_id = canonical_order_of_counts(values, groups, counts)
    idx = np.repeat(np.arange(len(cells)), counts)
    rows = values.take(pa.array(idx))
    r_order, r_new = canonical_order(rows, groups[idx])
    assert np.array_equal(new_id, r_new)
    ours = values.take(pa.array(np.repeat(order, counts[order])))
    theirs = rows.take(pa.array(r_order))
    assert ours.equals(theirs)
    assert np.array_equal(np.repeat(new_id[groups[order]], counts[order]),
                          r_new[groups[idx]][r_order])


# ----------------------------------------------------------------------------- the CLI
HIER = str(fp.datasets.hierarchy_path("age").rsplit("/", 1)[0])


def _cli(argv, capsys):
    from fastpriv.cli import main

    rc = main(argv)
    return rc, capsys.readouterr()


@pytest.mark.parametrize("method", ["lattice", "mondrian"])
def test_cli_anonymizes_a_large_input_out_of_core(method, tmp_path, capsys, monkeypatch):
    import json

    src = tmp_path / "adult.parquet"
    pq.write_table(ADULT, src, row_group_size=10_000)
    argv = ["anonymize", str(src), "--method", method, "--qi", *QI, "--sensitive",
            "occupation", "--min-size", "5", "--min-l", "2"]
    if method == "lattice":
        argv += ["--hierarchies", HIER, "--suppression", "0.02"]
    runs = {}
    for mode, limit in (("memory", str(1 << 40)), ("ooc", "0")):
        monkeypatch.setenv("FASTPRIV_OUT_OF_CORE_BYTES", limit)
        out, js = tmp_path / f"{mode}.parquet", tmp_path / f"{mode}.json"
        rc, cap = _cli(argv + ["-o", str(out), "--json", str(js)], capsys)
        assert rc == 0, cap.err
        assert ("out of core" in cap.err) == (mode == "ooc")
        runs[mode] = (pq.read_table(out), json.loads(js.read_text()), cap.out)
    (t_mem, j_mem, o_mem), (t_ooc, j_ooc, o_ooc) = runs["memory"], runs["ooc"]
    assert t_ooc.equals(t_mem) and t_ooc.schema.metadata == t_mem.schema.metadata
    facts = j_ooc.pop("out_of_core")
    assert facts["reaudit"]["groups_equal"] and facts["n_written"] == t_mem.num_rows
    for j in (j_ooc, j_mem):
        j.pop("seconds")
    assert j_ooc == j_mem and o_ooc == o_mem      # the same summary, in people


def test_cli_keeps_the_rows_in_memory_when_asked_for_what_needs_them(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setenv("FASTPRIV_OUT_OF_CORE_BYTES", "0")
    src = tmp_path / "adult.parquet"
    pq.write_table(ADULT, src)
    rc, cap = _cli(["anonymize", str(src), "--method", "mondrian", "--qi", *QI,
                    "--sensitive", "occupation", "--min-size", "5", "--keep", "income",
                    "-o", str(tmp_path / "r.parquet")], capsys)
    assert rc == 0 and "out of core" not in cap.err
    assert "income" in pq.read_table(tmp_path / "r.parquet").column_names
    monkeypatch.setenv("FASTPRIV_OUT_OF_CORE_BYTES", "many")
    rc, cap = _cli(["anonymize", str(src), "--method", "mondrian", "--qi", *QI,
                    "--sensitive", "occupation", "--min-size", "5",
                    "-o", str(tmp_path / "r2.parquet")], capsys)
    assert rc == 2 and "FASTPRIV_OUT_OF_CORE_BYTES" in cap.err


@pytest.mark.parametrize("method", ["anatomy", "art", "lattice", "mondrian"])
def test_in_memory_anonymizers_refuse_a_file_that_does_not_fit(method, tmp_path,
                                                               monkeypatch):
    """Issue 45.4: before reading, with the size it would need and the way out; never a
    MemoryError part-way."""
    from fastpriv import _budget
    from fastpriv.anonymize import anatomy, art

    src = tmp_path / "adult.parquet"
    pq.write_table(ADULT, src)
    monkeypatch.setattr(_budget, "available_memory", lambda: 1 << 20)    # 1 MiB free
    calls = {"anatomy": lambda: anatomy(str(src), sensitive="occupation", l=3),
             "art": lambda: art(str(src), qi=QI, sensitive="occupation", r=4),
             "lattice": lambda: lattice_search(str(src), qi=QI, sensitive="occupation",
                                               min_size=5, hierarchies="bundled"),
             "mondrian": lambda: mondrian(str(src), qi=QI, sensitive="occupation",
                                          min_size=5)}
    with pytest.raises(InputError, match=r"needs about .* of memory.*out of core"):
        calls[method]()
    monkeypatch.undo()
    out = tmp_path / "r.parquet"          # the way out named by the message works
    if method in ("lattice", "mondrian"):
        monkeypatch.setattr(_budget, "available_memory", lambda: 1 << 20)
        r = ooc.release_out_of_core(str(src), output=out, method=method, qi=QI,
                                    sensitive="occupation", min_size=5,
                                    **({"hierarchies": "bundled"} if method == "lattice"
                                       else {}))
        assert r.value
