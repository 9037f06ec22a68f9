"""Plain output for a data owner (issue 48): rounded numbers with their meaning, groups
named by their range, the most important risk taken from the failing checks first."""

import math
import re

import pytest

from fastpriv import classic
from fastpriv.cli import main
from fastpriv.report import classical_meaning
from fastpriv.report.text import fmt_number


def test_every_classical_model_has_a_meaning():
    rel = classic.as_release(
        __import__("pyarrow").table({"g": [1, 1, 1, 2, 2, 2], "s": list("aabbbc")}),
        group="g", sensitive="s")
    res = classic.audit(rel)
    for key, m in res.models.items():
        assert classical_meaning(key, m["value"]), key


@pytest.mark.parametrize("x,text", [(43, "43"), (0.334985, "0.335"), (12.5992, "12.6"),
                                    (45222.0, "45,222"), (math.inf, "∞")])
def test_numbers_are_rounded_for_people(x, text):
    assert fmt_number(x) == text


def test_demo_speaks_plainly(capsys):
    main(["demo"])
    out = capsys.readouterr().out
    table = out.split("Classical models", 1)[1].split("\n\n", 1)[0]
    assert not re.search(r"\d\.\d{4,}", table)            # no six-digit jargon
    assert "what it means" in table and "age_band=0–19" in out
    assert "age_band=0," not in out
    first = out.split("2. The remedy", 1)[0]
    failing = [f.strip() for f in re.findall(r"FAIL  ([^[]+)\[", first)]
    key = first.split("Most important risk: ", 1)[1].splitlines()[0]
    assert failing == ["t-closeness"]
    assert "differs from the overall mix" in key           # the failing check's sentence


def test_report_without_a_sensitive_column_names_the_exposed_records():
    from fastpriv.datasets import load_adult
    from fastpriv.report import build_report

    rep = build_report(load_adult(), qi=["age", "sex", "race", "education"])
    html = rep.to_html()
    assert html.count("Not run") == 1                     # one note, not one box per model
    assert "No witness" not in html
    first = rep.data["classes"]["smallest"][0]
    assert ", ".join(f"{k}={v}" for k, v in first["values"].items()) in html
    assert "records are unique on the quasi-identifiers" in html
    values = rep.data["risk"]["chart"]["values"]
    assert values == sorted(values, reverse=True)           # the chart's longest bar first


def test_anonymize_says_the_optimized_measure_on_stdout(tmp_path, capsys):
    """--utility loss --objective optimal: the optimized loss on stdout, not discernibility
    alone; no number in scientific notation."""
    import json

    out = tmp_path / "r.json"
    assert main(["anonymize", "adult", "--qi", "age", "sex", "race", "--min-size", "5",
                 "--utility", "loss", "--objective", "optimal", "--suppression", "0.02",
                 "-o", str(tmp_path / "r.parquet"), "--json", str(out)]) == 0
    stdout = capsys.readouterr().out
    opt = json.loads(out.read_text())["optimum"]
    assert f"loss = {fmt_number(opt['value'])}" in stdout
    assert "the best of every satisfying node" in stdout
    assert not re.search(r"\de[+-]\d", stdout)
