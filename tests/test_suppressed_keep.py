"""Suppressed rows kept as ARX keeps them, on request (issue 48): ``suppressed="keep"``.

Dropping stays the default. With ``suppressed="keep"`` (CLI ``--suppressed keep``) the rows
``suppression`` removes are published with every QI ``*`` and their sensitive value, as one
group of the release audited by the criterion like any other; a release whose ``*`` group
fails it is not published (``allow_failing=True`` in Python; the CLI writes nothing and
exits 1). Checked against a recount of the published file, in any input order.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv.anonymize import lattice_search
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.cli import main
from fastpriv.errors import InputError

QI = ["a", "b"]
HIER = {"a": [4, 8, "*"], "b": "suppress"}
#: (keywords, oracle on the published group sizes / sensitive values per group)
CRITERIA = {
    "k3": (dict(min_size=3), lambda sizes, ls, n: min(sizes) >= 3),
    "k5": (dict(min_size=5), lambda sizes, ls, n: min(sizes) >= 5),
    "l2": (dict(l=2), lambda sizes, ls, n: min(ls) >= 2),
    "k3l2": (dict(min_size=3, l=2), lambda sizes, ls, n: min(sizes) >= 3 and min(ls) >= 2),
    "avg": (dict(max_avg_risk=0.2), lambda sizes, ls, n: len(sizes) / n <= 0.2),
    "at_risk": (dict(max_records_at_risk=0.1, risk_threshold=0.25),
                lambda sizes, ls, n: sum(s for s in sizes if 1 / s > 0.25) / n <= 0.1),
}


@st.composite
def tables(draw, max_rows=60):
    n = draw(st.integers(8, max_rows))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return pa.table({"a": rng.integers(0, draw(st.integers(2, 20)), n),
                     "b": rng.choice(["x", "y", "z", "w"][:draw(st.integers(1, 4))], n),
                     "s": rng.choice(["p", "q", "r"], n)})


def _search(t, kw, sup, suppressed, **extra):
    return lattice_search(t, qi=QI, sensitive="s", hierarchies=HIER, suppression=sup,
                          suppressed=suppressed, **kw, **extra)


def _published_groups(tab):
    """group id -> (rows as (a, b, s) tuples) of a published table."""
    out: dict = {}
    for gid, a, b, s in zip(*(tab.column(c).to_pylist() for c in ["group_id", *QI, "s"]),
                            strict=True):
        out.setdefault(gid, []).append((a, b, s))
    return out


FAST = settings(max_examples=30, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("crit", sorted(CRITERIA))
@FAST
@given(t=tables(), sup=st.sampled_from([0.05, 0.15, 0.3]))
def test_the_star_group_is_exactly_the_suppressed_rows_and_is_audited(crit, t, sup):
    kw, holds = CRITERIA[crit]
    drop = _search(t, kw, sup, "drop")
    keep = _search(t, kw, sup, "keep")
    assert keep.best == drop.best and keep.minimal == drop.minimal
    if drop.anonymized is None:
        assert keep.anonymized is None
        return
    d, k = drop.anonymized, keep.anonymized
    gone = np.flatnonzero(d.group_ids < 0)                   # the suppressed rows
    assert d.n_suppressed_rows == k.n_suppressed_rows == gone.size
    assert d.suppressed == "drop" and k.suppressed == "keep"
    assert d.failure is None                                  # dropping: the search's release
    assert (k.group_ids >= 0).all() and k.n_suppressed == 0
    if gone.size == 0:                                       # nothing to keep: the same file
        assert k.failure is None and k.table(t).equals(d.table(t))
        return
    star = np.unique(k.group_ids[gone])
    assert star.size == 1                                    # one group holds them all
    # ... with nothing else but a class whose every QI was published '*' already
    pub = d.table(t)
    all_star = [g for g, rows in _published_groups(pub).items()
                if all(r[0] == "*" and r[1] == "*" for r in rows)]
    members = np.flatnonzero(k.group_ids == star[0])
    extra = sum(len(_published_groups(pub)[g]) for g in all_star)
    assert members.size == gone.size + extra and set(gone) <= set(members)
    # the published file: every QI '*' for those rows, sensitive values kept
    tab = k.table(t, allow_failing=True)
    assert tab.num_rows == t.num_rows
    groups = _published_groups(tab)
    stars = [g for g, rows in groups.items() if all(r[0] == "*" and r[1] == "*" for r in rows)]
    assert len(stars) == 1 and len(groups[stars[0]]) == members.size
    assert Counter(r[2] for r in groups[stars[0]]) == Counter(
        t.column("s").take(pa.array(members)).to_pylist())
    # audited like any other group: the criterion recounted on the published file
    sizes = [len(rows) for rows in groups.values()]
    ls = [len({r[2] for r in rows}) for rows in groups.values()]
    assert (k.failure is None) == holds(sizes, ls, t.num_rows)
    if k.failure is not None:
        assert "the group with every QI '*'" in k.failure
        assert k.failure in k.summary() and "FAILING" in k.summary()
        with pytest.raises(InputError, match="fails its own criterion"):
            k.table(t)
        with pytest.raises(InputError, match="fails its own criterion"):
            k.release_tables(t)
    else:
        assert k.table(t).equals(tab)


@pytest.mark.parametrize("crit", ["k3", "l2", "avg"])
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(t=tables(), sup=st.sampled_from([0.1, 0.3]), rnd=st.randoms(use_true_random=False))
def test_keep_release_is_a_function_of_the_row_multiset(crit, t, sup, rnd):
    kw, _ = CRITERIA[crit]
    perm = list(range(t.num_rows))
    rnd.shuffle(perm)
    u = t.take(pa.array(perm))
    a, b = _search(t, kw, sup, "keep").anonymized, _search(u, kw, sup, "keep").anonymized
    if a is None:
        assert b is None
        return
    assert (a.failure is None) == (b.failure is None)
    assert a.table(t, allow_failing=True).equals(b.table(u, allow_failing=True))
    # published ids: the input's row i is the permuted input's row perm^-1(i)
    pa_ids, pb_ids = a.published_group_ids(t), b.published_group_ids(u)
    assert np.array_equal(pa_ids[perm], pb_ids)


def test_keep_file_bytes_do_not_depend_on_input_order(tmp_path):
    adult = fp.datasets.load_adult().select(["age", "sex", "race", "occupation"]) \
        .slice(0, 5000)
    perm = np.random.default_rng(3).permutation(adult.num_rows)
    files = []
    for i, inp in enumerate([adult, adult.take(pa.array(perm)), adult.sort_by("occupation")]):
        res = lattice_search(inp, qi=["age", "sex", "race"], sensitive="occupation",
                             min_size=10, suppression=0.05, suppressed="keep")
        assert res.anonymized.failure is None and res.anonymized.n_suppressed_rows > 10
        path = tmp_path / f"r{i}.parquet"
        res.anonymized.write(path, inp)
        files.append(path.read_bytes())
    assert files[0] == files[1] == files[2]
    tab = pq.read_table(tmp_path / "r0.parquet")
    star = tab.filter(pa.compute.and_(pa.compute.equal(tab.column("age"), "*"),
                                      pa.compute.equal(tab.column("sex"), "*")))
    assert star.num_rows == res.anonymized.n_suppressed_rows
    assert len(set(star.column("group_id").to_pylist())) == 1


def test_default_is_drop_and_keep_needs_suppression():
    t = pa.table({"a": list(range(20)), "b": ["x"] * 20, "s": list("pq") * 10})
    plain = lattice_search(t, qi=QI, sensitive="s", hierarchies=HIER, min_size=3,
                           suppression=0.2)
    assert plain.anonymized.suppressed == "drop"
    with pytest.raises(InputError, match="suppressed='keep' keeps the rows suppression="):
        lattice_search(t, qi=QI, sensitive="s", hierarchies=HIER, min_size=3,
                       suppressed="keep")
    with pytest.raises(InputError, match="suppressed"):
        lattice_search(t, qi=QI, sensitive="s", hierarchies=HIER, min_size=3,
                       suppression=0.2, suppressed="star")
    lat = GeneralizationLattice(t, QI, "s", HIER)
    with pytest.raises(InputError, match="suppressed='keep'"):
        lat.anonymize((0, 0), fp.predicates.KAnonymity(3), suppressed="keep")


def test_keep_suppressed_rows_read_as_any_value_by_the_metrics():
    t = pa.table({"a": [1, 1, 1, 2, 2, 2, 3, 9], "b": ["x"] * 8, "s": list("pqrpqrpq")})
    lat = GeneralizationLattice(t, QI, "s", HIER)
    k3 = fp.predicates.KAnonymity(3)
    an = lat.anonymize((0, 0), k3, suppression=0.3, suppressed="keep")
    sup = np.array([False] * 6 + [True, True])
    assert an.n_suppressed_rows == 2 and an.failure is not None      # a group of 2 < 3
    assert "fails k-anonymity(k=3)" in an.failure and "2 people" in an.failure
    for attr in an.attributes:
        assert (attr.codes >= 0).all()
        code = int(attr.codes[sup][0])
        lo, hi = attr.member_indptr[code], attr.member_indptr[code + 1]
        assert attr.labels[code] == "*" and hi - lo == len(attr.domain)
    dropped = lat.anonymize((0, 0), k3, suppression=0.3)
    assert (np.asarray(dropped.attributes[0].codes)[sup] == -1).all()
    # the release: the drop release plus one group of the two rows
    assert an.release.n_groups == dropped.release.n_groups + 1
    assert sorted(an.release.sizes.tolist()) == sorted(dropped.release.sizes.tolist() + [2])


def test_keep_merges_with_a_class_published_all_star():
    """A hierarchy labelling some values '*' below its top: that class is the '*' group."""
    h = fp.Hierarchy([["1", "low", "*"], ["3", "*", "*"], ["4", "mid", "*"]], name="a")
    t = pa.table({"a": ["1", "1", "1", "3", "3", "3", "4"], "b": ["x"] * 7,
                  "s": list("pqrpqrp")})
    lat = GeneralizationLattice(t, QI, "s", {"a": h, "b": "suppress"})
    k3 = fp.predicates.KAnonymity(3)
    drop = lat.anonymize((1, 1), k3, suppression=0.2)
    keep = lat.anonymize((1, 1), k3, suppression=0.2, suppressed="keep")
    assert drop.n_suppressed_rows == keep.n_suppressed_rows == 1
    assert sorted(drop.release.sizes.tolist()) == [3, 3]
    assert sorted(keep.release.sizes.tolist()) == [3, 4]      # the '4' row joins '*'
    assert keep.failure is None
    gids = keep.group_ids
    assert gids[6] == gids[3] == gids[4] == gids[5] != gids[0]
    tab = keep.table(t)
    assert len(set(tab.filter(pa.compute.equal(tab.column("a"), "*"))
                   .column("group_id").to_pylist())) == 1


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(t=tables(max_rows=30), k=st.integers(2, 5))
def test_keep_of_weighted_table_equals_expanded(t, k):
    agg = t.group_by(["a", "b", "s"]).aggregate([([], "count_all")]) \
        .rename_columns(["a", "b", "s", "n"])
    kw = dict(qi=QI, sensitive="s", hierarchies=HIER, min_size=k, suppression=0.3,
              suppressed="keep")
    want = lattice_search(t, **kw)
    got = lattice_search(agg, weight="n", **kw)
    assert got.best == want.best
    if want.anonymized is None:
        return
    w, g = want.anonymized, got.anonymized
    assert g.release.equals(w.release)
    assert (g.failure is None) == (w.failure is None)
    tw = w.table(t, allow_failing=True)
    tg = g.table(agg, allow_failing=True)
    n = tg.column("n").to_numpy()
    expanded = tg.take(pa.array(np.repeat(np.arange(tg.num_rows), n))).drop_columns(["n"])
    assert sorted(map(str, expanded.to_pylist())) == sorted(map(str, tw.to_pylist()))


# ------------------------------------------------------------------ command line
def _cli(tmp_path, *extra):
    out, js = tmp_path / "out.parquet", tmp_path / "s.json"
    rc = main(["anonymize", "adult", "--qi", "age", "sex", "race", "marital_status",
               "--sensitive", "occupation", "--min-size", "200", "-o", str(out),
               "--json", str(js), *extra])
    return rc, out, (json.loads(js.read_text()) if js.exists() else None)


def test_cli_keep_whose_star_group_fails_exits_1_and_writes_no_release(tmp_path, capsys):
    rc, out, js = _cli(tmp_path, "--suppression", "0.002", "--suppressed", "keep")
    cap = capsys.readouterr()
    assert rc == 1 and not out.exists()
    assert js["suppressed"] == "keep" and js["n_suppressed_rows"] == 32
    assert js["n_suppressed"] == 0 and js["failure"].startswith("the group with every QI '*'")
    assert "32 suppressed rows kept as one group with every QI '*'" in cap.out
    assert "FAILS: the group with every QI '*' (32 people" in cap.out
    assert "release not written: it fails its own criterion" in cap.err


def test_cli_keep_and_drop_summaries(tmp_path, capsys):
    rc, out, js = _cli(tmp_path, "--suppression", "0.01", "--suppressed", "keep")
    cap = capsys.readouterr()
    assert rc == 0 and js["failure"] is None and js["n_suppressed_rows"] > 200
    sup = js["n_suppressed_rows"]
    assert "published 45,222 of 45,222 rows" in cap.out
    assert f"({sup:,} suppressed rows kept as one group with every QI '*')" in cap.out
    tab = pq.read_table(out)
    assert tab.num_rows == 45_222
    star = [g for g, a, s in zip(tab.column("group_id").to_pylist(),
                                 tab.column("age").to_pylist(),
                                 tab.column("sex").to_pylist(), strict=True)
            if a == "*" and s == "*"]
    assert len(star) == sup and len(set(star)) == 1
    rc, out, js = _cli(tmp_path, "--suppression", "0.01", "--overwrite")
    cap = capsys.readouterr()
    assert rc == 0 and js["suppressed"] == "drop" and js["n_suppressed"] == sup
    assert f"({sup:,} suppressed rows dropped)" in cap.out
    assert pq.read_table(out).num_rows == 45_222 - sup


@pytest.mark.parametrize("extra, message", [
    (["--suppressed", "keep"], "--suppressed keep keeps the rows --suppression removes"),
    (["--suppressed", "keep", "--method", "mondrian"], "--suppressed is an option of "
                                                       "--method lattice"),
    (["--suppression", "0.1", "--strategy", "chain"], "--strategy chain searches without "
                                                      "suppression"),
])
def test_cli_refuses_suppressed_that_would_do_nothing(tmp_path, capsys, extra, message):
    rc, out, _ = _cli(tmp_path, *extra)
    assert rc == 2 and not out.exists()
    assert message in capsys.readouterr().err
