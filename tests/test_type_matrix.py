"""Every Arrow value type through every entry point: exact, or refused by name (issue 47).

For each type — integers of every width at their extremes, floats with ±inf and -0.0,
decimals (128 and 256 bits), dates, times, timestamps with and without a time zone and
durations at every unit, strings of every layout, dictionary-encoded strings, booleans,
binaries, lists and structs — used as the QI column and as the sensitive column, each entry
point (``Release.from_table`` + ``classic.audit``, ``risk.audit``, Mondrian, the lattice with
a hierarchy from a builder, Anatomy, the builders themselves) either

* is **exact**: every group, class and count equals a pure-Python recount over exact keys
  (integers in full, temporal values as integer nanoseconds or days, decimals as
  ``Decimal``), and every published label holds its row's original value; or
* raises a one-line :class:`~fastpriv.errors.InputError` naming the column and its type.

Which cells refuse is pinned (:func:`refuses`), so a type that silently starts to work
differently, or to fail, is caught both ways.
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import classic, risk
from fastpriv.anonymize import anatomy, lattice_search, mondrian
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.errors import InputError
from fastpriv.hierarchies import Hierarchy

N_COPIES = 4          # every distinct value occurs this often: groups of 4 (or 8 for -0.0/0.0)
NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
DAY_MS = 86_400_000


# ---------------------------------------------------------------- the types
def _ints(t: pa.DataType) -> pa.Array:
    info = np.iinfo(t.to_pandas_dtype())
    lo, hi = int(info.min), int(info.max)
    vals = [lo, lo + 1, -1, 0, hi - 1, hi] if lo < 0 else [0, 1, 2, hi - 2, hi - 1, hi]
    return pa.array(vals, t)


def _cases() -> dict[str, tuple[pa.Array, str]]:
    """name -> (distinct values, kind); kind picks the hierarchy builder and the oracle."""
    c: dict[str, tuple[pa.Array, str]] = {}
    for bits in (8, 16, 32, 64):
        for make in (pa.int8, pa.int16, pa.int32, pa.int64, pa.uint8, pa.uint16, pa.uint32,
                     pa.uint64):
            t = make()
            if t.bit_width == bits:
                c[str(t)] = (_ints(t), "number")
    c["int64_near_1.7e18"] = (pa.array([1_700_000_000_000_000_000 + d for d in
                                        (0, 1, 9, 19, 99, 1001)], pa.int64()), "number")
    specials = [0.0, -0.0, 1.5, math.inf, -math.inf, 2.0**60 + 256]
    c["float64_specials"] = (pa.array(specials, pa.float64()), "special")
    c["float32_specials"] = (pa.array(specials, pa.float32()), "special")
    c["float64_finite"] = (pa.array([0.1, 0.3, 0.7, -1.5, 1e-7, 2.0**53 + 2]), "number")
    c["decimal128"] = (pa.array([Decimal("-99999999999999999999999999999999999.99"),
                                 Decimal("-0.01"), Decimal("0.00"), Decimal("1.10"),
                                 Decimal("2.25"),
                                 Decimal("99999999999999999999999999999999999.99")],
                                pa.decimal128(38, 2)), "number")
    c["decimal256"] = (pa.array([Decimal(-10**70), Decimal("-0.5"), Decimal(0),
                                 Decimal("0.5"), Decimal(10**70), Decimal(10**70 + 1)],
                                pa.decimal256(76, 1)), "number")
    base = [-86_400, 0, 1, 59, 1_700_000_000, 1_700_000_001]
    for unit in NS:
        # whole microseconds: exact (nanoseconds below a microsecond: the _sub_us cases)
        vals = [x * 1000 for x in base] if unit == "ns" else base
        for tz in (None, "UTC", "Asia/Kolkata"):
            c[f"timestamp[{unit},{tz}]"] = (pa.array(vals, pa.int64())
                                            .cast(pa.timestamp(unit, tz)), "temporal")
        c[f"duration[{unit}]"] = (pa.array(vals, pa.int64()).cast(pa.duration(unit)),
                                  "temporal")
    # 01:30 twice in New York on 2023-11-05 (summer, then winter time): two values that
    # Python's datetime compares equal (same zone: local times compared) - refused
    c["timestamp[s,America/New_York]"] = (pa.array(
        [1_699_158_600, 1_699_162_200, 1_699_169_400, 1_699_173_000, 0, 1], pa.int64())
        .cast(pa.timestamp("s", "America/New_York")), "temporal")
    c["timestamp[s,America/New_York]_fold"] = (pa.array(
        [1_699_158_600, 1_699_162_200, 1_699_165_800, 1_699_169_400, 0, 1], pa.int64())
        .cast(pa.timestamp("s", "America/New_York")), "inexact")
    for tz in (None, "UTC"):
        c[f"timestamp[ns,{tz}]_sub_us"] = (pa.array(base, pa.int64())
                                           .cast(pa.timestamp("ns", tz)), "inexact")
    c["duration[ns]_sub_us"] = (pa.array(base, pa.int64()).cast(pa.duration("ns")), "inexact")
    c["date32"] = (pa.array([-719_162, -1, 0, 1, 18_000, 2_932_896], pa.int32())
                   .cast(pa.date32()), "temporal")
    c["date64"] = (pa.array([-DAY_MS, 0, DAY_MS, 18_000 * DAY_MS, 20_000 * DAY_MS,
                             20_001 * DAY_MS], pa.int64()).cast(pa.date64()), "temporal")
    c["date64_not_whole_days"] = (pa.array([0, 5, DAY_MS, 2 * DAY_MS, 3 * DAY_MS,
                                            4 * DAY_MS], pa.int64()).cast(pa.date64()),
                                  "inexact")
    secs = [0, 1, 59, 3600, 86_399, 43_200]
    c["time32[s]"] = (pa.array(secs, pa.int32()).cast(pa.time32("s")), "temporal")
    c["time32[ms]"] = (pa.array([s * 1000 + 7 for s in secs], pa.int32())
                       .cast(pa.time32("ms")), "temporal")
    c["time64[us]"] = (pa.array([s * 10**6 + 1 for s in secs], pa.int64())
                       .cast(pa.time64("us")), "temporal")
    c["time64[ns]"] = (pa.array([s * 10**9 + 1000 for s in secs], pa.int64())
                       .cast(pa.time64("ns")), "temporal")
    c["time64[ns]_sub_us"] = (pa.array([s * 10**9 + 1 for s in secs], pa.int64())
                              .cast(pa.time64("ns")), "inexact")
    text = pa.array(["M", " M", "m", "F", "", "é"], pa.string())
    c["string"] = (text, "string")
    c["large_string"] = (text.cast(pa.large_string()), "string")
    if hasattr(pa, "string_view"):
        c["string_view"] = (text.cast(pa.string_view()), "string")
    c["dictionary<string>"] = (text.dictionary_encode(), "string")
    c["bool"] = (pa.array([True, False]), "bool")
    c["binary"] = (pa.array([b"a", b"b", b"\x00", b"a ", b"", b"\xff"]), "string")
    c["list<int64>"] = (pa.array([[1], [2], [1, 2], [3], [2, 3], [4]]), "list")
    c["struct"] = (pa.array([{"a": i} for i in range(6)]), "nested")
    return c


CASES = _cases()


def column(name: str) -> pa.ChunkedArray:
    """The case's values, each ``N_COPIES`` times, in a fixed shuffled order, two chunks."""
    vals, _ = CASES[name]
    idx = np.random.default_rng(47).permutation(np.tile(np.arange(len(vals)), N_COPIES))
    rows = [vals[int(i):int(i) + 1] for i in idx]
    if pa.types.is_dictionary(vals.type):
        rows = [r.cast(vals.type.value_type) for r in rows]
        whole = pa.concat_arrays(rows).dictionary_encode()
        return pa.chunked_array([whole.slice(0, 10), whole.slice(10)])
    whole = pa.concat_arrays(rows)
    return pa.chunked_array([whole.slice(0, 10), whole.slice(10)])


