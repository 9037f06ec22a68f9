"""ARX's everyday set-up from the command line, end to end, on ARX's own files.

ARX's example (``tests/data/arx``: its ``adult.csv``, ``;``-separated, and its
``adult_hierarchy_<column>.csv`` files, unrenamed) makes every column a quasi-identifier: no
column is sensitive. The same commands a data owner runs are run here as written: audit and
risk of the raw table, minimal and optimal 5-anonymous releases under 0 % and 2 %
suppression with ARX's loss and discernibility, a risk-threshold search, the audit of each
written release and the report. Every expected number is recomputed independently here
(pyarrow group-by over the files) or taken from the Python API, never from the CLI itself.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fastpriv
import fastpriv.cli
from fastpriv.anonymize.lattice import lattice_search
from fastpriv.report.schema import validate

ARX_DIR = os.path.join(os.path.dirname(__file__), "data", "arx")
ADULT = os.path.join(ARX_DIR, "adult.csv.gz")
QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
      "occupation", "salary-class"]


@pytest.fixture(scope="module")
def adult() -> pa.Table:
    return fastpriv.read_csv(ADULT)


def _class_sizes(table: pa.Table, qi: list[str]) -> list[int]:
    """Class sizes by a pyarrow group-by: the independent count."""
    return table.group_by(qi).aggregate([([], "count_all")]).column("count_all").to_pylist()


def _run(argv: list[str]) -> int:
    rc = fastpriv.cli.main(argv)
    return 0 if rc is None else rc


def test_audit_without_sensitive(adult, tmp_path, capsys):
    j = tmp_path / "audit.json"
    rc = _run(["audit", ADULT, "--qi", *QI, "--min-size", "5", "--json", str(j)])
    sizes = _class_sizes(adult, QI)
    d = json.loads(j.read_text())
    assert rc == 1                                   # k = 1 < 5: the verdict fails
    assert d["classes"]["k"] == min(sizes) == 1
    assert d["classes"]["n_classes"] == len(sizes)
    assert d["classes"]["n_records"] == adult.num_rows == 30162
    assert d["classes"]["singleton_classes"] == sum(1 for s in sizes if s == 1)
    assert d["risk"]["audit"]["prosecutor_max"] == 1.0
    assert d["risk"]["audit"]["sample_uniques"] == sum(1 for s in sizes if s == 1)
    assert d["verdict"]["violated"] == ["k_anonymity", "risk"]
    out = capsys.readouterr().out
    # the printed remedy names no sensitive column, and runs as printed
    remedy = next(line for line in out.splitlines() if line.startswith("To fix: "))
    argv = remedy[len("To fix: fastpriv "):].split()
    assert "--sensitive" not in argv
    argv[argv.index("-o") + 1] = str(tmp_path / "fixed.parquet")
    assert _run(argv) == 0
    assert _run(["audit", str(tmp_path / "fixed.parquet"), "--qi", *QI]) == 0
    assert min(_class_sizes(pq.read_table(tmp_path / "fixed.parquet"), QI)) >= 5


def test_audit_needs_qi_without_sensitive(capsys):
    assert _run(["audit", ADULT, "--group", "sex"]) == 2
    assert "--qi" in capsys.readouterr().err


def test_risk_only_audit_with_population(adult, tmp_path):
    j = tmp_path / "risk.json"
    rc = _run(["audit", ADULT, "--qi", "sex", "age", "race", "--max-risk", "0.5",
               "--population", "250000000", "--json", str(j)])
    d = json.loads(j.read_text())
    sizes = _class_sizes(adult, ["sex", "age", "race"])
    assert d["classes"]["k"] == min(sizes)
    assert d["risk"]["audit"]["prosecutor_max"] == pytest.approx(1 / min(sizes))
    assert rc == (0 if 1 / min(sizes) <= 0.5 and min(sizes) >= 5 else 1)
    assert d["risk"]["audit"]["params"]["population_size"] == 250_000_000


@pytest.mark.parametrize("utility", ["loss", "discernibility"])
@pytest.mark.parametrize("objective", ["minimal", "optimal"])
@pytest.mark.parametrize("suppression", [0.0, 0.02])
def test_arx_lattice_from_cli(adult, tmp_path, utility, objective, suppression):
    """5-anonymous releases of ARX's set-up: the node of the Python search, audited after."""
    out, j = tmp_path / "release.parquet", tmp_path / "summary.json"
    rc = _run(["anonymize", ADULT, "--method", "lattice", "--qi", *QI, "--min-size", "5",
               "--hierarchies", ARX_DIR, "--utility", utility, "--objective", objective,
               "--suppression", str(suppression), "-o", str(out), "--json", str(j)])
    assert rc == 0
    payload = json.loads(j.read_text())
    res = lattice_search(adult, qi=QI, hierarchies=ARX_DIR, min_size=5,
                         suppression=suppression, utility=utility, objective=objective,
                         materialize=False)
    assert tuple(payload["node"]) == res.best
    assert payload["n_suppressed"] <= int(suppression * adult.num_rows)
    release = pq.read_table(out)
    assert release.num_rows + payload["n_suppressed"] == adult.num_rows
    assert min(_class_sizes(release, QI)) >= 5
    # the written release passes the audit of ARX's question, with no sensitive column
    assert _run(["audit", str(out), "--qi", *QI, "--min-size", "5"]) == 0


