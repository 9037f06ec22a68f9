"""t-closeness with ARX's hierarchical ground distance, added through the registry alone.

The model touched its module (fastpriv/hierarchical_t.py), its registry entry, this file,
docs/api.md and README.md: the CLI flags, the report section, the verdict check and its
remedy, the HTML, the glossary and the warm-up come from the registry's declaration.

Oracle: the earth mover's distance solved as the transportation linear program over the
ground distance level(LCA)/H, straight from the definition (Li et al. 2007), against ARX's
bottom-up algorithm on random hierarchies.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fastpriv as fp
from fastpriv import registry
from fastpriv.cli import main
from fastpriv.errors import InputError
from fastpriv.hierarchical_t import (
    _levels,
    hierarchical_emd,
    hierarchical_t_closeness,
    per_group,
)
from fastpriv.hierarchies import Hierarchy
from fastpriv.report import build_report
from fastpriv.report.schema import SCHEMA_VERSION, validate
from tests.test_result_protocol import check_protocol

H3 = Hierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]], name="x")


# ------------------------------------------------------------------ oracle
def _lp_emd(p: np.ndarray, q: np.ndarray, rows: list[tuple[str, ...]]) -> float:
    """EMD(p, q) by the transportation LP; d(i, j) = first level where i and j meet / H."""
    n, height = len(p), len(rows[0]) - 1
    d = np.array([[next(lev for lev in range(height + 1) if rows[i][lev] == rows[j][lev])
                   / height for j in range(n)] for i in range(n)])
    a_eq = np.zeros((2 * n, n * n))
    for i in range(n):
        a_eq[i, i * n:(i + 1) * n] = 1          # what leaves i
        a_eq[n + i, i::n] = 1                   # what reaches i
    res = linprog(d.ravel(), A_eq=a_eq, b_eq=np.concatenate([p, q]), bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return float(res.fun)


@st.composite
def _hierarchies(draw):
    """A random nested hierarchy with one root, and distributions over its values."""
    n = draw(st.integers(1, 7))
    height = draw(st.integers(1, 4))
    nodes = list(range(n))
    cols = [[f"v{i}" for i in range(n)]]
    for lev in range(1, height):
        k = draw(st.integers(1, len(set(nodes))))
        up = {x: draw(st.integers(0, k - 1)) for x in sorted(set(nodes))}
        nodes = [up[x] for x in nodes]
        cols.append([f"L{lev}_{x}" for x in nodes])
    cols.append(["*"] * n)
    rows = [tuple(c[i] for c in cols) for i in range(n)]
    weights = st.lists(st.integers(0, 5), min_size=n, max_size=n).filter(lambda w: sum(w))
    p = np.array(draw(weights), dtype=float)
    q = np.array(draw(weights), dtype=float)
    return rows, p / p.sum(), q / q.sum()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(case=_hierarchies())
def test_arx_algorithm_equals_the_transportation_lp(case):
    rows, p, q = case
    h = Hierarchy(rows, name="s")
    parents, _ = _levels(h, [r[0] for r in rows])
    got = hierarchical_emd(p[None, :], q, parents)[0]
    assert got == pytest.approx(_lp_emd(p, q, rows), abs=1e-9)


def test_worked_example():
    # Q = (1/3, 1/3, 1/3). Group 0 (all a): 1/3 moves a→b at 1/2, 1/3 moves a→c at 1:
    # 1/6 + 1/3 = 1/2. Group 1 (b, c half each): 1/6 moves b→a at 1/2, 1/6 c→a at 1: 1/4.
    rel = fp.Release.from_groups([["a", "a", "a"], ["b", "c", "b", "c", "b", "c"]])
    res = hierarchical_t_closeness(rel, hierarchy=H3)
    assert res.per_group.tolist() == pytest.approx([0.5, 0.25])
    assert res.value == pytest.approx(0.5) and res.witness.group == 0
    assert res.params["height"] == 2
    check_protocol(res)
    # a flat hierarchy (every value straight under the root) is the equal distance
    flat = Hierarchy([["a", "*"], ["b", "*"], ["c", "*"]], name="x")
    assert hierarchical_t_closeness(rel, hierarchy=flat).value == \
        pytest.approx(fp.classic.t_closeness(rel))


def test_per_group_of_a_partition_reads_the_whole_tables_q():
    """The engines' contract: a partition's groups against the whole table's q."""
    whole = fp.Release.from_groups([["a", "a"], ["b", "c"], ["c", "c", "b"]])
    part = fp.Release.from_groups([["a", "a"]])          # knows neither b nor c
    q = dict(zip(whole.values, (whole.value_totals / whole.n_rows).tolist(), strict=True))
    opts = {"hierarchies": H3}
    assert per_group(part, q=q, options=opts)[0] == \
        pytest.approx(per_group(whole, q=None, options=opts)[0])
    m = registry.model("hierarchical_t")
    assert (m.per_group, m.worse, m.needs_q) == (
        "fastpriv.hierarchical_t:per_group", "max", True)
    assert registry.load(m.per_group) is per_group