def qi_table(name: str) -> pa.Table:
    c = column(name)
    s = pa.array(["xyz"[i % 3] for i in range(len(c))])
    return pa.table({"c": c, "s": s})


def sens_table(name: str) -> pa.Table:
    c = column(name)
    return pa.table({"q": pa.array(["ab"[i % 2] for i in range(len(c))]), "c": c})


# ---------------------------------------------------------------- the oracle
def keys(arr: Any) -> list:
    """Exact hashable key of every entry, by a route independent of fastpriv.

    Times, timestamps and durations are integer nanoseconds, dates integer days (a date64
    that is not a whole day keeps its milliseconds), floats Python floats (-0.0 == 0.0),
    decimals ``Decimal``, nested values their ``repr``.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t):
        raw = arr.view(pa.int32() if t.bit_width == 32 else pa.int64()).to_pylist()
        return [None if x is None else x * NS[t.unit] for x in raw]
    if pa.types.is_date32(t):
        return arr.view(pa.int32()).to_pylist()
    if pa.types.is_date64(t):
        return [x // DAY_MS if x % DAY_MS == 0 else ("ms", x)
                for x in arr.view(pa.int64()).to_pylist()]
    if pa.types.is_nested(t):
        return [repr(v) for v in arr.to_pylist()]
    return arr.to_pylist()


def refuses(case: str, entry: str) -> bool:
    """Whether ``entry`` must refuse the case's column (else it must be exact)."""
    kind = CASES[case][1]
    if entry == "anatomy_qi":          # Anatomy publishes its QI values as they are, in
        return kind in ("list", "nested")   # an order of their values: scalars only
    if kind == "list":
        return entry != "release_s"    # a list sensitive column is the MVPI layout
    if kind in ("nested", "inexact"):
        return True
    if entry == "intervals":
        return kind not in ("number",)
    return False


