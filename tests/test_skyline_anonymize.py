"""SkylineAnonymize (Chen et al., §5.2): safety, SVPI minimality, reference equality."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import skyline as sk
from fastpriv.anonymize.skyline import SplitContext, parse_skyline_spec, skyline_anonymize
from fastpriv.release import Release
from tests.naive_anonymizers import median_cut, skyline_anonymize_reference

# thresholds far from the small rationals minNR takes on tiny tables: float and exact
# decisions agree (no exact ties, no near-ties at 1e-12)
GENERIC_C = [0.6180339887498949, 0.7071067811865476, 0.8660254037844386,
             0.9238795325112867, 0.7788007830714049, 0.9510565162951535]


@st.composite
def svpi_tables(draw, max_rows=40):
    n = draw(st.integers(2, max_rows))
    d = draw(st.integers(1, 3))
    V = draw(st.integers(2, 4))
    cols = {f"q{j}": [draw(st.integers(0, 5)) for _ in range(n)] for j in range(d)}
    cols["s"] = [f"v{draw(st.integers(0, V - 1))}" for _ in range(n)]
    n_pts = draw(st.integers(1, 2))
    pts = []
    for _ in range(n_pts):
        sigma = draw(st.sampled_from(["*"] + sorted(set(cols["s"]))))
        # mostly light knowledge, so that most tables can be split at least once
        pts.append((sigma, draw(st.sampled_from([0, 0, 1, 2])),
                    draw(st.sampled_from([0, 0, 1, 2, 3])), draw(st.sampled_from([0, 0, 1, 2])),
                    draw(st.sampled_from(GENERIC_C))))
    return cols, pts


def _skylines(pts):
    out: dict = {}
    for sigma, ell, k, m, c in pts:
        out.setdefault(sigma, []).append((ell, k, m, c))
    return out


def _pairs(pts, values):
    out = []
    for sigma, ell, k, m, c in pts:
        for v in (values if sigma == "*" else [sigma]):
            out.append((v, ell, k, m, c))
    return out


def _groups(res):
    groups: dict = {}
    for i, g in enumerate(res.group_ids.tolist()):
        groups.setdefault(g, []).append(i)
    return sorted(sorted(m) for m in groups.values())


# ---------------------------------------------------------------------- reference equality
@pytest.mark.slow
@settings(max_examples=150)
@given(svpi_tables())
def test_equals_the_exact_reference(inp):
    cols, pts = inp
    t = pa.table(cols)
    qi = [c for c in cols if c != "s"]
    values = sorted(set(cols["s"]))
    rows = [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
    want = skyline_anonymize_reference(rows, qi, "s", _pairs(pts, values))
    if want is None:
        with pytest.raises(ValueError, match="no release"):
            skyline_anonymize(t, qi=qi, sensitive="s", skylines=_skylines(pts))
        return
    res = skyline_anonymize(t, qi=qi, sensitive="s", skylines=_skylines(pts))
    assert _groups(res) == sorted(sorted(g) for g in want)
    assert res.check.safe


# ---------------------------------------------------------------------- safety and minimality
def _split_release(rel, group_rows, s_col, g, left, right):
    """The release ``rel`` with group g replaced by the rows ``left`` and ``right``."""
    groups = []
    for h in range(rel.n_groups):
        if h == g:
            continue
        groups.append([s_col[i] for i in group_rows[h]])
    groups.append([s_col[i] for i in left])
    groups.append([s_col[i] for i in right])
    return Release.from_groups(groups)


@pytest.mark.slow
@settings(max_examples=150)
@given(svpi_tables(max_rows=40), st.sampled_from([0.75, 0.9, 2 / 3, 0.8]))
def test_svpi_output_is_safe_and_minimal(inp, c):
    cols, pts = inp
    pts = [(s, ell, k, m, c) for s, ell, k, m, _ in pts]     # also "round" thresholds
    t = pa.table(cols)
    qi = [x for x in cols if x != "s"]
    sky = _skylines(pts)
    try:
        res = skyline_anonymize(t, qi=qi, sensitive="s", skylines=sky)
    except ValueError as exc:
        assert "no release" in str(exc)
        whole = Release.from_groups([cols["s"]])
        assert not sk.check(whole, skylines=sky).safe
        return
    rel = res.release
    assert res.minimal and "minimal" in res.guarantee
    assert sk.check(rel, skylines=sky).safe
    for p in sk.check(rel, skylines=sky, exact=True).points:
        assert p.value < Fraction(p.c) + Fraction(1, 10**9)
    group_rows = [list(np.flatnonzero(res.group_ids == g)) for g in range(rel.n_groups)]
    values = sorted(set(cols["s"]))
    # brute force over every candidate split of every output group: none is safe
    for g, members in enumerate(group_rows):
        for a in qi:
            vals = [cols[a][i] for i in members]
            cut = median_cut(vals)
            if cut is None:
                continue
            left = [i for i in members if cols[a][i] <= cut]
            right = [i for i in members if cols[a][i] > cut]
            split = _split_release(rel, group_rows, cols["s"], g, left, right)
            assert not sk.check(split, skylines=sky).safe, (g, a)
            worst = max(float(p.value) - float(p.c)
                        for p in sk.check(split, skylines=_explicit(sky, values), exact=True).points)
            assert worst >= -1e-9


def _explicit(sky, values):
    out: dict = {}
    for sigma, pts in sky.items():
        for v in (values if sigma == "*" else [sigma]):
            out.setdefault(v, []).extend(pts)
    return out


@st.composite
def mvpi_tables(draw):
    n_ind = draw(st.integers(2, 12))
    V = draw(st.integers(2, 3))
    multiset = draw(st.booleans())
    ind, q0, s = [], [], []
    for i in range(n_ind):
        qv = draw(st.integers(0, 4))
        k = draw(st.integers(1, 3))
        vals = [f"v{draw(st.integers(0, V - 1))}" for _ in range(k)]
        if not multiset:
            vals = sorted(set(vals))
        for v in vals:
            ind.append(i)
            q0.append(qv)
            s.append(v)
    sigma = draw(st.sampled_from(["*"] + sorted(set(s))))
    pt = (draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 2)),
          draw(st.sampled_from([0.75, 0.9, 0.95])))
    return pa.table({"id": ind, "q0": q0, "s": s}), {sigma: [pt]}, multiset


@pytest.mark.slow
@settings(max_examples=60)
@given(mvpi_tables())
def test_mvpi_output_is_safe(inp):
    t, sky, multiset = inp
    case = "mvpi-multiset" if multiset else "mvpi-set"
    try:
        res = skyline_anonymize(t, qi=["q0"], sensitive="s", skylines=sky, individual="id",
                                case=case)
    except ValueError as exc:
        assert "no release" in str(exc) or "one value" in str(exc)
        return
    rel = res.release
    assert rel.case == case
    assert not res.minimal and "safe (MVPI)" in res.guarantee
    assert sk.check(rel, skylines=sky).safe
    assert rel.n_individuals == len(set(t.column("id").to_pylist()))
    # each individual sits in one group
    gid = res.group_ids
    for i in set(t.column("id").to_pylist()):
        assert len(set(gid[np.asarray(t.column("id").to_pylist()) == i].tolist())) == 1


def test_mvpi_individual_needs_one_qi_tuple():
    t = pa.table({"id": [1, 1, 2], "q0": [0, 1, 0], "s": ["a", "b", "a"]})
    with pytest.raises(ValueError, match="one QI tuple"):
        skyline_anonymize(t, qi=["q0"], sensitive="s", skylines=[(0, 0, 0, 0.9)], individual="id")


# ---------------------------------------------------------------------- Adult
@pytest.fixture(scope="module")
def adult():
    return fp.datasets.load_adult()


def test_adult_case_study_release_is_cl_diverse(adult):
    res = skyline_anonymize(adult, qi=["age", "marital_status", "race", "sex"],
                            sensitive="occupation",
                            skylines={"*": [(4, 0, 0, 0.75)]})
    rel = res.release
    assert res.check.safe
    # Proposition 4: (ℓ-2, 0, 0) at c/(c+1) for every value ⇔ recursive (c, ℓ)-diversity
    assert fp.classic.recursive_cl_diversity(rel, l=6) < 3
    assert res.release.n_groups > 50
    # the generalized columns describe the groups
    gen = res.table(adult)
    assert gen.num_rows == adult.num_rows and "group_id" in gen.column_names
    sky = sk.knowledge_skyline(rel, sigma="Exec-managerial", c=0.95)
    assert len(sky) >= 1


def test_count_triples_give_the_same_release(adult):
    qi = ["age", "sex", "race"]
    rows = skyline_anonymize(adult, qi=qi, sensitive="occupation", skylines=[(2, 1, 1, 0.8)])
    trip = adult.group_by(qi + ["occupation"]).aggregate([("occupation", "count")])
    trip = trip.rename_columns(qi + ["occupation", "n"])
    agg = skyline_anonymize(trip, qi=qi, sensitive="occupation", skylines=[(2, 1, 1, 0.8)],
                            weight="n")
    assert agg.release.n_groups == rows.release.n_groups
    assert np.array_equal(np.sort(agg.release.sizes), np.sort(rows.release.sizes))
    M1 = rows.release.count_matrix()
    M2 = agg.release.count_matrix()
    key = lambda M: sorted(map(tuple, M.tolist()))  # noqa: E731
    assert key(M1) == key(M2)


def test_orders_and_custom_callable():
    rng = np.random.default_rng(2)
    n = 400
    t = pa.table({"a": rng.integers(0, 30, n), "b": rng.integers(0, 10, n),
                  "c": rng.choice(["x", "y", "z"], n), "s": rng.choice(list("pqrst"), n)})
    sky = {"*": [(1, 2, 1, 0.7)]}
    widest = skyline_anonymize(t, qi=["a", "b", "c"], sensitive="s", skylines=sky)
    qi_order = skyline_anonymize(t, qi=["a", "b", "c"], sensitive="s", skylines=sky, order="qi")
    assert widest.path == "compiled" and qi_order.check.safe

    from fastpriv._kernels.mondrian import attribute_order
    from fastpriv._kernels.mondrian import median_cut as kmedian
    from fastpriv._validation import kernel_array

    tree_meta = {}

    def widest_py(ctx: SplitContext):
        # Mondrian's rule through its own kernels: must reproduce the compiled path
        q = kernel_array(ctx.codes, np.int32)
        w = kernel_array(ctx.weights, np.int64)
        perm = np.arange(q.shape[1], dtype=np.int64)
        order = attribute_order(q, w, perm, 0, q.shape[1], *tree_meta["pos"])
        out = []
        for j in order.tolist():
            cut, _ = kmedian(q, w, perm, 0, q.shape[1], j)
            if cut >= 0:
                out.append((ctx.qi[j], int(cut)))
        return out

    from fastpriv.anonymize._mondrian import MondrianTree

    tr = MondrianTree(t, ["a", "b", "c"], "s")
    tree_meta["pos"] = (tr._pos, tr._pos_off, tr._ord, tr._gspan)
    py = skyline_anonymize(t, qi=["a", "b", "c"], sensitive="s", skylines=sky, order=widest_py)
    assert py.path == "python"
    assert np.array_equal(py.group_ids, widest.group_ids)

    with pytest.raises(ValueError, match="attribute"):
        skyline_anonymize(t, qi=["a", "b"], sensitive="s", skylines=sky,
                          order=lambda ctx: [("zz", 0)])
    with pytest.raises(TypeError, match="cut"):
        skyline_anonymize(t, qi=["a", "b"], sensitive="s", skylines=sky,
                          order=lambda ctx: [(0, 1.5)])
    with pytest.raises(ValueError, match="order"):
        skyline_anonymize(t, qi=["a"], sensitive="s", skylines=sky, order="random")


def test_errors_and_nulls():
    t = pa.table({"a": [1, 2, 3, 4, None, 6], "s": ["x", "y", "x", "y", "x", "y"]})
    with pytest.raises(ValueError, match="null"):
        skyline_anonymize(t, qi=["a"], sensitive="s", skylines=[(0, 0, 0, 0.9)])
    res = skyline_anonymize(t, qi=["a"], sensitive="s", skylines=[(0, 0, 0, 0.9)], nulls="drop")
    assert res.group_ids[4] == -1 and res.release.n_rows == 5
    with pytest.raises(ValueError, match="not a sensitive value"):
        skyline_anonymize(t, qi=["a"], sensitive="s", skylines={"nope": [(0, 0, 0, 0.9)]},
                          nulls="drop")
    with pytest.raises(ValueError, match="no release"):
        skyline_anonymize(t, qi=["a"], sensitive="s", skylines=[(0, 0, 0, 0.5)], nulls="drop")
    with pytest.raises(TypeError):
        skyline_anonymize(t, qi=["a"], sensitive="s", skylines=[(0, 0, 0)], nulls="drop")
    with pytest.raises(ValueError, match="count"), \
            pytest.warns(DeprecationWarning, match="renamed weight="):
        skyline_anonymize(pa.table({"a": [1, 2], "s": ["x", "y"], "n": [1, 0]}), qi=["a"],
                          sensitive="s",
                          skylines=[(0, 0, 0, 0.9)], count="n")
    with pytest.raises(ValueError, match="individual"):
        skyline_anonymize(t, qi=["a"], sensitive="s", skylines=[(0, 0, 0, 0.9)], case="mvpi-set",
                          nulls="drop")


def test_parse_skyline_spec():
    assert parse_skyline_spec("*:4,0,0,0.75") == {"*": [(4, 0, 0, Fraction(3, 4))]}
    got = parse_skyline_spec("a:b:1,2,3,3/4; *:0,1,0,0.9")
    assert got == {"a:b": [(1, 2, 3, Fraction(3, 4))], "*": [(0, 1, 0, Fraction(9, 10))]}
    for bad in ("", "x", "x:1,2,3", "x:1,2,q,0.5"):
        with pytest.raises(ValueError):
            parse_skyline_spec(bad)


def test_cli_method_skyline(tmp_path):
    from fastpriv.cli import main

    out = tmp_path / "sky.json"
    rc = main(["anonymize", "adult", "--qi", "age", "sex", "race", "--sensitive",
               "occupation", "--method", "skyline", "--skyline", "*:4,0,0,0.75",
               "--json", str(out)])
    assert rc == 0
    payload = json.loads(out.read_text())
    assert payload["method"] == "skyline" and payload["n_groups"] > 10
    assert main(["anonymize", "adult", "--qi", "age", "--sensitive", "occupation",
                 "--method", "skyline"]) == 2


def test_release_keeps_row_groups_for_witnesses(adult):
    res = skyline_anonymize(adult, qi=["age", "sex"], sensitive="occupation",
                            skylines={"*": [(4, 0, 0, 0.75)]})
    rel = res.release
    bp = sk.breach_probability(rel, sigma="Exec-managerial", l=0, k=3, m=0)
    rows = rel.rows_of_group(bp.witness.t_group)
    assert len(rows) == rel.sizes[bp.witness.t_group]
    occ = np.asarray(pc.take(adult.column("occupation"), pa.array(rows)).to_pylist())
    assert (occ == "Exec-managerial").sum() == dict(rel.profile(bp.witness.t_group)).get(
        "Exec-managerial", 0)


def test_result_is_typed_and_follows_the_protocol(adult):
    import copy
    import json

    from fastpriv.anonymize import SkylineAnonymized
    from fastpriv.results import Result

    res = skyline_anonymize(adult, qi=["age", "sex"], sensitive="occupation",
                            skylines={"*": [(4, 0, 0, 0.75)]})
    assert isinstance(res, SkylineAnonymized) and isinstance(res, Result)
    assert isinstance(res.check, sk.SkylineCheck) and res.check.safe
    assert res.value == res.check.value < 0.75 and res.witness is None
    assert res.minimal and res.case == "svpi" and res.path == "compiled"
    assert res.n_splits == res.release.n_groups - 1 and res.points
    assert {"encode", "partition", "check", "total"} <= set(res.seconds)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["check"]["safe"] and d["n_groups"] == res.release.n_groups
    assert res == res and copy.copy(res) == res and res.summary().startswith("skyline:")
    unchecked = skyline_anonymize(adult, qi=["age", "sex"], sensitive="occupation",
                                  skylines={"*": [(4, 0, 0, 0.75)]}, check=False)
    assert unchecked.check is None and unchecked.value is None
    assert np.array_equal(unchecked.group_ids, res.group_ids)
