"""Mergeable partial states: any split of the data, processed independently and merged in
any order, gives the identical result (counts by addition, skyline/classic by min/max)."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastpriv import Release, ck_safety, classic, skyline
from fastpriv.counts import CountAccumulator, merge
from fastpriv.skyline import SkylineState
from fastpriv.streaming import GroupwiseState, value_distribution
from tests.strategies import mvpi_groups

POINTS = [(0, 0, 0, 0.9), (1, 1, 1, 0.7), (2, 2, 0, 0.5)]

rows = st.lists(st.tuples(st.integers(0, 8), st.sampled_from(["p", "q"]),
                          st.sampled_from("abcde")), min_size=1, max_size=80)


def _table(rs):
    return pa.table({"g": [g for g, _, _ in rs], "h": [h for _, h, _ in rs],
                     "s": [s for _, _, s in rs]})


def _row_split(n, labels):
    """Part of every row (labels drawn by hypothesis; any assignment, not by group)."""
    return [labels[i % len(labels)] for i in range(n)]


@pytest.mark.slow
@given(rows, st.lists(st.integers(0, 3), min_size=1, max_size=40), st.randoms(),
       st.booleans())
def test_counts_merge_any_row_split_any_order(rs, labels, rnd, two_keys):
    t = _table(rs)
    keys = ["g", "h"] if two_keys else ["g"]
    ref = Release.from_table(t, sensitive="s", group=keys)
    part = np.array(_row_split(t.num_rows, labels))
    accs = []
    for p in range(4):
        idx = np.flatnonzero(part == p)
        acc = CountAccumulator(keys, "s", dense_cells=int(rnd.choice([0, 1 << 25])))
        if idx.size:
            acc.add(t.take(pa.array(idx)))
        accs.append(acc)
    rnd.shuffle(accs)
    # a left fold, a tree, and module-level merge give the same release
    assert merge(accs).to_release().equals(ref)
    left = merge([accs[0], accs[1]])
    right = merge([accs[2], accs[3]])
    assert merge([right, left]).to_release().equals(ref)
    # Release.merge of the parts' releases
    rels = [a.to_release() for a in accs if a.n_groups]
    assert rels[0].merge(*rels[1:]).equals(ref)
    # (c,k)-safety and the classical models from merged counts
    norows = Release.from_counts(ref.to_counts(), group=keys, sensitive="value")
    got = merge(accs).to_release()
    assert ck_safety.max_disclosure(got, k=2).value == ck_safety.max_disclosure(norows, k=2).value
    assert classic.audit(got).to_dict() == classic.audit(ref).to_dict()


@pytest.mark.slow
@given(mvpi_groups(case="mvpi-set"), mvpi_groups(case="mvpi-set"))
def test_release_merge_mvpi_adds_sizes(a, b):
    sa, ga = a
    sb, gb = b
    ra = Release.from_groups(ga, sizes=sa, case="mvpi-set")
    rb = Release.from_groups(gb, sizes=sb, case="mvpi-set")
    try:
        m = ra.merge(rb)
    except ValueError as exc:   # a value may now occur more often than the group's size
        assert "at most once" in str(exc)
        return
    for g in range(m.n_groups):
        want_size = (sa[g] if g < len(sa) else 0) + (sb[g] if g < len(sb) else 0)
        assert int(m.sizes[g]) == want_size
        want = {}
        for grp in ([ga[g]] if g < len(ga) else []) + ([gb[g]] if g < len(gb) else []):
            for v, c in grp.items():
                want[v] = want.get(v, 0) + c
        assert dict(m.profile(g)) == {v: c for v, c in want.items() if c}


def test_release_merge_errors():
    a = Release.from_groups([["x", "y"]])
    with pytest.raises(TypeError, match="must be a Release"):
        a.merge("nope")
    with pytest.raises(ValueError, match="cannot merge a 'mvpi-set' release"):
        a.merge(Release.from_groups([(2, {"x": 1})], case="mvpi-set"))
    with pytest.raises(TypeError, match="different types"):
        a.merge(Release.from_groups([[1, 2]]))
    b = Release.from_table(pa.table({"gid": [1], "s": ["x"]}), sensitive="s", group="gid")
    with pytest.raises(ValueError, match="different group keys"):
        a.merge(b)


@pytest.mark.slow
@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from("abcd")), min_size=1,
                max_size=80), st.lists(st.integers(0, 2), min_size=13, max_size=13),
       st.randoms())
def test_skyline_and_classic_states_merge_any_split_of_groups(rs, owner, rnd):
    t = pa.table({"g": [g for g, _ in rs], "s": [s for _, s in rs]})
    rel = Release.from_table(t, sensitive="s", group="g")
    values, totals, n = value_distribution(t, "s")
    params = {"values": values, "q": (totals / n).tolist(), "skylines": {"*": POINTS}}
    part = pc.index_in(t.column("g"), pa.array(range(13))).to_numpy()
    states, sky_states = [], []
    for p in range(3):
        mask = np.array([owner[g] == p for g in part])
        if not mask.any():
            continue
        sub = Release.from_table(t.filter(pa.array(mask)), sensitive="s", group="g")
        states.append(GroupwiseState(**params).update(sub))
        sky_states.append(SkylineState({"*": POINTS}).update(sub))
    rnd.shuffle(states)
    rnd.shuffle(sky_states)
    st_all, sky_all = states[0], sky_states[0]
    for s_, k_ in zip(states[1:], sky_states[1:], strict=True):
        st_all = st_all.merge(s_)
        sky_all = sky_all.merge(k_)
    ref_classic = classic.audit(rel)
    got = st_all.classic_audit()
    for key, want in ref_classic.models.items():
        assert (got.models[key]["value"], got.models[key]["worst_label"]) == \
            (want["value"], want["worst_label"]), key
    ref_sky = skyline.check(rel, skylines={"*": POINTS}, method="direct")

    def key(p):
        return (p.sigma, p.l, p.k, p.m, p.value, p.statistics, p.safe, p.case_used)

    # both states list the points like skyline.check, whatever the merge order
    assert [key(p) for p in st_all.skyline_result().points] == [key(p) for p in ref_sky]
    assert [key(p) for p in sky_all.result().points] == [key(p) for p in ref_sky.points]