def check_refusal(exc: InputError, case: str) -> None:
    msg = str(exc)
    typ = CASES[case][0].type
    names = {str(typ)} | ({str(typ.value_type)} if pa.types.is_dictionary(typ) else set())
    assert "\n" not in msg, msg
    assert "'c'" in msg, msg
    assert any(n in msg for n in names), msg


def outcome(case: str, entry: str, run, check) -> None:
    """Run ``run()``; refusals must be pinned and named, results exact (``check``)."""
    if refuses(case, entry):
        with pytest.raises(InputError) as err:
            run()
        check_refusal(err.value, case)
        return
    check(run())


def group_counts(rel: fp.Release) -> list[tuple[int, Counter]]:
    """(size, Counter of value keys) of every group of a release."""
    vals = keys(rel.value_labels)
    out = []
    for g in range(rel.n_groups):
        a, b = int(rel.indptr[g]), int(rel.indptr[g + 1])
        cnt = Counter()
        for code, n in zip(rel.codes[a:b].tolist(), rel.counts[a:b].tolist(), strict=True):
            cnt[vals[code]] += n
        out.append((int(rel.sizes[g]), cnt))
    return out


def recount(group_keys: list, value_keys: list) -> dict:
    """Pure Python: group key -> (size, Counter of values)."""
    out: dict = {}
    for g, v in zip(group_keys, value_keys, strict=True):
        size, cnt = out.get(g, (0, Counter()))
        cnt[v] += 1
        out[g] = (size + 1, cnt)
    return out


def text_is_exact(domain: pa.Array) -> list[str]:
    """fastpriv's text of each domain value, checked to name one value each."""
    from fastpriv._labels import label_text

    texts = [label_text(v) for v in domain.to_pylist()]
    assert len(set(texts)) == len(texts) == len(set(keys(domain))), texts
    return texts


# ---------------------------------------------------------------- the matrix
def source(t: pa.Table, how: str) -> Any:
    """The table itself (read whole), or a dataset (streamed by ``fastpriv._ingest``)."""
    import pyarrow.dataset as ds

    return t if how == "table" else ds.dataset(t)


SOURCES = ["table", "streamed"]


