"""Lattice search: equals exhaustive checking on small lattices for every criterion,
node releases equal brute-force grouping, chains, suppression, utilities, output, CLI."""

import math
import subprocess
import sys
from fractions import Fraction
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv.predicates as P
from fastpriv.anonymize import lattice_search, minimal_ck_safe
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.datasets import load_adult
from fastpriv.hierarchies import Hierarchy
from tests.lattice_oracle import (
    A_VALUES,
    B_ROWS,
    ROLLUP_CRITERIA,
    check_rollup_search,
    hier_dicts,
    wide_tables,
)
from tests.naive_anonymize import (
    all_nodes,
    group_passes,
    minimal_nodes,
    node_groups,
    table_distribution,
)

HIER = {"a": [2, 4, "*"], "b": Hierarchy(B_ROWS, name="b"), "c": "suppress"}


@st.composite
def small_tables(draw, min_rows=1, max_rows=24):
    n = draw(st.integers(min_rows, max_rows))
    rows = []
    for _ in range(n):
        rows.append({"a": draw(st.sampled_from(A_VALUES)),
                     "b": draw(st.sampled_from("xyzw")),
                     "c": draw(st.sampled_from("mf")),
                     "s": draw(st.sampled_from(["s0", "s1", "s2", "s3"]))})
    return rows


def _table(rows):
    return pa.table({k: [r[k] for r in rows] for k in ("a", "b", "c", "s")})


CRITERIA = [
    (P.KAnonymity(2), [("k", 2)]),
    (P.KAnonymity(4), [("k", 4)]),
    (P.DistinctLDiversity(2), [("distinct", 2)]),
    (P.EntropyLDiversity(1.8), [("entropy", 1.8)]),
    (P.RecursiveCLDiversity(2, 2), [("recursive", 2, 2)]),
    (P.TCloseness(0.3), [("t", Fraction(3, 10))]),
    (P.CKSafety(0.75, 1, "negations"), [("ck_neg", Fraction(3, 4), 1)]),
    (P.AlphaKAnonymity(0.6, 2), [("k", 2), ("alpha", Fraction(3, 5))]),
    (P.KAnonymity(2) & P.DistinctLDiversity(2), [("k", 2), ("distinct", 2)]),
]


def _naive_sat(rows, hier, crits, q):
    def sat(node):
        groups = node_groups(rows, ["a", "b", "c"], "s", hier, node).values()
        return all(group_passes(g, c, q) for g in groups for c in crits)
    return sat


@pytest.mark.slow
@settings(max_examples=40)
@given(rows=small_tables())
def test_search_equals_exhaustive_for_every_criterion(rows):
    lat = GeneralizationLattice(_table(rows), ["a", "b", "c"], "s", HIER)
    assert lat.heights == (4, 3, 2) and lat.n_nodes == 24
    hier, q = hier_dicts(), table_distribution(rows, "s")
    for crit, oracle in CRITERIA:
        res = lat.search(crit, materialize=False)
        want = minimal_nodes(lat.heights, _naive_sat(rows, hier, oracle, q))
        assert list(res.minimal) == want, crit.name
        assert res.strategy == "flash" and res.n_checked <= lat.n_nodes
        exh = lat.search(crit, strategy="exhaustive", materialize=False)
        assert exh.minimal == res.minimal and exh.n_checked == lat.n_nodes
        assert (exh.satisfying == res.satisfying).all()
        # monotonicity on the lattice, checked on every node
        sat_nodes = {tuple(n) for n in lat.nodes[exh.satisfying]}
        for n in sat_nodes:
            for a in range(3):
                if n[a] + 1 < lat.heights[a]:
                    up = list(n)
                    up[a] += 1
                    assert tuple(up) in sat_nodes, (crit.name, n)


WORST_CASE = [P.CKSafety(0.7, 1), P.CKSafety(Fraction(9, 10), 2),
              P.SkylinePoint(None, 1, 1, 0, 0.8), P.SkylinePoint("s0", 0, 2, 1, 0.6),
              P.CKSafety(0.7, 1) & P.KAnonymity(2)]