def test_optimal_no_worse_than_minimal(adult):
    """The global optimum (ARX's question) scores at most the best minimal node."""
    for suppression in (0.0, 0.02):
        kw = dict(qi=QI, hierarchies=ARX_DIR, min_size=5, suppression=suppression,
                  utility="loss", materialize=False)
        opt = lattice_search(adult, objective="optimal", **kw)
        mini = lattice_search(adult, objective="minimal", **kw)
        assert opt.scores[opt.best] <= mini.scores[mini.best] + 1e-12


def test_risk_threshold_search_from_cli(tmp_path):
    """ARX's risk criterion: average prosecutor risk ≤ 5 %, audited on the release."""
    out = tmp_path / "release.parquet"
    rc = _run(["anonymize", ADULT, "--method", "lattice", "--qi", *QI, "--hierarchies",
               ARX_DIR, "--max-avg-risk", "0.05", "-o", str(out)])
    assert rc == 0
    release = pq.read_table(out)
    sizes = _class_sizes(release, QI)
    assert len(sizes) / sum(sizes) <= 0.05             # classes / records
    j = tmp_path / "a.json"
    _run(["audit", str(out), "--qi", *QI, "--min-size", "1", "--json", str(j)])
    assert json.loads(j.read_text())["risk"]["audit"]["prosecutor_avg"] == pytest.approx(
        len(sizes) / sum(sizes))


def test_report_without_sensitive(adult, tmp_path):
    html, j = tmp_path / "r.html", tmp_path / "r.json"
    rc = _run(["report", ADULT, "--qi", *QI, "-o", str(html), "--json", str(j)])
    d = json.loads(j.read_text())
    validate(d)
    assert rc == 1
    assert d["parameters"]["sensitive"] is None
    assert d["classes"]["k"] == 1 and d["risk"]["status"] == "ok"
    for name in ("classical", "ck_safety", "skyline", "robustness", "foreground"):
        assert d[name]["status"] == "skipped" and "no sensitive column" in d[name]["reason"]
    page = html.read_text()
    assert "smallest classes, first" in page and "No column is sensitive" in page


def test_weight_counts_people_without_sensitive(adult, tmp_path):
    """A GROUP BY of the table with a count column audits as the table itself."""
    agg = adult.group_by(QI[:3]).aggregate([([], "count_all")]).rename_columns(
        QI[:3] + ["n"])
    pq.write_table(agg, tmp_path / "agg.parquet")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    rc_a = _run(["audit", ADULT, "--qi", *QI[:3], "--json", str(a)])
    rc_b = _run(["audit", str(tmp_path / "agg.parquet"), "--qi", *QI[:3], "--weight", "n",
                 "--json", str(b)])
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert rc_a == rc_b
    for key in ("k", "n_classes", "n_records", "singleton_classes", "class_size"):
        assert da["classes"][key] == db["classes"][key]
    assert int(pc.sum(agg.column("n")).as_py()) == db["classes"]["n_records"]