@pytest.mark.parametrize("how", SOURCES)
@pytest.mark.parametrize("case", list(CASES))
def test_release_and_classic_audit_qi(case, how):
    t = qi_table(case)

    def check(rel):
        want = recount(keys(t.column("c")), t.column("s").to_pylist())
        got = dict(zip(keys(rel.groups.column("c")), group_counts(rel), strict=True))
        assert got == want
        audit = classic.audit(rel)
        assert audit.models["k_anonymity"]["value"] == min(s for s, _ in want.values())

    outcome(case, "release_qi",
            lambda: fp.Release.from_table(source(t, how), qi=["c"], sensitive="s"), check)


@pytest.mark.parametrize("how", SOURCES)
@pytest.mark.parametrize("case", list(CASES))
def test_release_and_classic_audit_sensitive(case, how):
    t = sens_table(case)

    def check(rel):
        q = t.column("q").to_pylist()
        if CASES[case][1] == "list":      # MVPI: every element of a row's list is a value
            want: dict = {}
            for g, vals in zip(q, t.column("c").to_pylist(), strict=True):
                size, cnt = want.get(g, (0, Counter()))
                cnt.update(vals)
                want[g] = (size + 1, cnt)
        else:
            want = recount(q, keys(t.column("c")))
        got = dict(zip(rel.groups.column("q").to_pylist(), group_counts(rel), strict=True))
        assert got == want
        if CASES[case][1] != "list":
            audit = classic.audit(rel)
            assert audit.models["l_diversity"]["value"] == min(len(c) for _, c in want.values())

    outcome(case, "release_s",
            lambda: fp.Release.from_table(source(t, how), qi=["q"], sensitive="c"), check)


@pytest.mark.parametrize("how", SOURCES)
@pytest.mark.parametrize("case", list(CASES))
def test_risk_audit(case, how):
    t = qi_table(case)

    def check(res):
        sizes = Counter(keys(t.column("c"))).values()
        d = res.to_dict()
        assert d["sample_uniques"] == sum(1 for s in sizes if s == 1)
        assert d["prosecutor_max"] == pytest.approx(1 / min(sizes))
        hist = d["class_size_histogram"]
        assert dict(zip(hist["size"], hist["count"], strict=True)) == Counter(sizes)

    outcome(case, "risk", lambda: risk.audit(source(t, how), qi=["c"]), check)


def _members(t: pa.Table, res, attr: str = "c") -> tuple[list[int], list[str], list]:
    """Check every row's original value is among its published label's members.

    Returns the domain code of every row, fastpriv's text of each domain value (checked to
    name one value each) and the GeneralizedAttribute.
    """
    ga = next(a for a in res.attributes if a.name == attr)
    texts = text_is_exact(ga.domain)
    dom_keys = keys(ga.domain)
    where = {k: d for d, k in enumerate(dom_keys)}
    row_dom = [where[k] for k in keys(t.column(attr))]
    published = res.generalized.column(attr).to_pylist()
    for i, code in enumerate(ga.codes.tolist()):
        a, b = int(ga.member_indptr[code]), int(ga.member_indptr[code + 1])
        assert row_dom[i] in ga.members[a:b].tolist()
        assert published[i] == ga.labels[code]
    return row_dom, texts, ga


def _check_mondrian_labels(t: pa.Table, res, attr: str = "c") -> None:
    """A range ``[lo, hi]`` is written with its extreme members, a set with every member."""
    _, texts, ga = _members(t, res, attr)
    for code, label in enumerate(ga.labels):
        members = sorted(ga.members[ga.member_indptr[code]:ga.member_indptr[code + 1]].tolist())
        if len(members) == 1:
            assert label == texts[members[0]]
        elif label.startswith("["):
            assert label == f"[{texts[members[0]]}, {texts[members[-1]]}]"
            assert members == list(range(members[0], members[-1] + 1))
        else:
            assert label == "{" + ", ".join(texts[m] for m in members) + "}"


def _check_groups(t: pa.Table, res, sens: str) -> None:
    """Group sizes sum to the rows; each group's sensitive counts match a recount."""
    gid = res.group_ids.tolist()
    want = recount(gid, keys(t.column(sens)))
    got = dict(enumerate(group_counts(res.release)))
    assert got == want
    assert sum(s for s, _ in got.values()) == t.num_rows