@pytest.mark.slow
@settings(max_examples=20)
@given(rows=small_tables(max_rows=12))
def test_search_equals_exhaustive_for_worst_case_models(rows):
    from fastpriv import Release

    lat = GeneralizationLattice(_table(rows), ["a", "b", "c"], "s", HIER)
    hier = hier_dicts()
    releases = {n: Release.from_groups(list(node_groups(rows, ["a", "b", "c"], "s", hier,
                                                        n).values()))
                for n in all_nodes(lat.heights)}
    for crit in WORST_CASE:
        res = lat.search(crit, materialize=False)

        def sat(node, crit=crit):
            return crit(releases[node])

        assert list(res.minimal) == minimal_nodes(lat.heights, sat), crit.name
        assert res.strategy == "flash"


@pytest.mark.slow
@settings(max_examples=40)
@given(rows=small_tables(), node_i=st.integers(0, 23))
def test_node_release_equals_brute_force_grouping(rows, node_i):
    lat = GeneralizationLattice(_table(rows), ["a", "b", "c"], "s", HIER)
    node = tuple(int(x) for x in lat.nodes[node_i])
    rel = lat.release(node, labels=True)
    want = node_groups(rows, ["a", "b", "c"], "s", hier_dicts(), node)
    got = {}
    for g, key in enumerate(rel.group_labels):
        got[tuple(key)] = sorted(v for v, c in rel.profile(g) for _ in range(c))
    assert got == {k: sorted(v) for k, v in want.items()}
    an = lat.anonymize(node)
    gids = an.group_ids
    # rows of a group share their generalized tuple; groups are the release's
    gen = an.generalized.to_pylist()
    for g in range(an.release.n_groups):
        keys = {tuple(gen[i].values()) for i in np.flatnonzero(gids == g)}
        assert len(keys) == 1
    assert np.array_equal(np.bincount(gids, minlength=an.release.n_groups), an.release.sizes)


@pytest.mark.slow
@settings(max_examples=30)
@given(rows=small_tables(min_rows=4), frac=st.sampled_from([0.1, 0.25, 0.5]),
       k=st.integers(2, 4))
def test_suppression_equals_exhaustive(rows, frac, k):
    lat = GeneralizationLattice(_table(rows), ["a", "b", "c"], "s", HIER)
    hier = hier_dicts()
    budget = math.floor(frac * len(rows))

    def sat(node, crits):
        groups = node_groups(rows, ["a", "b", "c"], "s", hier, node).values()
        q = table_distribution(rows, "s")
        bad = [g for g in groups if not all(group_passes(g, c, q) for c in crits)]
        kept = len(groups) - len(bad)
        return sum(len(g) for g in bad) <= budget and kept > 0

    for crit, oracle, strategy in [(P.KAnonymity(k), [("k", k)], "flash"),
                                   (P.EntropyLDiversity(1.5), [("entropy", 1.5)], "exhaustive")]:
        res = lat.search(crit, suppression=frac, materialize=False)
        assert res.strategy == (strategy if budget > 0 else "flash")
        assert list(res.minimal) == minimal_nodes(lat.heights, lambda n: sat(n, oracle))
        if res.best is not None:
            an = lat.anonymize(res.best, crit, suppression=frac)
            assert int((an.group_ids < 0).sum()) <= budget
            assert crit(an.release)
            sup = an.group_ids < 0
            assert all(an.generalized.column(a)[int(i)].as_py() == "*"
                       for a in ("a", "b") for i in np.flatnonzero(sup))


def test_adult_lattice_and_best_node():
    adult = load_adult()
    lat = GeneralizationLattice(adult, ["age", "marital_status", "race", "sex"], "occupation")
    assert lat.n_nodes == 72 and lat.heights == (6, 3, 2, 2)
    res = lat.search(P.KAnonymity(10))
    assert res.n_checked < 72 and res.best in res.minimal
    exh = lat.search(P.KAnonymity(10), strategy="exhaustive", materialize=False)
    assert exh.minimal == res.minimal
    an = res.anonymized
    assert an.release.n_rows == 45222 and int(an.release.sizes.min()) >= 10
    assert an.method == "lattice" and list(an.node) == list(res.best)
    # the best node minimizes discernibility among the minimal nodes
    scores = {n: float(np.sum(lat.release(n).sizes.astype(float) ** 2)) for n in res.minimal}
    assert min(scores.values()) == res.scores[res.best] == scores[res.best]
    assert res.release is an.release and res.group_ids is an.group_ids
    d = res.to_dict()
    assert d["n_nodes"] == 72 and d["best"] == list(res.best)


