"""Streaming: counts from batches of any type/dictionary/split == from_table; clustered
streaming audits == in-memory audits; bounded state; the streaming CLI."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import Release, ck_safety, classic, skyline
from fastpriv._ingest import IntCodes
from fastpriv._kernels import counting as K
from fastpriv._threads import n_jobs
from fastpriv._validation import kernel_array
from fastpriv.counts import CountAccumulator
from fastpriv.datasets import synthetic
from fastpriv.streaming import GroupwiseState, audit_stream, clustered_audit, value_distribution
from tests.naive_scale import first_appearance_codes


def _same(a, b):
    """Release.equals, except that NaN group keys compare equal (Arrow's Table.equals
    treats NaN != NaN, so a release with a NaN key is not ``equals`` to itself)."""
    if a.equals(b):
        return True

    def norm(rel):
        return [tuple("NaN" if isinstance(x, float) and x != x else x for x in row.values())
                for row in rel.groups.to_pylist()]

    return (a.case == b.case and a.values == b.values and norm(a) == norm(b)
            and all(np.array_equal(x, y) for x, y in ((a.indptr, b.indptr), (a.codes, b.codes),
                                                    (a.counts, b.counts), (a.sizes, b.sizes))))


def _sky(check):
    """A SkylineCheck's dict without the witness group names: on ties between groups the
    skyline module may name another, equally valid, group (see skyline.check, method)."""
    d = check.to_dict()
    for p in d["points"]:
        p.pop("groups")
    return d


def _split(table, cuts):
    """Batches of ``table`` cut at the given sizes (last batch takes the rest)."""
    out, pos = [], 0
    for c in cuts:
        if pos >= table.num_rows:
            break
        out.append(table.slice(pos, c))
        pos += c
    if pos < table.num_rows:
        out.append(table.slice(pos))
    return out


# ----------------------------------------------------------------- label maps
@pytest.mark.slow
@given(st.lists(st.one_of(st.integers(-5, 5), st.integers(-2**62, 2**62)), max_size=60),
       st.integers(1, 20))
def test_int_codes_assign_first_appearance_codes(keys, chunk):
    m = IntCodes()
    got = []
    for i in range(0, len(keys), chunk):
        got.extend(m.encode(np.array(keys[i:i + chunk], dtype=np.int64)).tolist())
    want, uniques = first_appearance_codes(keys)
    assert got == want
    assert m.keys().tolist() == uniques


def test_int_codes_direct_for_the_rows_a_scan_announces():
    # 100k-row batches of keys spread over 6M values: 8 slots per batch row would not cover
    # the range (a hash table); the 1M rows the scan announced do (a direct table, whose
    # order is the key order) — the same first-appearance codes either way
    rng = np.random.default_rng(4)
    batches = [rng.integers(0, 6_000_000, 100_000) for _ in range(3)]
    keys = np.concatenate(batches).tolist()
    want, uniques = first_appearance_codes(keys)
    for hint, hashed in ((0, True), (1_000_000, False)):
        m = IntCodes()
        m.rows_hint = hint
        got = [c for b in batches for c in m.encode(b.astype(np.int64)).tolist()]
        assert m.hash == hashed
        assert got == want and m.keys().tolist() == uniques


@given(st.lists(st.integers(0, 10**6), max_size=50))
def test_hash_map_kernel_matches_dict(keys):
    m = IntCodes(force_hash=True)
    m._rehash(np.empty(0, dtype=np.int64), 2)   # 16 slots: forces resumes and regrowth
    assert m.bits == 4
    out = m.encode(np.array(keys, dtype=np.int64))
    assert out.tolist() == first_appearance_codes(keys)[0]
    x = kernel_array(np.array(keys, dtype=np.int64), np.int64)
    if keys:
        for far in (False, True):   # with and without prefetching: the same codes
            table = np.full(max(keys) + 1, -1, dtype=np.int32)
            codes = np.empty(len(keys), dtype=np.int32)
            stop, n = K.direct_map_from(x, 0, table, codes, 0, 0, far)
            assert (stop, n) == (len(keys), len(set(keys)))
            assert codes.tolist() == out.tolist()


@pytest.mark.parametrize("force_hash", [True, False])
def test_a_reserved_code_never_enters_the_hash_table(force_hash):
    # the null label's code has no key: a rehash (or the switch from a direct table) used
    # to insert it under whatever its undefined key entry held, so a real key equal to
    # that value was counted as the null group
    m = IntCodes(force_hash=force_hash)
    m.encode(np.array([5, 6], dtype=np.int64))
    null = m.reserve_code()
    keys = np.array([0, 7, -2**60, 2**61] + list(range(100, 140)), dtype=np.int64)
    codes = m.encode(keys)
    assert m.hash and null not in m.tvals.tolist() and null not in codes.tolist()
    assert codes.tolist() == list(range(3, 3 + keys.size))
    assert m.encode(np.array([0, 5], dtype=np.int64)).tolist() == [codes[0], 0]


@given(st.lists(st.integers(-2**62, 2**62 - 1), min_size=1, max_size=60))
def test_int_range_kernel_is_min_and_max(keys):
    x = kernel_array(np.array(keys, dtype=np.int64), np.int64)
    assert K.int_range(x) == (min(keys), max(keys))


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(0, 2)),
                min_size=1, max_size=40), st.booleans())
def test_radix_step_kernel_builds_mixed_radix_keys(rows, dictionary):
    # digits of radices (7, 5, 3); the first step (radix 0) overwrites whatever key holds;
    # a remap maps dictionary indices to codes (here the reversed order)
    from fastpriv._kernels.counting_radix import radix_step

    key = np.full(len(rows), 2**40 + 3, dtype=np.int64)
    for j, r in enumerate((0, 5, 3)):
        codes = np.array([row[j] for row in rows], dtype=np.int32)
        if dictionary:
            remap = np.arange(7, dtype=np.int32)[::-1].copy()
            idx, remap = remap[codes], remap   # remap[remap[c]] == c
        else:
            idx, remap = codes, np.empty(0, dtype=np.int32)
        radix_step(key, kernel_array(idx, np.int32), kernel_array(remap, np.int32), r)
    assert key.tolist() == [(a * 5 + b) * 3 + c for a, b, c in rows]


# ----------------------------------------------------------------- accumulator == from_table
KEYS = {
    "int": st.integers(0, 6),
    "sparse_int": st.sampled_from([-2**60, 7, 2**40, 2**61]),
    "str": st.sampled_from(["x", "yy", "a", "zz"]),
    "float": st.sampled_from([0.5, -1.0, 2.25, float("nan")]),
}
rows = st.lists(st.tuples(st.sampled_from(sorted(KEYS)), st.integers(0, 6),
                          st.sampled_from("abcde")), min_size=1, max_size=60)


@pytest.mark.slow
@settings(max_examples=60)
@given(st.sampled_from(sorted(KEYS)), st.data(), st.lists(st.integers(1, 15), max_size=6),
       st.sampled_from(["plain", "dictionary", "per-batch-dictionary"]), st.booleans(),
       st.booleans())
def test_accumulator_equals_from_table(kind, data, cuts, encoding, sparse, two_keys):
    n = data.draw(st.integers(1, 50))
    g = data.draw(st.lists(KEYS[kind], min_size=n, max_size=n))
    s = data.draw(st.lists(st.sampled_from(["flu", "hiv", "cold", "mumps"]), min_size=n,
                           max_size=n))
    h = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    table = pa.table({"g": g, "h": h, "s": s})
    keys = ["g", "h"] if two_keys else ["g"]
    # NaN (a float key) is a missing value: nulls="value" keeps it as the null key
    ref = Release.from_table(table, sensitive="s", group=keys, nulls="value")
    batches = _split(table, cuts)
    if encoding == "dictionary":
        table = table.set_column(2, "s", table.column("s").dictionary_encode())
        batches = _split(table, cuts)
    elif encoding == "per-batch-dictionary":   # every batch its own dictionary
        batches = [b.set_column(2, "s", b.column("s").combine_chunks().dictionary_encode())
                   for b in batches]
    acc = CountAccumulator(keys, "s", nulls="value", dense_cells=0 if sparse else 1 << 25)
    for b in batches:
        acc.add(b)
    assert _same(acc.to_release(), ref)
    assert acc.rows_seen == table.num_rows


@pytest.mark.slow
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)),
                          st.one_of(st.none(), st.sampled_from("ab"))), min_size=1,
                max_size=30), st.sampled_from(["drop", "value"]), st.integers(1, 10))
def test_null_policies_match_from_table(rs, nulls, chunk):
    t = pa.table({"g": pa.array([g for g, _ in rs], pa.int64()),
                  "s": pa.array([s for _, s in rs], pa.string())})
    try:
        ref = Release.from_table(t, sensitive="s", group="g", nulls=nulls)
    except ValueError:
        with pytest.raises(ValueError):
            Release.from_batches(t.to_batches(max_chunksize=chunk), sensitive="s", group="g",
                                 nulls=nulls)
        return
    got = Release.from_batches(t.to_batches(max_chunksize=chunk), sensitive="s", group="g",
                               nulls=nulls)
    assert got.equals(ref)


def test_unused_dictionary_entries_are_not_values_or_groups():
    d = pa.DictionaryArray.from_arrays(pa.array([0, 2, 0], pa.int32()),
                                       pa.array(["a", "b", "c", "d"]))
    for t in (pa.table({"g": [1, 2, 3], "s": d}), pa.table({"g": d, "s": [1, 2, 3]})):
        assert Release.from_batches([t], sensitive="s", group="g").equals(
            Release.from_table(t, sensitive="s", group="g"))


def test_other_key_types_and_sources(tmp_path):
    import datetime as dt

    t = pa.table({"day": [dt.date(2024, 1, d % 3 + 1) for d in range(12)],
                  "ok": [bool(i % 2) for i in range(12)],
                  "s": [f"v{i % 4}" for i in range(12)]})
    ref = Release.from_table(t, sensitive="s", qi=["day", "ok"])
    assert Release.from_batches(t.to_batches(max_chunksize=5), sensitive="s",
                                qi=["day", "ok"]).equals(ref)
    # a Parquet dataset of several files, a CSV file, a reader, an iterator of tables
    big = synthetic(5000, n_groups=300, n_values=7, seed=3)
    ref = Release.from_table(big, sensitive="sensitive", group="group")
    folder = tmp_path / "ds"
    folder.mkdir()
    for i in range(3):
        pq.write_table(big.slice(i * 2000, 2000), folder / f"part{i}.parquet",
                       row_group_size=700)
    pacsv.write_csv(big.set_column(1, "sensitive", big.column("sensitive").cast(pa.string())),
                    tmp_path / "t.csv")
    reader = pa.RecordBatchReader.from_batches(big.schema, big.to_batches(max_chunksize=999))
    for src in (folder, str(tmp_path / "t.csv"), reader, iter([big.slice(0, 10),
                                                               big.slice(10)])):
        assert Release.from_batches(src, sensitive="sensitive", group="group",
                                    batch_size=1000).equals(ref)


def test_type_change_between_batches_is_a_clear_error():
    acc = CountAccumulator(["g"], "s")
    acc.add(pa.table({"g": [1, 2], "s": ["a", "b"]}))
    with pytest.raises(TypeError, match="column 'g' changes type between batches"):
        acc.add(pa.table({"g": ["1"], "s": ["a"]}))
    with pytest.raises(TypeError, match="RecordBatch or Table"):
        acc.add({"g": [1]})
    with pytest.raises(ValueError, match="sensitive column 's' is also a key"):
        CountAccumulator(["s"], "s")


def test_state_is_bounded_by_pairs_not_rows():
    batch = synthetic(20_000, group_size=100, n_values=10, seed=0)
    acc = CountAccumulator(["group"], "sensitive")
    acc.add(batch)
    first = acc.nbytes
    for _ in range(20):   # 20x the rows, the same (group, value) pairs
        acc.add(batch)
    assert acc.nbytes == first
    assert acc.rows_seen == 21 * batch.num_rows
    rel = acc.to_release()
    assert rel.n_rows == 21 * batch.num_rows and rel.n_groups == 200


@pytest.mark.slow
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abc")), min_size=1,
                max_size=60), st.integers(1, 9), st.integers(1, 7), st.booleans())
def test_int32_state_flushes_into_int64_before_overflow(rs, limit, chunk, two_keys):
    # the dense state counts in int32 and moves its counts into an int64 matrix before a
    # cell could overflow; a tiny limit exercises that path on small data
    import fastpriv._ingest as state_mod
    import fastpriv.counts as counts_mod

    t = pa.table({"g": [g for g, _ in rs], "h": [g % 2 for g, _ in rs],
                  "s": [s for _, s in rs]})
    keys = ["g", "h"] if two_keys else ["g"]
    ref = Release.from_table(t, sensitive="s", group=keys)
    saved = state_mod._INT32_MAX
    state_mod._INT32_MAX = limit
    try:
        acc = CountAccumulator(keys, "s")
        for b in t.to_batches(max_chunksize=chunk):
            acc.add(b)
        other = CountAccumulator(keys, "s").add(t)
        merged = counts_mod.merge([acc, other])
    finally:
        state_mod._INT32_MAX = saved
    assert acc.to_release().equals(ref)
    assert merged.to_release().n_rows == 2 * t.num_rows
    assert (acc._state.mat64 is not None) == (t.num_rows > limit)


@pytest.mark.parametrize("key", [[7, 7, 8], ["x", "x", "y"]])   # fused and general path
def test_byte_front_counters_spill_and_fold(key):
    # the dense state counts through uint8 cells that spill 255 at a time into int32; a
    # cell hit 1000 times, read (folded) between additions, must still count exactly
    rows = 999
    t = pa.table({"g": [key[i % 3] for i in range(rows)], "s": ["a", "b", "a"] * (rows // 3)})
    acc = CountAccumulator(["g"], "s")
    for b in t.to_batches(max_chunksize=100):
        acc.add(b)
    first = acc.to_release()
    acc.add(t)                                   # more counts after a fold
    second = acc.to_release()
    ref = Release.from_table(t, sensitive="s", group="g")
    assert first.equals(ref)
    assert second.n_rows == 2 * rows and second.counts.sum() == 2 * rows
    assert sorted(second.counts.tolist()) == sorted((2 * ref.counts).tolist())


@pytest.mark.parametrize("key", [[7, 8], ["x", "y"]])   # fused and general path
def test_spilled_counts_survive_the_matrix_growing(key):
    # a cell spills (400 rows > 255) while the state is small; then thousands of new groups
    # regrid the matrix: the int32 part must move with it. A state that never spilled reads
    # the byte matrix alone (its int32 part stays empty for the readers).
    hot = pa.table({"g": [key[0]] * 600 + [key[1]] * 3, "s": ["a", "b", "a"] * 201})
    acc = CountAccumulator(["g"], "s")
    acc.add(hot)
    assert acc._state.spilled
    many = pa.table({"g": [i if isinstance(key[0], int) else f"n{i}" for i in range(20_000)],
                     "s": ["b"] * 20_000})
    acc.add(many)
    ref = Release.from_table(pa.concat_tables([hot, many]), sensitive="s", group="g")
    assert acc.to_release().equals(ref)
    quiet = CountAccumulator(["g"], "s")
    quiet.add(many)
    assert not quiet._state.spilled and quiet._state.dense_parts()[1].size == 0
    assert quiet.to_release().equals(Release.from_table(many, sensitive="s", group="g"))


def test_progress_callback_and_counters(tmp_path):
    t = synthetic(3000, group_size=30, seed=1)
    calls = []
    Release.from_batches(t.to_batches(max_chunksize=1000), sensitive="sensitive",
                         group="group", progress=lambda r, b: calls.append((r, b)))
    assert [c[0] for c in calls] == [1000, 2000, 3000]
    assert all(b > 0 for _, b in calls)


# ----------------------------------------------------------------- clustered streaming
POINTS = [(0, 0, 0, 0.9), (1, 1, 0, 0.6), (1, 2, 1, 0.8), (2, 0, 2, 0.5)]


def _same_classic(got, ref, *, indices=True):
    assert set(got.models) == set(ref.models)
    for key, want in ref.models.items():
        have = got.models[key]
        assert have["value"] == want["value"], key
        assert have["worst_label"] == want["worst_label"], key
        if indices:
            assert have["worst_group"] == want["worst_group"], key


@settings(max_examples=40)
@given(st.integers(1, 60), st.integers(2, 6), st.sampled_from(["uniform", "zipf"]),
       st.integers(0, 10**6), st.lists(st.integers(1, 300), max_size=5))
def test_clustered_audit_equals_in_memory(n_groups, n_values, dist, seed, cuts):
    t = synthetic(n_groups * 7, n_groups=n_groups, n_values=n_values, distribution=dist,
                  seed=seed)
    t = t.sort_by([("group", "ascending")])
    rel = Release.from_table(t, sensitive="sensitive", group="group")
    skies = {"*": POINTS}
    res = clustered_audit(_split(t, cuts) if cuts else t, sensitive="sensitive",
                          group="group", skylines=skies, q="pass" if not cuts else None)
    if cuts:   # a one-shot iterator: models needing Q are skipped (and say why)
        assert set(res.skipped) == {"t_closeness", "t_closeness_ordered",
                                    "beta_likeness", "delta_disclosure"}
        ref = classic.audit(rel)
        for key in res.skipped:
            ref.models.pop(key)
        _same_classic(res.classic, ref)
    else:
        assert res.passes == 2
        _same_classic(res.classic, classic.audit(rel))
    assert _sky(res.skyline) == _sky(skyline.check(rel, skylines=skies))
    assert (res.n_groups, res.n_rows) == (rel.n_groups, rel.n_rows)


def test_clustered_audit_two_passes_from_parquet_and_given_q(tmp_path):
    t = synthetic(4000, group_size=40, n_values=6, distribution="zipf", seed=5)
    path = tmp_path / "sorted.parquet"
    pq.write_table(t, path, row_group_size=333)
    rel = Release.from_table(t, sensitive="sensitive", group="group")
    res = clustered_audit(path, sensitive="sensitive", group="group", batch_size=500, l=3)
    assert res.passes == 2 and not res.skipped
    _same_classic(res.classic, classic.audit(rel, l=3))
    # an explicit Q equal to the table's distribution gives the same values in one pass
    values, totals, n = value_distribution(path, "sensitive")
    assert values == rel.values and totals.tolist() == rel.value_totals.tolist()
    q = {v: c / n for v, c in zip(values, totals.tolist(), strict=True)}
    res_q = clustered_audit(iter(t.to_batches(max_chunksize=450)), sensitive="sensitive",
                            group="group", q=q, l=3)
    assert res_q.passes == 1
    _same_classic(res_q.classic, classic.audit(rel, l=3))


def test_clustered_audit_several_qi_columns():
    t = synthetic(3000, qi_cardinalities=[4, 3, 5], n_values=5, seed=2)
    t = t.sort_by([("q0", "ascending"), ("q1", "ascending"), ("q2", "ascending")])
    rel = Release.from_table(t, sensitive="sensitive", qi=["q0", "q1", "q2"])
    res = clustered_audit(t, sensitive="sensitive", qi=["q0", "q1", "q2"],
                          skylines={"*": POINTS}, batch_size=128)
    _same_classic(res.classic, classic.audit(rel))
    assert _sky(res.skyline) == _sky(skyline.check(rel, skylines={"*": POINTS}))


def test_unsorted_input_is_rejected_with_the_row():
    t = pa.table({"g": [1, 1, 3, 2, 2], "s": ["a", "b", "a", "b", "a"]})
    with pytest.raises(ValueError, match=r"not sorted by \['g'\]: group 2 follows 3 \(row 3"):
        clustered_audit(t, sensitive="s", group="g")
    # across batches too
    with pytest.raises(ValueError, match="group 2 follows 3"):
        clustered_audit(iter(t.to_batches(max_chunksize=3)), sensitive="s", group="g")
    # check_sorted=False audits each run of rows as a group
    res = clustered_audit(t, sensitive="s", group="g", check_sorted=False)
    assert res.n_groups == 3


def test_groupwise_state_merge_any_split_of_groups():
    t = synthetic(3000, group_size=25, n_values=5, distribution="zipf", seed=9)
    rel = Release.from_table(t, sensitive="sensitive", group="group")
    values, totals, n = value_distribution(t, "sensitive")
    params = {"values": values, "q": (totals / n).tolist(), "skylines": {"*": POINTS}}
    parts = [t.filter(pa.compute.equal(pa.compute.bit_wise_and(t.column("group"), 3), i))
             for i in range(4)]
    states = [GroupwiseState(**params).update(Release.from_table(p, sensitive="sensitive",
                                                                 group="group"))
              for p in parts]
    for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
        acc = states[order[0]]
        for i in order[1:]:
            acc = acc.merge(states[i])
        _same_classic(acc.classic_audit(), classic.audit(rel), indices=False)
        assert _sky(acc.skyline_result()) == _sky(skyline.check(rel, skylines={"*": POINTS}))
    with pytest.raises(ValueError, match="different parameters"):
        states[0].merge(GroupwiseState(l=3))


# ----------------------------------------------------------------- audit_stream
def test_audit_stream_equals_in_memory_models():
    t = synthetic(6000, group_size=30, n_values=8, distribution="zipf", seed=4)
    rel = Release.from_table(t, sensitive="sensitive", group="group")
    res = audit_stream(t.to_batches(max_chunksize=1000), sensitive="sensitive", group="group",
                       k=4, skylines={"*": POINTS}, n_jobs=1)
    assert res.release.equals(rel)
    assert res.classic.to_dict() == classic.audit(rel).to_dict()
    # witnesses of a table-built release also name input rows, which a stream does not keep
    norows = Release.from_counts(rel.to_counts(), group="group", sensitive="value")
    assert res.ck_safety.to_dict() == ck_safety.audit(norows, k=4).to_dict()
    assert _sky(res.skyline) == _sky(skyline.check(rel, skylines={"*": POINTS}))
    json.dumps(res.to_dict(), default=str)


# ----------------------------------------------------------------- CLI
def test_cli_streams_a_parquet_directory_with_a_progress_bar(tmp_path, capsys):
    from fastpriv.cli import main

    t = synthetic(5000, group_size=50, n_values=6, seed=7)
    folder = tmp_path / "release"
    folder.mkdir()
    for i in range(2):
        pq.write_table(t.slice(i * 2500, 2500), folder / f"p{i}.parquet")
    out = tmp_path / "a.json"
    rc = main(["audit", str(folder), "--sensitive", "sensitive", "--group", "group",
               "--k", "3", "--progress", "--json", str(out)])
    assert rc == json.loads(out.read_text())["verdict"]["exit_code"]
    cap = capsys.readouterr()
    assert "5000/5000" in cap.err and "rows/s" in cap.err and "100%" in cap.err
    payload = json.loads(out.read_text())
    rel = Release.from_table(t, sensitive="sensitive", group="group")
    assert payload["release"]["n_groups"] == rel.n_groups
    assert payload["classic"]["models"]["k_anonymity"]["value"] == 50
    # the same file read whole gives the same numbers
    single = tmp_path / "one.parquet"
    pq.write_table(t, single)
    out2 = tmp_path / "b.json"
    with n_jobs(None):   # --n-jobs sets the process-wide thread count: restore it after
        assert main(["audit", str(single), "--sensitive", "sensitive", "--group", "group",
                     "--k", "3", "--stream", "no", "--n-jobs", "1", "--json", str(out2)]) == rc
    p2 = json.loads(out2.read_text())
    assert p2["classic"] == payload["classic"]
    assert p2["ck_safety"]["curve"] == payload["ck_safety"]["curve"]


@pytest.mark.slow
def test_warmup_command_reports_kernels(tmp_path, capsys, monkeypatch):
    from fastpriv import _warmup as warmup
    from fastpriv.cli import main

    # the real workloads take minutes on a cold cache: keep one cheap doctest module and
    # the streaming and counting paths, and check the report and its JSON
    monkeypatch.setattr(warmup, "DOCTEST_MODULES", ("fastpriv.counts",))
    monkeypatch.setattr(warmup, "WORKLOADS", {"counting": warmup.WORKLOADS["counting"]})
    out = tmp_path / "warm.json"
    assert main(["warmup", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "counting paths" in text and "examples of fastpriv.counts" in text
    assert "kernels:" in text and "loaded from the cache" in text
    payload = json.loads(out.read_text())
    assert payload["n_kernels"] == len(payload["kernels"]) > 50
    names = {k["kernel"]: k for k in payload["kernels"]}
    assert names["fastpriv._kernels.counting.count_direct"]["signatures"] == 1
    assert all(w["status"] == "ok" for w in payload["workloads"])
    # a failing workload is reported, not fatal; the disabled cache is said
    monkeypatch.setattr(warmup, "WORKLOADS", {"counting": lambda: 1 / 0})
    monkeypatch.setattr("fastpriv._jit.CACHE_ENABLED", False)
    assert main(["warmup"]) == 0
    text = capsys.readouterr().out
    assert "failed: ZeroDivisionError" in text and "FASTPRIV_NO_CACHE is set" in text
