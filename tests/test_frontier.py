"""The privacy–utility frontier (fastpriv.frontier, ``fastpriv frontier``).

Every point is checked against what it claims to be: the kernel's per-node counts against
plain Python (:mod:`tests.naive_frontier`); each satisfying node's risk against
:func:`fastpriv.risk.audit` of the release that node publishes, and its loss against the
lattice's own quality (and :mod:`tests.naive_quality`); the satisfying set, the minimal
nodes and the chosen node against the lattice search; the frontier against pairwise
dominance — on random small tables (hypothesis) and on ARX's Adult.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv
import fastpriv.frontier as F
from fastpriv import risk
from fastpriv._kernels.frontier import lattice_node_stats
from fastpriv._validation import kernel_array
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.cli import main
from fastpriv.errors import InputError
from fastpriv.frontier import frontier, lattice_frontier, pareto
from fastpriv.hierarchies import Hierarchy
from fastpriv.predicates import AverageRisk, DistinctLDiversity, HighestRisk, KAnonymity

from . import naive_frontier, naive_quality

ARX_DIR = os.path.join(os.path.dirname(__file__), "data", "arx")
QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
      "occupation", "salary-class"]


# ---------------------------------------------------------------------- the kernel
@st.composite
def kernel_cases(draw):
    """Rows of level-0 codes over 1–4 attributes, one-level maps, loss weights, k, budget."""
    d = draw(st.integers(1, 4))
    heights, cards, steps, leaves = [], [], [], []
    for _ in range(d):
        h = draw(st.integers(1, 4))
        cs = [draw(st.integers(1, 6))]
        for _ in range(h - 1):
            cs.append(draw(st.integers(1, cs[-1])))
        steps.append([[draw(st.integers(0, cs[lv + 1] - 1)) for _ in range(cs[lv])]
                      for lv in range(h - 1)])
        leaves.append([[draw(st.integers(1, 9)) for _ in range(c)] for c in cs])
        heights.append(h)
        cards.append(cs)
    m = draw(st.integers(1, 40))
    rows = [tuple(draw(st.integers(0, cards[a][0] - 1)) for a in range(d)) for _ in range(m)]
    weights = [draw(st.integers(1, 3)) for _ in range(m)]
    return heights, cards, steps, leaves, rows, weights, draw(st.integers(0, 4)), \
        draw(st.integers(0, 12))


def _kernel_arrays(heights, cards, steps, leaves):
    d, hmax = len(heights), max(heights)
    step, leaf = [], []
    step_off = np.zeros((d, hmax), np.int64)
    leaf_off = np.zeros((d, hmax), np.int64)
    card = np.ones((d, hmax), np.int64)
    for a in range(d):
        for lv in range(heights[a]):
            card[a, lv] = cards[a][lv]
            leaf_off[a, lv] = sum(len(x) for x in leaf)
            leaf.append(np.array(leaves[a][lv], np.int64))
            if lv + 1 < heights[a]:
                step_off[a, lv] = sum(len(x) for x in step)
                step.append(np.array(steps[a][lv], np.int32))
    step_arr = np.concatenate(step) if step else np.zeros(1, np.int32)
    return step_arr, step_off, card, np.concatenate(leaf), leaf_off


@settings(max_examples=120, deadline=None)
@given(kernel_cases(), st.booleans())
def test_kernel_counts_every_node_as_plain_python(case, tuples):
    heights, cards, steps, leaves, rows, weights, k, budget = case
    step, step_off, card, leaf, leaf_off = _kernel_arrays(heights, cards, steps, leaves)
    d = len(heights)
    ro = kernel_array
    n_grid = int(np.prod(heights))
    order = F.tree_order(heights, [c[0] for c in cards])
    (n_classes, kept, sup, min_kept, sum_sq, uniques, ok, kept_leaves, sup_ent, hpos, hptr,
     hsize, hcount, visited) = lattice_node_stats(
        ro(np.array(rows, np.int32).reshape(len(rows), d), np.int32),
        ro(np.array(weights, np.int64), np.int64), ro(step, np.int32), ro(step_off, np.int64),
        ro(heights, np.int64), ro(order, np.int64), np.int64(k), np.int64(budget),
        ro(leaf, np.int64), ro(leaf_off, np.int64), ro(card, np.int64),
        ro(np.ones(n_grid, bool), np.bool_), ro(np.ones((d, n_grid), bool), np.bool_), tuples)
    hist = {int(p): list(zip(hsize[hptr[j]:hptr[j + 1]].tolist(),
                             hcount[hptr[j]:hptr[j + 1]].tolist(), strict=True))
            for j, p in enumerate(hpos)}
    assert visited >= len(rows)
    for pos, node in enumerate(np.ndindex(*heights)):
        want = naive_frontier.node_stats(rows, weights, steps, node, k, budget, leaves)
        assert n_classes[pos] == want["n_classes"] and sup[pos] == want["suppressed"], node
        assert bool(ok[pos]) == want["ok"], node
        if want["suppressed"] > budget:
            continue
        assert (kept[pos], min_kept[pos], sum_sq[pos], uniques[pos]) == (
            want["kept"], want["min_kept"], want["sum_sq"], want["uniques"]), node
        if not want["ok"]:          # the loss terms are measured at ok nodes only
            assert pos not in hist
            continue
        assert kept_leaves[pos].tolist() == want["kept_leaves"], node
        assert sup_ent[pos] == pytest.approx(want["sup_ent"], rel=1e-12, abs=1e-12), node
        if want["uniques"]:
            assert hist[pos] == want["histogram"], node
        else:
            assert pos not in hist


@settings(max_examples=80, deadline=None)
@given(kernel_cases(), st.data())
def test_kernel_skips_exactly_the_subtrees_without_a_wanted_node(case, data):
    heights, cards, steps, leaves, rows, weights, k, budget = case
    step, step_off, card, leaf, leaf_off = _kernel_arrays(heights, cards, steps, leaves)
    d = len(heights)
    ro = kernel_array
    n_grid = int(np.prod(heights))
    want = np.array(data.draw(st.lists(st.booleans(), min_size=n_grid, max_size=n_grid)))
    order = F.tree_order(heights, [c[0] for c in cards])
    need = F.subtree_need(want.reshape(heights), order)
    args = (ro(np.array(rows, np.int32).reshape(len(rows), d), np.int32),
            ro(np.array(weights, np.int64), np.int64), ro(step, np.int32),
            ro(step_off, np.int64), ro(heights, np.int64), ro(order, np.int64), np.int64(k),
            np.int64(budget), ro(leaf, np.int64), ro(leaf_off, np.int64), ro(card, np.int64),
            ro(np.ones(n_grid, bool), np.bool_))
    every = lattice_node_stats(*args, ro(np.ones((d, n_grid), bool), np.bool_), False)
    some = lattice_node_stats(*args, ro(need, np.bool_), False)
    assert some[-1] <= every[-1]
    for a, b in zip(every[:9], some[:9], strict=True):    # the wanted nodes: same counts
        assert np.array_equal(a[want], b[want])
    # a node is visited iff its subtree (or itself, the bottom) holds a wanted node
    pos = {a: i for i, a in enumerate(order.tolist())}
    for g, node in enumerate(np.ndindex(*heights)):
        nz = [a for a in order.tolist() if node[a] > 0]
        if not nz:
            continue
        q = pos[nz[-1]]
        box = [want.reshape(heights)[z] for z in np.ndindex(*heights)
               if all(z[order[i]] == node[order[i]] for i in range(q))
               and all(z[order[i]] >= node[order[i]] for i in range(q, d))]
        assert (some[0][g] > 0) == any(box), node


def test_pareto_is_pairwise_dominance():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        r = rng.integers(0, 5, n) / 4.0
        lo = rng.integers(0, 5, n) / 4.0
        if rng.random() < 0.2:
            r[rng.integers(0, n)] = np.nan        # no estimate: worse than any number
        pts = [(math.inf if math.isnan(a) else a, b) for a, b in zip(r, lo, strict=True)]
        want = [not x for x in naive_frontier.dominated(pts)]
        assert pareto(r, lo).tolist() == want


# ---------------------------------------------------------------------- random tables
@st.composite
def tables(draw):
    """A small table with its hierarchies (leaves absent from the data too) and a value."""
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 30))
    hier, cols = {}, {}
    for a in range(d):
        m = draw(st.integers(1, 5))
        leaves = [f"a{a}v{i}" for i in range(m + draw(st.integers(0, 2)))]
        rows = [[x] for x in leaves]
        n_lev = draw(st.integers(1, 3))
        if n_lev >= 2:
            b = draw(st.integers(1, max(1, len(leaves) - 1)))
            for r in rows:
                r.append(f"a{a}g{draw(st.integers(0, b - 1))}")
        if n_lev >= 3:
            for r in rows:
                r.append("*")
        hier[f"q{a}"] = Hierarchy(rows, name=f"q{a}")
        cols[f"q{a}"] = [leaves[draw(st.integers(0, m - 1))] for _ in range(n)]
    cols["s"] = [draw(st.sampled_from("xyz")) for _ in range(n)]
    return pa.table(cols), hier


MEASURES = ("loss", "entropy", "nm_entropy", "nm_precision", "aecs", "discernibility",
            "height", "precision", "avg_group_size")
CRITERIA = (lambda k: KAnonymity(k), lambda k: HighestRisk(1.0 / k),
            lambda k: DistinctLDiversity(2) & KAnonymity(k), lambda k: AverageRisk(0.5))


def check_against_audits(t, hier, crit, fraction, measure, objective, population):
    """Every point of the frontier against the lattice search and per-node audits."""
    qi = [c for c in t.column_names if c != "s"]
    lat = GeneralizationLattice(t, qi, "s", hier)
    try:
        res = lat.search(crit, utility=measure, suppression=fraction, objective=objective,
                         materialize=False)
    except InputError:       # the search refuses this suppression: so does the frontier
        with pytest.raises(InputError):
            lattice_frontier(lat, crit, utility=measure, suppression=fraction)
        return None
    f = lattice_frontier(lat, crit, utility=measure, suppression=fraction,
                         objective=objective, population=population)
    sat = [tuple(nd) for nd, s in zip(lat.nodes.tolist(), res.satisfying, strict=True) if s]
    assert [tuple(nd) for nd in f.nodes.tolist()] == sat
    assert f.chosen == res.best
    assert {tuple(nd) for nd in f.nodes[f.minimal].tolist()} == set(res.minimal)
    for i, node in enumerate(sat):
        an = lat.anonymize(node, crit, suppression=fraction)
        r = risk.audit(an.table(t), qi=qi, population=population)
        assert f.risk_max[i] == r.value, node
        assert f.risk_avg[i] == pytest.approx(r.measures["prosecutor_avg"], rel=1e-15)
        assert f.records[i] == r.params["n_records"]
        assert f.classes[i] == r.params["n_classes"]
        if population is not None:
            pu = r.measures["population_uniques"]["dankar"]
            got = f.population_uniques[i]
            assert (math.isnan(got) and pu is None) or got == pu, (node, got, pu)
        if measure == "precision":
            want = 1.0 - lat.precision(node)
        elif fraction:
            want = lat.utility(node, measure, predicate=crit, suppression=fraction)
        else:
            want = lat.utility(node, measure)
        assert f.loss[i] == pytest.approx(want, rel=1e-12, abs=1e-15), (node, measure)
    pts = list(zip(np.where(np.isnan(f.risk), math.inf, f.risk).tolist(), f.loss.tolist(),
                   strict=True))
    assert f.on_frontier.tolist() == [not x for x in naive_frontier.dominated(pts)]
    return f


@settings(max_examples=60, deadline=None)
@given(tables(), st.integers(0, len(CRITERIA) - 1), st.integers(1, 4),
       st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5]), st.sampled_from(MEASURES),
       st.sampled_from(["minimal", "optimal"]), st.booleans())
def test_points_agree_with_per_node_audits(case, which, k, fraction, measure, objective,
                                           with_population):
    t, hier = case
    population = 10 * t.num_rows + 7 if with_population else None
    check_against_audits(t, hier, CRITERIA[which](k), fraction, measure, objective,
                         population)


@settings(max_examples=40, deadline=None)
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.25]))
def test_loss_agrees_with_the_slow_quality_oracle(case, k, fraction):
    t, hier = case
    qi = [c for c in t.column_names if c != "s"]
    f = frontier(t, qi=qi, hierarchies=hier, min_size=k, suppression=fraction)
    rows = list(zip(*[t.column(c).to_pylist() for c in qi], strict=True))
    hrows = [hier[c].rows for c in qi]
    for node, loss in zip(f.nodes.tolist(), f.loss.tolist(), strict=True):
        want = naive_quality.quality(rows, hrows, tuple(node), "loss", k, fraction > 0)
        assert loss == pytest.approx(want, rel=1e-9, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.25]))
def test_tuples_path_equals_keys_path(case, k, fraction):
    t, hier = case
    qi = [c for c in t.column_names if c != "s"]
    keys = frontier(t, qi=qi, hierarchies=hier, min_size=k, suppression=fraction,
                    population=1000)
    F._TUPLES = True
    try:
        tup = frontier(t, qi=qi, hierarchies=hier, min_size=k, suppression=fraction,
                       population=1000)
    finally:
        F._TUPLES = False
    assert tup == keys


def test_weights_give_the_expanded_tables_frontier():
    rng = np.random.default_rng(3)
    n = 40
    t = pa.table({"q0": [f"a0v{i}" for i in rng.integers(0, 4, n)],
                  "q1": [f"a1v{i}" for i in rng.integers(0, 3, n)],
                  "n": rng.integers(1, 4, n)})
    hier = {"q0": Hierarchy([[f"a0v{i}", f"g{i // 2}", "*"] for i in range(4)], name="q0"),
            "q1": Hierarchy([[f"a1v{i}", "*"] for i in range(3)], name="q1")}
    expanded = t.take(pa.array(np.repeat(np.arange(n), t.column("n").to_numpy())))
    for fraction in (0.0, 0.1):
        w = frontier(t, qi=["q0", "q1"], hierarchies=hier, min_size=3, weight="n",
                     suppression=fraction, population=500)
        e = frontier(expanded, qi=["q0", "q1"], hierarchies=hier, min_size=3,
                     suppression=fraction, population=500)
        assert w.n_rows == e.n_rows == int(t.column("n").to_numpy().sum())
        for name in ("nodes", "risk_max", "risk_avg", "loss", "population_uniques",
                     "on_frontier", "suppressed"):
            assert np.array_equal(getattr(w, name), getattr(e, name), equal_nan=True), name
        assert w.chosen == e.chosen


def test_bad_input_names_the_parameter():
    t = fastpriv.datasets.load_adult()
    qi = ["age", "sex"]
    with pytest.raises(InputError, match="risk_measure"):
        frontier(t, qi=qi, risk_measure="journalist")
    with pytest.raises(InputError, match="population"):
        frontier(t, qi=qi, risk_measure="population_uniques")
    with pytest.raises(InputError, match="population"):
        frontier(t, qi=qi, population=10)
    with pytest.raises(InputError, match="utility"):
        frontier(t, qi=qi, utility="gain")
    with pytest.raises(InputError, match="suppression"):
        frontier(t, qi=qi, suppression=1.5)
    with pytest.raises(InputError, match="sensitive"):
        frontier(t, qi=qi, l=2)


def test_no_satisfying_node():
    t = pa.table({"q": ["a", "b", "c"]})
    f = frontier(t, qi=["q"], hierarchies={"q": "suppress"}, min_size=5)
    assert f.n_satisfying == 0 and f.value == 0 and f.chosen is None and f.witness is None
    assert "No node satisfies" in f.summary()
    json.dumps(f.to_dict(), allow_nan=False)


def test_result_protocol():
    from tests.test_result_protocol import check_protocol

    f = frontier(fastpriv.datasets.load_adult(), qi=["age", "marital_status", "sex"],
                 min_size=10, suppression=0.02, population=10 ** 6)
    check_protocol(f)
    assert f.witness is not None and f.witness.node == f.chosen
    d = f.to_dict()
    assert len(d["points"]) == f.n_satisfying and len(d["frontier"]) == f.value
    assert sum(p["chosen"] for p in d["points"]) == 1


# ---------------------------------------------------------------------- ARX's Adult
@pytest.fixture(scope="module")
def adult():
    return fastpriv.read_csv(os.path.join(ARX_DIR, "adult.csv.gz"))


@pytest.fixture(scope="module")
def adult_lattice(adult):
    return GeneralizationLattice(adult, QI, None, ARX_DIR)


def _audit_nodes(lat, adult, f, crit, fraction, idx):
    for i in idx:
        node = tuple(int(x) for x in f.nodes[i])
        tab = lat.anonymize(node, crit, suppression=fraction).table(adult)
        r = risk.audit(tab, qi=QI, population=100_000)
        assert f.risk_max[i] == r.value, node
        assert f.risk_avg[i] == pytest.approx(r.measures["prosecutor_avg"], rel=1e-15)
        assert f.population_uniques[i] == (r.measures["population_uniques"]["dankar"] or 0)
        want = (lat.utility(node, f.utility, predicate=crit, suppression=fraction)
                if fraction else lat.utility(node, f.utility))
        assert f.loss[i] == pytest.approx(want, rel=1e-12), node


@pytest.mark.slow
def test_adult_k2_every_node_against_its_audit(adult, adult_lattice):
    crit = KAnonymity(2)
    f = lattice_frontier(adult_lattice, crit, population=100_000)
    res = adult_lattice.search(crit, utility="loss", materialize=False)
    assert f.n_nodes == 12960 and f.n_satisfying == res.n_satisfying
    assert f.chosen == res.best
    _audit_nodes(adult_lattice, adult, f, crit, 0.0, range(f.n_satisfying))


@pytest.mark.parametrize("utility", ["loss", "entropy"])
def test_adult_k5_suppression_against_audits_and_arx(adult, adult_lattice, utility):
    crit = KAnonymity(5)
    f = lattice_frontier(adult_lattice, crit, suppression=0.04, utility=utility,
                         objective="optimal", population=100_000)
    sat = adult_lattice.search(crit, utility="height", suppression=0.04, materialize=False)
    want = [tuple(nd) for nd, s in zip(adult_lattice.nodes.tolist(), sat.satisfying,
                                       strict=True) if s]
    assert [tuple(nd) for nd in f.nodes.tolist()] == want
    rng = np.random.default_rng(0)
    idx = set(rng.choice(f.n_satisfying, 25, replace=False).tolist())
    idx |= set(np.flatnonzero(f.on_frontier).tolist()[:25]) | {f.chosen_index}
    _audit_nodes(adult_lattice, adult, f, crit, 0.04, sorted(idx))
    at = {tuple(nd): i for i, nd in enumerate(f.nodes.tolist())}
    if utility == "loss":
        # ARX's own heuristic result (TestAnonymizationHeuristic, k = 5, 4 %): its node
        # and loss are a point of the frontier; the chosen optimum is no worse
        node, loss = (0, 3, 0, 1, 1, 1, 1, 2, 0), 0.26611081915757495
        assert f.loss[at[node]] == pytest.approx(loss, rel=1e-12)
        assert f.loss[f.chosen_index] <= loss
    else:
        # ARX's optimum (TestAnonymizationKAnonymity, k = 5, 4 %, monotonic entropy)
        assert f.chosen == (1, 0, 1, 1, 3, 2, 2, 0, 1)
        assert f.loss[f.chosen_index] == pytest.approx(255559.85455731067, rel=1e-9)


def test_adult_chosen_is_the_searchs_with_suppression(adult_lattice):
    crit = KAnonymity(2)
    f = lattice_frontier(adult_lattice, crit, suppression=0.04)
    res = adult_lattice.search(crit, utility="loss", suppression=0.04, materialize=False)
    assert f.chosen == res.best
    assert f.loss[f.chosen_index] == res.scores[res.best]
    assert f.n_satisfying == res.n_satisfying and f.value >= 1


# ---------------------------------------------------------------------- command line
def _run_example(tmp_path, capsys):
    from fastpriv.cli.frontier import EXAMPLE

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        status = main(shlex.split(EXAMPLE)[1:])
    finally:
        os.chdir(cwd)
    return status, capsys.readouterr()


def test_help_example_runs_and_writes_every_point(tmp_path, capsys):
    status, out = _run_example(tmp_path, capsys)
    assert status == 0, out.err
    assert out.out.startswith("Privacy–utility frontier: ")
    assert "chosen" in out.out and "To publish the chosen node: fastpriv anonymize adult" \
        in out.out
    d = json.loads((tmp_path / "frontier.json").read_text())
    assert d["n_nodes"] == 288 and len(d["points"]) == d["n_satisfying"] > d["n_frontier"]
    page = (tmp_path / "frontier.html").read_text()
    assert "frontier-chart" in page and "<script" not in page
    # the printed command publishes the chosen node
    cmd = d["command"].replace("-o release.parquet", f"-o {tmp_path / 'r.parquet'}")
    status = main(shlex.split(cmd)[1:] + ["--json", str(tmp_path / "a.json")])
    assert status == 0
    assert json.loads((tmp_path / "a.json").read_text())["node"] == d["chosen"]["node"]


@pytest.mark.parametrize("argv, message", [
    (["--risk-measure", "population_uniques"], "population"),
    (["--population", "10"], "population"),
    (["--qi", "agee"], "agee"),
    (["--min-l", "2"], "sensitive"),
])
def test_cli_bad_input_is_status_2(argv, message, capsys):
    base = ["frontier", "adult", "--qi", "age", "sex"]
    status = main(base + argv)
    err = capsys.readouterr().err
    assert status == 2 and message in err, err


def test_cli_no_node_satisfies_is_status_1(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("q\na\nb\n")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "q.csv").write_text("a;*\nb;*\n")
    status = main(["frontier", str(path), "--qi", "q", "--hierarchies", str(tmp_path / "h"),
                   "--min-size", "5", "--json", str(tmp_path / "f.json")])
    out = capsys.readouterr()
    assert status == 1, out.err
    assert "No node satisfies" in out.out
    assert json.loads((tmp_path / "f.json").read_text())["n_satisfying"] == 0


def test_cli_without_hierarchies_for_other_data_is_status_2(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("q\na\nb\n")
    assert main(["frontier", str(path), "--qi", "q"]) == 2
    assert "--hierarchies" in capsys.readouterr().err


def test_page_loads_in_a_browser_with_its_chart(tmp_path, capsys):
    from tests.test_browser import load_in_chromium

    status, _ = _run_example(tmp_path, capsys)
    assert status == 0
    res = load_in_chromium(tmp_path / "frontier.html", screenshot=tmp_path / "page.png")
    assert res["errors"] == [], res["errors"]
    probe = res["probe"]
    assert probe["n_script"] == 0 and probe["h1"].startswith("Privacy–utility frontier")
    charts = [s for s in probe["svgs"] if "frontier-chart" in s["cls"]]
    assert len(charts) == 1
    assert charts[0]["w"] > 300 and charts[0]["h"] > 200 and charts[0]["marks"] > 50


def test_console_command_in_a_fresh_process(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fastpriv", "frontier", "adult", "--qi",
                           "age", "sex", "--json", "-"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    d = json.loads(proc.stdout)
    assert d["criterion"] == "k-anonymity(k=2)" and d["utility"] == "loss"


# ---------------------------------------------------------------------- fastpriv report
def test_report_has_the_frontier_section_with_hierarchies(tmp_path, capsys):
    from fastpriv.report import validate

    out = tmp_path / "r.json"
    status = main(["report", "adult", "--qi", "age", "sex", "race", "--hierarchies", "bundled",
                   "-o", str(tmp_path / "r.html"), "--json", str(out)])
    capsys.readouterr()
    assert status in (0, 1)
    d = json.loads(out.read_text())
    validate(d)
    sec = d["frontier"]
    want = frontier(fastpriv.datasets.load_adult(), qi=["age", "sex", "race"],
                    hierarchies="bundled", min_size=d["parameters"]["min_size"])
    assert sec["status"] == "ok" and sec["n_satisfying"] == want.n_satisfying
    assert sec["chosen"]["node"] == list(want.chosen)
    assert sec["frontier"] == want.to_dict()["frontier"]
    page = (tmp_path / "r.html").read_text()
    assert page.count("frontier-chart") == 1 and "<script" not in page
    # without --hierarchies there is no such section
    status = main(["report", "adult", "--qi", "age", "sex", "--json", str(out), "--overwrite"])
    capsys.readouterr()
    assert "frontier" not in json.loads(out.read_text())


def test_report_frontier_skipped_for_a_bucketized_release():
    from fastpriv.report import build_report

    t = pa.table({"g": [1, 1, 2, 2], "age": [30, 31, 40, 41], "s": ["a", "b", "a", "b"]})
    rep = build_report(t, sensitive="s", group="g", qi=["age"], hierarchies={"age": [10, "*"]},
                       robustness=False, attack=False, k=1, k_max=2, min_size=2, min_l=2)
    assert rep.data["frontier"]["status"] == "skipped"
    assert "Not run" in rep.to_html().split("id='frontier'", 1)[1][:400]


def test_cli_choices_are_the_librarys():
    """``fastpriv --help`` imports no NumPy, so the CLI writes the choices out: the same."""
    import fastpriv.cli.frontier as cli
    from fastpriv.anonymize.lattice import UTILITIES

    assert cli.UTILITIES == UTILITIES
    assert cli.RISK_MEASURES == F.RISK_MEASURES
    assert cli.DEFAULT_MIN_SIZE == F.DEFAULT_MIN_SIZE