def test_utilities():
    adult = load_adult(["age", "marital_status", "race", "sex", "occupation"])
    lat = GeneralizationLattice(adult, ["age", "marital_status", "race", "sex"], "occupation")
    crit = P.DistinctLDiversity(3)
    by = {u: lat.search(crit, utility=u, materialize=False) for u in
          ("discernibility", "avg_group_size", "height", "precision")}
    mins = by["height"].minimal
    assert all(by[u].minimal == mins for u in by)
    assert sum(by["height"].best) == min(sum(n) for n in mins)
    assert lat.precision(by["precision"].best) == max(lat.precision(n) for n in mins)
    assert lat.precision(lat.bottom) == 1.0 and lat.precision(lat.top) == 0.0
    g = lat.release(lat.top).sizes
    assert lat.utility(lat.top, "discernibility") == float(g[0]) ** 2
    assert lat.utility(lat.top, "avg_group_size") == 45222.0
    custom = lat.search(crit, utility=lambda node, rel: -rel.n_groups, materialize=False)
    assert custom.utility == "<lambda>" and custom.best in mins
    with pytest.raises(ValueError, match="utility must be one of"):
        lat.search(crit, utility="nope")


def test_chain_search_is_a_binary_search_on_the_chain():
    adult = load_adult(["age", "marital_status", "race", "sex", "occupation"])
    lat = GeneralizationLattice(adult, ["age", "marital_status", "race", "sex"], "occupation")
    chain = lat.default_chain()
    assert chain[0] == lat.bottom and chain[-1] == lat.top and len(chain) == 1 + 5 + 2 + 1 + 1
    for crit in (P.KAnonymity(50), P.DistinctLDiversity(5), P.TCloseness(0.1)):
        res = lat.chain_search(crit)
        linear = next((n for n in chain if lat.check(n, crit).ok), None)
        assert res.node == linear
        assert res.n_checked <= math.ceil(math.log2(len(chain) + 1))
        full = lat.search(crit, materialize=False)
        assert res.minimal_in_lattice == (res.node in full.minimal)
        assert res.release.n_groups == lat.release(res.node).n_groups
    custom = lat.chain_search(P.KAnonymity(50), [(0, 0, 0, 0), (5, 0, 0, 0), (5, 2, 1, 1)])
    assert custom.node in {(5, 0, 0, 0), (5, 2, 1, 1)}
    with pytest.raises(ValueError, match="strictly increasing"):
        lat.chain_search(P.KAnonymity(2), [(1, 0, 0, 0), (0, 1, 0, 0)])
    nothing = lat.chain_search(P.KAnonymity(10**6))
    assert nothing.node is None and nothing.anonymized is None
    with pytest.raises(ValueError, match="no node of the chain"):
        nothing.release


def test_non_monotone_criteria_are_checked_exhaustively():
    adult = load_adult(["age", "sex", "occupation"])
    lat = GeneralizationLattice(adult, ["age", "sex"], "occupation")
    odd = P.FunctionCriterion(lambda r: r.n_groups % 2 == 0, "even", monotone=False)
    res = lat.search(odd, materialize=False)
    assert res.strategy == "exhaustive" and res.n_checked == lat.n_nodes
    with pytest.raises(ValueError, match="needs a monotone"):
        lat.search(odd, strategy="flash")
    # a plain callable is assumed monotone
    res2 = lat.search(lambda r: r.n_groups <= 4, materialize=False)
    assert res2.strategy == "flash"


def test_no_satisfying_node():
    t = pa.table({"a": [1, 2, 3], "s": ["x", "x", "x"]})
    res = lattice_search(t, qi=["a"], sensitive="s", hierarchies={"a": [2, "*"]}, l=2)
    assert res.best is None and res.minimal == () and res.anonymized is None
    with pytest.raises(ValueError, match="no node of the lattice satisfies"):
        res.release