@pytest.mark.parametrize("case", list(CASES))
def test_mondrian_qi(case):
    t = qi_table(case)

    def check(res):
        _check_mondrian_labels(t, res)
        _check_groups(t, res, "s")
        assert min(res.release.sizes) >= 3

    outcome(case, "mondrian_qi", lambda: mondrian(t, qi=["c"], sensitive="s", min_size=3),
            check)


@pytest.mark.parametrize("case", list(CASES))
def test_mondrian_sensitive(case):
    t = sens_table(case)
    outcome(case, "mondrian_s", lambda: mondrian(t, qi=["q"], sensitive="c", min_size=3),
            lambda res: _check_groups(t, res, "c"))


@pytest.mark.parametrize("case", list(CASES))
def test_anatomy_sensitive(case):
    t = sens_table(case)

    def check(res):
        _check_groups(t, res, "c")
        tabs = res.release_tables(t)
        sens = tabs["sensitive"]
        got = Counter()
        for g, v, n in zip(sens.column("group_id").to_pylist(), keys(sens.column("c")),
                           sens.column("count").to_pylist(), strict=True):
            got[(g, v)] += n
        new_id = dict(zip(res.group_ids.tolist(), res.published_group_ids(t).tolist(),
                          strict=True))
        want = Counter((new_id[g], v) for g, v in zip(res.group_ids.tolist(),
                                                       keys(t.column("c")), strict=True))
        assert got == want

    outcome(case, "anatomy_s", lambda: anatomy(t, sensitive="c", l=2, qi=["q"], seed=0), check)


@pytest.mark.parametrize("case", list(CASES))
def test_anatomy_qi(case):
    t = qi_table(case)

    def run():
        res = anatomy(t, sensitive="s", l=2, qi=["c"], seed=0)
        return res, res.release_tables(t)["qi"]

    def check(made):
        res, qi = made
        typ = t.column("c").type          # published as it is (a string view as a string)
        assert qi.column("c").type == (pa.string() if typ == getattr(pa, "string_view",
                                                                     pa.string)() else typ)
        new_id = dict(zip(res.group_ids.tolist(), res.published_group_ids(t).tolist(),
                          strict=True))
        want = Counter((new_id[g], k) for g, k in zip(res.group_ids.tolist(),
                                                      keys(t.column("c")), strict=True))
        assert Counter(zip(qi.column("group_id").to_pylist(), keys(qi.column("c")),
                           strict=True)) == want
        assert sum(res.release.sizes) == t.num_rows

    outcome(case, "anatomy_qi", run, check)


def hierarchy_for(case: str, col: Any) -> Hierarchy:
    """A builder's hierarchy of the case's column, the builder its type has."""
    kind = CASES[case][1]
    if kind == "number":
        return Hierarchy.intervals(col, [2, 4, 8, "*"], name="c")
    if kind == "string":
        return Hierarchy.masking(col, name="c")
    if kind == "bool":
        return Hierarchy.suppression(col, name="c")
    return Hierarchy.ordering(col, groups=[2, 2], name="c")


def _check_interval(label: str, text: str) -> None:
    """``[lo, hi)`` holds the value written ``text``, in exact decimal numbers."""
    if label.startswith("[") and label.endswith(")"):
        lo, hi = (Fraction(x) for x in label[1:-1].split(", "))
        assert lo <= Fraction(text) < hi, (label, text)


def _check_hierarchy_labels(t: pa.Table, res, h: Hierarchy, level: int) -> None:
    """Each row is published with its value's label at ``level`` in ``h``, and lies in it."""
    row_dom, texts, _ = _members(t, res)
    rows = {r[0]: r for r in h.rows}
    for d, lab in zip(row_dom, res.generalized.column("c").to_pylist(), strict=True):
        assert rows[texts[d]][level] == lab
        _check_interval(lab, texts[d])