def test_bad_hierarchies_name_the_parameter():
    rel = fp.Release.from_groups([["a", "d"]])
    with pytest.raises(InputError, match="hierarchy.*does not list.*'d'"):
        hierarchical_t_closeness(rel, hierarchy=H3)
    with pytest.raises(InputError, match="hierarchy.*one root"):
        hierarchical_t_closeness(fp.Release.from_groups([["a"]]),
                                 hierarchy=Hierarchy([["a", "x"], ["b", "y"]], name="s"))
    with pytest.raises(InputError, match="hierarchies"):
        hierarchical_t_closeness(rel, hierarchy=None)


# ------------------------------------------------------------------ through the registry
def _files(tmp_path):
    table = pa.table({"zip": ["1", "1", "1", "2", "2", "2"],
                      "dis": ["a", "a", "b", "c", "c", "a"]})
    pacsv.write_csv(table, tmp_path / "d.csv")
    folder = tmp_path / "h"
    folder.mkdir()
    H3.to_csv(folder / "dis.csv")
    return str(tmp_path / "d.csv"), str(folder), table


@pytest.mark.parametrize(("t", "code"), [(0.01, 1), (0.99, 0)])
def test_audit_flag_verdict_and_json(tmp_path, capsys, t, code):
    data, folder, _ = _files(tmp_path)
    out = tmp_path / "a.json"
    rc = main(["audit", data, "--sensitive", "dis", "--qi", "zip", "--no-risk",
               "--min-size", "1", "--min-l", "1", "--max-t", "1", "--c", "1", "--k", "0",
               "--point", "0,0,0",
               "--max-hierarchical-t", str(t), "--hierarchies", folder, "--json", str(out)])
    text = capsys.readouterr().out
    d = json.loads(out.read_text())
    sec = d["models"]["hierarchical_t"]
    check = next(c for c in d["verdict"]["checks"] if c["id"] == "hierarchical_t")
    assert sec["status"] == "ok" and check["satisfied"] is (code == 0)
    assert "t-closeness (hierarchical distance)" in text
    assert rc == code                 # every other check holds at these thresholds
    if code:
        assert "--max-t 0.01" in check["remedy"]
    else:
        assert "remedy" not in check


def test_report_json_html_schema_glossary(tmp_path):
    _, folder, table = _files(tmp_path)
    rep = build_report(table, sensitive="dis", qi=["zip"], robustness=False, attack=False,
                       risk=False, thresholds={"max_hierarchical_t": 0.1},
                       options={"hierarchies": folder})
    d = rep.to_dict()
    validate(d)
    assert d["schema_version"] == SCHEMA_VERSION == "1.4.0"
    sec = d["models"]["hierarchical_t"]
    exp = hierarchical_t_closeness(table, sensitive="dis", qi=["zip"], hierarchy=folder)
    assert sec["value"] == pytest.approx(exp.value)
    assert "hierarchical_t" in d["verdict"]["violated"]
    assert "id='model-hierarchical_t'" in rep.to_html()
    assert "t-closeness (hierarchical distance)" in rep.summary()
    assert any(g["term"] == "hierarchical t-closeness" for g in d["glossary"])
    bad = dict(d, models={"hierarchical_t": {"status": "ok", "reason": None}})
    with pytest.raises(InputError, match="models/hierarchical_t"):
        validate(bad)


def test_a_refused_hierarchy_fails_closed(tmp_path):
    _, _, table = _files(tmp_path)
    bad = Hierarchy([["a", "*"], ["b", "*"]], name="dis")       # no c
    rep = build_report(table, sensitive="dis", qi=["zip"], robustness=False, attack=False,
                       risk=False, thresholds={"max_hierarchical_t": 0.9},
                       options={"hierarchies": bad})
    d = rep.to_dict()
    assert d["models"]["hierarchical_t"]["status"] == "failed"
    assert rep.exit_code == 2 and not d["verdict"]["passed"]


def test_warmup_runs_the_declared_workload():
    from fastpriv._warmup import warm

    assert registry.model("hierarchical_t").warmup in registry.WARMUP_GROUPS
    out = warm(["classic"])
    assert {"name": "hierarchical_t paths", "status": "ok"}.items() <= next(
        w for w in out["workloads"] if w["name"] == "hierarchical_t paths").items()