def test_keyword_front_end_and_progress():
    adult = load_adult(["age", "sex", "race", "occupation"])
    seen = []
    res = lattice_search(adult, qi=["age", "sex", "race"], sensitive="occupation", min_size=5,
                         l=3, t=0.3, progress=lambda d, n: seen.append((d, n)))
    assert res.criterion == ("k-anonymity(k=5) & distinct-l-diversity(l=3) & "
                             "t-closeness(t=0.3)")
    assert seen and seen[-1] == (24, 24)
    assert all(d2 >= d1 for (d1, _), (d2, _) in pairwise(seen))


def test_validation_errors():
    adult = load_adult(["age", "sex", "occupation"])
    with pytest.raises(ValueError, match="qi: column 'agee' not found"):
        GeneralizationLattice(adult, ["agee"], "occupation")
    with pytest.raises(ValueError, match="also a qi"):
        GeneralizationLattice(adult, ["age"], "age")
    with pytest.raises(ValueError, match="duplicate"):
        GeneralizationLattice(adult, ["age", "age"], "occupation")
    with pytest.raises(ValueError, match="at least one"):
        GeneralizationLattice(adult, [], "occupation")
    lat = GeneralizationLattice(adult, ["age", "sex"], "occupation")
    with pytest.raises(ValueError, match="not in the lattice"):
        lat.release((6, 0))
    with pytest.raises(ValueError, match=r"suppression must be a fraction"):
        lat.search(P.KAnonymity(2), suppression=1.0)
    with pytest.raises(ValueError, match="suppression needs a group-local"):
        lat.search(P.FunctionCriterion(lambda r: True), suppression=0.1)
    with pytest.raises(ValueError, match="does not cover"):
        GeneralizationLattice(adult, ["age"], "occupation", {"age": Hierarchy(
            [["17", "*"]], name="age")})


def test_nulls_are_dropped_on_request():
    t = pa.table({"a": [1, 2, None, 4], "s": ["x", "y", "x", "y"]})
    with pytest.raises(ValueError, match="null"):
        GeneralizationLattice(t, ["a"], "s", {"a": [2, "*"]})
    lat = GeneralizationLattice(t, ["a"], "s", {"a": [2, "*"]}, nulls="drop")
    an = lat.anonymize((1,))
    assert an.group_ids.tolist()[2] == -1 and an.group_ids.shape[0] == 4
    assert an.generalized.column("a").to_pylist()[2] is None
    assert an.release.n_rows == 3


def test_write_is_atomic_and_refuses_to_overwrite(tmp_path):
    adult = load_adult(["age", "sex", "occupation"])
    res = lattice_search(adult, qi=["age", "sex"], sensitive="occupation", min_size=20)
    out = tmp_path / "release.parquet"
    res.write(out, adult)
    back = pq.read_table(out)
    assert back.num_rows == 45222 and "group_id" in back.column_names
    assert set(back.column("age").to_pylist()) <= set(res.anonymized.attributes[0].labels)
    with pytest.raises(FileExistsError):
        res.write(out, adult)
    res.write(out, adult, overwrite=True)
    src = tmp_path / "in.parquet"
    pq.write_table(adult, src)
    with pytest.raises(ValueError, match="refusing to write"):
        res.anonymized.write(src, str(src), overwrite=True)


def test_minimal_ck_safe_implications_on_adult():
    from fastpriv import ck_safety

    adult = load_adult(["age", "marital_status", "race", "sex", "occupation"])
    qi = ["age", "marital_status", "race", "sex"]
    lat = GeneralizationLattice(adult, qi, "occupation")
    res = minimal_ck_safe(adult, qi=qi, sensitive="occupation", c=0.6, k=2)
    assert res.best in res.minimal and res.n_checked < 72
    for node in res.minimal:
        assert ck_safety.max_disclosure(lat.release(node), k=2).value < 0.6
        for a in range(4):
            if node[a]:
                below = list(node)
                below[a] -= 1
                assert ck_safety.max_disclosure(lat.release(below), k=2).value >= 0.6
    assert ck_safety.max_disclosure(res.release, k=2).value < 0.6
    chain = minimal_ck_safe(adult, qi=qi, sensitive="occupation", c=0.6, k=2,
                            method="chain")
    assert chain.node is not None
    assert ck_safety.is_safe(chain.release, c=0.6, k=2)