@pytest.mark.parametrize("case", list(CASES))
def test_lattice_every_level(case):
    t = qi_table(case)

    def run():
        h = hierarchy_for(case, t.column("c"))
        return h, GeneralizationLattice(t, ["c"], "s", {"c": h})

    def check(made):
        h, lat = made
        for level in range(h.height):
            res = lat.anonymize((level,))
            _check_hierarchy_labels(t, res, h, level)
            _check_groups(t, res, "s")
        best = lattice_search(t, qi=["c"], sensitive="s", hierarchies={"c": h}, min_size=8)
        assert min(best.release.sizes) >= 8
        _check_groups(t, best.anonymized, "s")
        _check_hierarchy_labels(t, best.anonymized, h, best.best[0])

    outcome(case, "lattice", run, check)


@pytest.mark.parametrize("case", list(CASES))
def test_lattice_sensitive(case):
    t = sens_table(case)

    def check(res):
        assert min(res.release.sizes) >= 2
        _check_groups(t, res.anonymized, "c")

    outcome(case, "lattice_s", lambda: lattice_search(t, qi=["q"], sensitive="c",
                                                      hierarchies={"q": "suppress"},
                                                      min_size=2), check)


@pytest.mark.parametrize("builder", ["ordering", "masking", "intervals"])
@pytest.mark.parametrize("case", list(CASES))
def test_builders(case, builder):
    col = column(case)

    def run():
        if builder == "ordering":
            return Hierarchy.ordering(col, groups=[3], name="c")
        if builder == "masking":
            return Hierarchy.masking(col, name="c")
        return Hierarchy.intervals(col, [3, 6, "*"], name="c")

    def check(h):
        assert len(h.values) == len(set(keys(col)))         # one row per distinct value
        bound = h.bind(col, name="c")
        assert bound.domain_size == len(h.values)
        for row in h.rows:
            for lab in row[1:]:
                _check_interval(lab, row[0])

    entry = builder if builder == "intervals" else "builder"
    outcome(case, entry, run, check)


# ---------------------------------------------------------------- beyond the matrix
def test_nan_is_a_missing_value_named_with_its_column():
    t = pa.table({"c": [1.0, math.nan, 2.0, 1.0, 2.0, math.nan], "s": list("xyxyxy")})
    with pytest.raises(InputError, match=r"'c' has 2 nulls \(including 2 NaN"):
        fp.Release.from_table(t, qi=["c"], sensitive="s")
    rel = fp.Release.from_table(t, qi=["c"], sensitive="s", nulls="drop")
    assert sorted(rel.sizes.tolist()) == [2, 2]


def test_minus_zero_and_zero_are_one_value_everywhere():
    t = pa.table({"c": [0.0, -0.0, 0.0, -0.0, 1.0, 1.0], "s": list("xyzxyz")})
    rel = fp.Release.from_table(t, qi=["c"], sensitive="s")
    assert rel.n_groups == 2 and sorted(rel.sizes.tolist()) == [2, 4]
    res = mondrian(t, qi=["c"], sensitive="s", min_size=2)
    assert sorted(set(res.generalized.column("c").to_pylist())) == ["0", "1"]
    h = Hierarchy.suppression(t.column("c"), name="c")
    assert h.values == ["0", "1"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=20),
       st.lists(st.integers(1, 2**40), min_size=1, max_size=3),
       st.integers(-2**62, 2**62))
def test_intervals_hold_every_int64_exactly(values, steps, anchor):
    widths = []
    for s in steps:                      # nested widths: each a multiple of the one before
        widths.append(s if not widths else widths[-1] * (s % 7 + 2))
    h = Hierarchy.intervals(pa.array(values, pa.int64()), widths, anchor=anchor, name="c")
    for row in h.rows:
        v = int(row[0])
        for lab in row[1:-1]:
            lo, hi = (int(x) for x in lab[1:-1].split(", "))
            assert lo <= v < hi


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=20),
       st.sampled_from([0.1, 0.25, 0.3, 1.5, 7.0]))
def test_intervals_hold_every_float_as_written(values, width):
    h = Hierarchy.intervals(values, [width, width * 2], name="c")
    for row in h.rows:
        v = Fraction(row[0])             # the value as written in the hierarchy
        assert float(row[0]) in [float(x) + 0.0 for x in values]
        for lab in row[1:-1]:
            lo, hi = (Fraction(x) for x in lab[1:-1].split(", "))
            assert lo <= v < hi