def test_minimal_ck_safe_negations():
    adult = load_adult(["age", "marital_status", "race", "sex", "occupation"])
    qi = ["age", "marital_status", "race", "sex"]
    res = minimal_ck_safe(adult, qi=qi, sensitive="occupation", c=0.5, k=3,
                          knowledge_kind="negations")
    assert res.best in res.minimal and res.criterion.startswith("(c,k)-safety")
    chain = minimal_ck_safe(adult, qi=qi, sensitive="occupation", c=0.5, k=3,
                            knowledge_kind="negations", method="chain")
    assert chain.node is not None and chain.n_checked <= 4


def _run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fastpriv", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.slow
def test_cli_lattice(tmp_path):
    out = tmp_path / "adult_k10.parquet"
    js = tmp_path / "summary.json"
    r = _run_cli("anonymize", "adult", "--qi", "age", "marital_status", "race", "sex",
                 "--sensitive", "occupation", "--min-size", "10", "--l", "3", "-o", str(out),
                 "--json", str(js), "--query-error", "200")
    assert r.returncode == 0, r.stderr
    assert "nodes tagged" in r.stderr and "discernibility" in r.stdout
    import json

    summary = json.loads(js.read_text())
    assert summary["n_nodes"] == 72 and summary["nodes_checked"] < 72
    assert summary["query_error"]["n_queries"] == 200
    assert pq.read_table(out).num_rows == 45222
    again = _run_cli("anonymize", "adult", "--qi", "age", "--sensitive", "occupation",
                     "--min-size", "10", "-o", str(out))
    assert again.returncode == 2 and "exists" in again.stderr
    csv = tmp_path / "released.csv"
    r = _run_cli("anonymize", "adult", "--qi", "age", "sex", "--sensitive", "occupation",
                 "--min-size", "5", "--interval", "age=10,20,*",
                 "--strategy", "chain", "-o", str(csv))
    assert r.returncode == 0, r.stderr
    assert csv.read_text().splitlines()[0] == '"age","sex","occupation","group_id"'
    bad = _run_cli("anonymize", "adult", "--qi", "age", "--sensitive", "occupation")
    assert bad.returncode == 2 and "needs a criterion" in bad.stderr


PLUGIN = '''
def _add(g):
    g.add_argument("--fake-size", type=int, default=2)


def _run(args, data, criterion):
    import numpy as np
    import pyarrow as pa
    from fastpriv import Release
    from fastpriv._arrow import as_table
    from fastpriv.anonymize import Anonymized

    t = as_table(data)
    gid = np.arange(t.num_rows) // args.fake_size
    rel = Release.from_table(pa.table({"g": gid, "s": t.column(args.sensitive)}),
                             sensitive="s", group="g")
    return Anonymized(release=rel, group_ids=gid, method="fake",
                      params={"criterion": "none", "qi": args.qi,
                              "sensitive": args.sensitive})


CLI_METHOD = ("fake", _add, _run)
'''


def test_cli_discovers_plugin_methods(tmp_path, monkeypatch, capsys):
    import fastpriv.anonymize as pkg
    from fastpriv.cli import anonymize as cli_anon
    from fastpriv.cli import main

    (tmp_path / "fakeplug.py").write_text(PLUGIN)
    (tmp_path / "brokenplug.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.setattr(pkg, "__path__", list(pkg.__path__) + [str(tmp_path)])
    monkeypatch.setattr(cli_anon, "_LOADED", False)
    monkeypatch.setattr(cli_anon, "METHODS", dict(cli_anon.METHODS))
    monkeypatch.setattr(cli_anon, "_PLUGIN_ERRORS", {})
    src = tmp_path / "in.csv"
    src.write_text("a,s\n1,x\n2,y\n3,x\n4,y\n")
    out = tmp_path / "out.csv"
    rc = main(["anonymize", str(src), "--qi", "a", "--sensitive", "s", "--method", "fake",
               "--fake-size", "2", "-o", str(out)])
    assert rc == 0
    assert "fake" in cli_anon.METHODS and cli_anon.METHODS["fake"].source.endswith("fakeplug")
    assert "brokenplug" in cli_anon._PLUGIN_ERRORS
    # the fake method groups rows without generalizing: a bucketization, two tables
    qi_rows = (tmp_path / "out.qi.csv").read_text().splitlines()[1:]
    assert qi_rows == ["1,0", "2,0", "3,1", "4,1"]
    assert sorted((tmp_path / "out.sensitive.csv").read_text().splitlines()[1:]) == [
        '0,"x",1', '0,"y",1', '1,"x",1', '1,"y",1']
    assert main(["anonymize", str(src), "--qi", "a", "--sensitive", "s", "--method",
                 "brokenplug", "--min-size", "2"]) == 2
    assert "failed to import" in capsys.readouterr().err


# ---------------------------------------------------------------------- issue 27: roll-up
@settings(max_examples=40, deadline=None)
@given(rows=wide_tables(), frac=st.sampled_from([0.0, 0.05, 0.1, 0.3]), k=st.integers(1, 5),
       which=st.integers(0, len(ROLLUP_CRITERIA) - 1), tiny_cache=st.booleans())
def test_rollup_search_equals_exhaustive_oracle(rows, frac, k, which, tiny_cache):
    """Roll-up search (plain settings) equals plain-Python checking of every node."""
    check_rollup_search(rows, frac, k, which, tiny_cache)


def test_rollup_matches_cell_regrouping_on_adult():
    """Every node of a 9-QI Adult lattice slice: roll-up class sizes equal the cell regroup."""
    from fastpriv.anonymize.lattice import _RollUp

    qi = ["age", "education", "marital_status", "race", "sex", "workclass"]
    adult = load_adult(qi + ["occupation"]).slice(0, 3000)
    lat = GeneralizationLattice(adult, qi, "occupation")
    for crit in (P.KAnonymity(3), P.DistinctLDiversity(2)):
        eng = _RollUp(lat, crit, 0)
        rng = np.random.default_rng(0)
        for i in rng.permutation(lat.n_nodes)[:300]:
            node = tuple(int(x) for x in lat.nodes[i])
            res, (sup, kept, sq, _) = eng.check(node, budget=lat.n_rows, bound=True)
            sizes = lat.release(node).sizes
            ok = crit.group_ok(lat.release(node))
            assert res.n_groups == sizes.shape[0]
            assert sup == int(sizes[~ok].sum()) and kept == int(ok.sum())
            assert sq == int((sizes[ok].astype(np.int64) ** 2).sum())
        assert len(eng.cache) > 1  # failing nodes were materialized and reused


def test_search_progress_hook():
    adult = load_adult(["age", "marital_status", "race", "sex", "occupation"])
    lat = GeneralizationLattice(adult, ["age", "marital_status", "race", "sex"], "occupation")
    seen = []
    res = lat.search(P.KAnonymity(10), materialize=False, on_check=seen.append)
    assert len(seen) == res.n_checked and seen[-1].n_tagged == lat.n_nodes
    assert [s.n_checked for s in seen] == list(range(1, res.n_checked + 1))
    assert [s.node for s in seen] == list(res.checked)
    assert all(b.seconds >= a.seconds and b.n_tagged >= a.n_tagged
               for a, b in pairwise(seen))
    assert set(res.phases) >= {"rollup", "count", "criterion", "bookkeeping"}
    with pytest.raises(ValueError, match="objective"):
        lat.search(P.KAnonymity(10), objective="best")


def test_objective_optimal_front_end_with_suppression():
    adult = load_adult(["age", "marital_status", "race", "sex", "workclass", "occupation"])
    qi = ["age", "marital_status", "race", "sex", "workclass"]
    lat = GeneralizationLattice(adult, qi, "occupation")
    res = lattice_search(adult, qi=qi, sensitive="occupation", min_size=50, suppression=0.02,
                         objective="optimal", materialize=False)
    mins = lat.search(P.KAnonymity(50), suppression=0.02, materialize=False)
    assert res.objective == "optimal" and res.minimal == mins.minimal
    assert res.scores[res.best] <= mins.scores[mins.best]
    # the optimum is the least discernibility over every satisfying node (exhaustively)
    def loss(node):
        rel = lat.release(node)
        ok = P.KAnonymity(50).group_ok(rel)
        return float((rel.sizes[ok].astype(np.int64) ** 2).sum()
                     + rel.sizes[~ok].sum() * lat.n_rows)
    sat = [tuple(int(x) for x in n) for n in lat.nodes[mins.satisfying]]
    want = min(sat, key=lambda n: (loss(n), sum(n), n))
    assert res.best == want and res.scores[want] == loss(want)
