"""The model registry and the models declared through it alone (k-map, δ-presence).

k-map and δ-presence were added by touching their model module (fastpriv/population.py),
their registry entry (fastpriv/registry.py), docs/api.md (generated table) and this file:
the CLI flags, the verdict checks and the report sections come from the registry.
"""

from __future__ import annotations

import builtins
import collections
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv
import fastpriv.cli
from fastpriv import population, registry
from fastpriv.errors import InputError
from fastpriv.report import build_report
from fastpriv.report.schema import validate
from fastpriv.results import Result

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
ARX_ADULT = os.path.join(os.path.dirname(__file__), "data", "arx", "adult.csv.gz")


# ------------------------------------------------------------------ oracle
def _oracle(sample: list[tuple], pop: list[tuple]) -> tuple[int, float, float]:
    """k-map, δ_max, δ_min by counting tuples, straight from the definitions."""
    f, big_f = collections.Counter(sample), collections.Counter(pop)
    k_map = min(big_f[x] for x in f)
    deltas = [f.get(x, 0) / big_f[x] for x in big_f]
    return k_map, max(deltas), min(deltas)


@st.composite
def _tables(draw):
    n_pop = draw(st.integers(1, 40))
    pop = [(draw(st.integers(0, 3)), draw(st.sampled_from("ab"))) for _ in range(n_pop)]
    idx = draw(st.lists(st.integers(0, n_pop - 1), min_size=1, max_size=n_pop, unique=True))
    return [pop[i] for i in idx], pop


def _table(rows: list[tuple]) -> pa.Table:
    return pa.table({"age": [r[0] for r in rows], "sex": [r[1] for r in rows]})


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_tables())
def test_k_map_and_delta_match_the_oracle(tables):
    sample, pop = tables
    k_map, d_max, d_min = _oracle(sample, pop)
    km = population.k_map(_table(sample), qi=["age", "sex"], population=_table(pop))
    dp = population.delta_presence(_table(sample), qi=["age", "sex"], population=_table(pop))
    assert km.value == k_map
    assert dp.value == pytest.approx(d_max, abs=1e-15)
    assert dp.delta_min == pytest.approx(d_min, abs=1e-15)
    w = km.witness                               # the witness class attains the value
    key = (w.qi_values["age"], w.qi_values["sex"])
    assert collections.Counter(pop)[key] == k_map == w.population_size
    assert collections.Counter(sample)[key] == w.size
    w = dp.witness
    key = (w.qi_values["age"], w.qi_values["sex"])
    assert collections.Counter(sample)[key] / collections.Counter(pop)[key] == \
        pytest.approx(d_max)
    for res in (km, dp):
        assert json.loads(json.dumps(res.to_dict()))["value"] == res.value
        assert res.summary() and res.params["n_population"] == len(pop)


def test_weight_is_multiplicity():
    sample = _table([(1, "a"), (1, "a"), (2, "b")])
    agg = pa.table({"age": [1, 2], "sex": ["a", "b"], "n": [2, 1]})
    pop = _table([(1, "a")] * 5 + [(2, "b")] * 4)
    for fn in (population.k_map, population.delta_presence):
        a = fn(sample, qi=["age", "sex"], population=pop)
        b = fn(agg, qi=["age", "sex"], population=pop, weight="n")
        assert a.value == b.value


def test_population_must_hold_the_sample_and_be_a_table():
    sample, pop = _table([(1, "a"), (1, "a")]), _table([(1, "a")])
    with pytest.raises(InputError, match="population must contain the data"):
        population.k_map(sample, qi=["age", "sex"], population=pop)
    with pytest.raises(InputError, match="population table"):
        population.k_map(sample, qi=["age", "sex"], population=1000)


# ------------------------------------------------------------------ the registry's consumers
def test_docs_model_table_is_generated_from_the_registry():
    text = DOC.read_text(encoding="utf-8")
    assert registry.markdown_table() in text, \
        "docs/api.md is stale: paste `python -m fastpriv.registry` into its model table"


@pytest.mark.parametrize("m", registry.MODELS, ids=[m.name for m in registry.MODELS])
def test_every_declaration_resolves(m):
    assert callable(registry.load(m.call))
    for k in m.kernels:
        __import__(f"fastpriv._kernels.{k}")
    assert set(m.engines) <= set(registry.ENGINES) and m.reads in ("groups", "rows",
                                                                   "classes")
    assert m.warmup in registry.WARMUP_GROUPS
    if m.thresholds:
        assert callable(m.load_checks())


@pytest.mark.parametrize("command", ["audit", "report"])
def test_cli_flags_come_from_the_registry(command):
    out = subprocess.run([sys.executable, "-m", "fastpriv", command, "--help"],
                         capture_output=True, text=True, check=True).stdout
    for m in registry.MODELS:
        for t in m.thresholds:
            assert t.flag in out


def test_model_lookup_names_the_known_ones():
    with pytest.raises(LookupError, match="k_map"):
        registry.model("nope")


# ------------------------------------------------------------------ result and needs are read
@pytest.mark.parametrize("m", registry.MODELS, ids=[m.name for m in registry.MODELS])
def test_declared_result_is_the_return_type_of_call(m):
    """``result`` names what ``call`` returns: its return annotation, resolved to a type."""
    fn = registry.load(m.call)
    ann = inspect.signature(fn).return_annotation
    name = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
    assert name == m.result, f"{m.call} returns {name}, the registry says {m.result}"
    typ = getattr(builtins, m.result, None) or getattr(inspect.getmodule(fn), m.result)
    assert isinstance(typ, type)
    if typ not in (int, float):
        assert issubclass(typ, Result), f"{m.result} does not follow the result protocol"


def test_class_models_return_their_declared_result():
    sample = _table([(1, "a"), (1, "a"), (2, "b")])
    pop = _table([(1, "a")] * 3 + [(2, "b")] * 2 + [(3, "a")])
    for name in ("risk", "k_map", "delta_presence"):
        m = registry.model(name)
        kw = {"population": pop} if "population_table" in m.needs else {}
        res = registry.load(m.call)(sample, qi=["age", "sex"], **kw)
        assert type(res).__name__ == m.result, name


@pytest.mark.parametrize("name", ["k_map", "delta_presence"])
def test_verdict_hooks_skip_by_the_declared_needs(name):
    m = registry.model(name)
    assert set(m.needs) == {"qi_classes", "population_table"} <= set(population.NEEDS)
    classes = fastpriv.risk.class_counts(_table([(1, "a"), (2, "b")]), qi=["age", "sex"])
    pop = _table([(1, "a"), (2, "b"), (2, "b")])
    thresholds = {"min_k_map": 1, "max_delta": 1.0}
    cases = [(None, pop, ["the QI classes (--qi)"]),
             (classes, None, ["a population table (--population TABLE)"]),
             (classes, 1000, ["a population table (--population TABLE)"]),
             (None, None, ["the QI classes (--qi)",
                           "a population table (--population TABLE)"])]
    for cls_, pop_, missing in cases:
        assert population.missing_needs(name, cls_, pop_) == missing
        out = m.load_checks()(cls_, population=pop_, thresholds=thresholds)
        assert out["section"] == {"status": "skipped",
                                  "reason": f"{m.title} needs {' and '.join(missing)}"}
        assert [c["status"] for c in out["checks"]] == ["skipped"]
    assert population.missing_needs(name, classes, pop) == []
    out = m.load_checks()(classes, population=pop, thresholds=thresholds)
    assert out["section"]["status"] == "ok" and out["checks"][0]["satisfied"] is True


def test_verdict_hooks_read_needs_from_the_declaration(monkeypatch):
    """A model declaring fewer needs is run without them; an unknown need is a bug."""
    import dataclasses

    classes = fastpriv.risk.class_counts(_table([(1, "a")]), qi=["age", "sex"])
    pop = _table([(1, "a"), (1, "a")])
    declared = {m.name: m for m in registry.MODELS}
    monkeypatch.setattr(registry, "MODELS", tuple(
        dataclasses.replace(m, needs=("qi_classes", "a_crystal_ball"))
        if m.name == "k_map" else m for m in declared.values()))
    with pytest.raises(LookupError, match="a_crystal_ball"):
        population.k_map_checks(classes, population=pop, thresholds={"min_k_map": 2})
    monkeypatch.setattr(registry, "MODELS", tuple(
        dataclasses.replace(m, needs=("population_table",))
        if m.name == "k_map" else m for m in declared.values()))
    assert population.missing_needs("k_map", None, pop) == []
    assert population.missing_needs("k_map", classes, None) == [
        "a population table (--population TABLE)"]


# ------------------------------------------------------------------ end to end
def test_verdict_and_report_sections(tmp_path):
    adult = fastpriv.read_csv(ARX_ADULT)
    qi = ["sex", "race"]
    sample = adult.slice(0, 3000)
    rep = build_report(sample, qi=qi, population=adult,
                       thresholds={"min_k_map": 10, "max_delta": 0.5})
    d = rep.to_dict()
    validate(d)
    k_map, d_max, _ = _oracle(list(zip(*[sample.column(c).to_pylist() for c in qi],
                                       strict=True)),
                              list(zip(*[adult.column(c).to_pylist() for c in qi],
                                       strict=True)))
    assert d["models"]["k_map"]["value"] == k_map
    assert d["models"]["delta_presence"]["value"] == pytest.approx(d_max)
    by_id = {c["id"]: c for c in d["verdict"]["checks"]}
    assert by_id["k_map"]["satisfied"] is (k_map >= 10)
    assert by_id["delta_presence"]["satisfied"] is (d_max <= 0.5)
    # without a threshold the model is not run at all
    assert "models" not in build_report(sample, qi=qi, population=adult).to_dict()


def test_cli_k_map_exit_status(tmp_path):
    adult = fastpriv.read_csv(ARX_ADULT)
    pop = tmp_path / "population.csv"
    pacsv.write_csv(adult.select(["sex", "race"]), pop)
    k_map, _, _ = _oracle(*[list(zip(adult.column("sex").to_pylist(),
                                     adult.column("race").to_pylist(), strict=True))] * 2)
    j = tmp_path / "a.json"
    base = ["audit", ARX_ADULT, "--qi", "sex", "race", "--min-size", "1", "--max-risk", "1",
            "--population", str(pop), "--json", str(j)]
    assert fastpriv.cli.main(base + ["--min-k-map", str(k_map)]) == 0
    assert json.loads(j.read_text())["models"]["k_map"]["value"] == k_map
    assert fastpriv.cli.main(base + ["--min-k-map", str(k_map + 1), "--overwrite"]) == 1
    # with a sensitive column, on the release built from --qi
    assert fastpriv.cli.main(["audit", ARX_ADULT, "--sensitive", "occupation", "--qi", "sex",
                              "race", "--population", str(pop), "--min-k-map",
                              str(k_map + 1), "--json", str(j), "--overwrite"]) == 1
    assert json.loads(j.read_text())["models"]["k_map"]["value"] == k_map


def test_cli_population_flag_refuses_nonsense(capsys):
    with pytest.raises(SystemExit) as e:
        fastpriv.cli.main(["audit", ARX_ADULT, "--qi", "sex", "--population", "nope.csv"])
    assert e.value.code == 2
    assert "--population" in capsys.readouterr().err


# ------------------------------------------------------------------ the engine table
#: The test comparing an engine with the in-memory answer, by what the model reads. A model
#: of the groups reads only the Release, so "the engine's Release equals Release.from_table"
#: proves every such model; the row-level models read the distinct rows with their count;
#: risk reads the QI class counts.
PROOFS = {
    "groups": {
        "stream": "tests/test_engines_equal.py::test_dask_and_streaming_equal_in_memory",
        "dask": "tests/test_distributed.py::test_counts_on_the_cluster_equal_single_machine",
        "spark": "tests/test_spark.py::test_random_tables_on_spark_equal_in_memory",
        "duckdb": "tests/test_pushdown.py::test_duckdb_pushdown_equals_in_memory",
    },
    "rows": {
        "dask": "tests/test_engines_rowlevel.py::"
                "test_random_tables_duckdb_and_dask_equal_in_memory",
        "duckdb": "tests/test_engines_rowlevel.py::"
                  "test_random_tables_duckdb_and_dask_equal_in_memory",
        "spark": "tests/test_engines_rowlevel.py::test_random_tables_on_spark_equal_in_memory",
    },
    "classes": {
        "stream": "tests/test_risk.py::"
                  "test_from_batches_and_count_accumulator_give_the_table_audit",
        "dask": "tests/test_engines_classes.py::"
                "test_random_tables_duckdb_and_dask_equal_in_memory",
        "duckdb": "tests/test_engines_classes.py::"
                  "test_random_tables_duckdb_and_dask_equal_in_memory",
        "spark": "tests/test_engines_classes.py::test_spark_classes_equal_in_memory",
    },
}


#: Proofs of one model on one engine where the tests of what it reads do not cover it.
MODEL_PROOFS = {
    "robustness": {"stream": "tests/test_stream_engine.py::"
                             "test_random_tables_stream_row_counts_equal_in_memory"},
    "foreground": {"stream": "tests/test_stream_engine.py::"
                             "test_random_tables_stream_row_counts_equal_in_memory"},
    "k_map": {"stream": "tests/test_stream_engine.py::"
                        "test_random_tables_stream_class_counts_equal_in_memory",
              **{e: "tests/test_population_folds.py::"
                    "test_duckdb_and_dask_population_folds_equal_in_memory"
                 for e in ("duckdb", "dask")},
              "spark": "tests/test_population_folds.py::"
                       "test_spark_population_fold_equals_in_memory"},
    "delta_presence": {"stream": "tests/test_stream_engine.py::"
                                 "test_random_tables_stream_class_counts_equal_in_memory",
                       **{e: "tests/test_population_folds.py::"
                             "test_duckdb_and_dask_population_folds_equal_in_memory"
                          for e in ("duckdb", "dask")},
                       "spark": "tests/test_population_folds.py::"
                                "test_spark_population_fold_equals_in_memory"},
    "hierarchical_t": {
        "stream": "tests/test_engine_folds.py::test_declared_model_folds_on_duckdb_and_streams",
        "duckdb": "tests/test_engine_folds.py::test_declared_model_folds_on_duckdb_and_streams",
        "dask": "tests/test_engine_folds.py::test_declared_model_folds_on_dask",
        "spark": "tests/test_engine_folds.py::test_declared_model_folds_on_spark_executors"},
}


def _test_exists(node: str) -> bool:
    import ast

    path, name = node.split("::")
    tree = ast.parse((Path(__file__).resolve().parents[1] / path).read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


@pytest.mark.parametrize("m", registry.MODELS, ids=[m.name for m in registry.MODELS])
def test_every_engine_claim_names_its_proof(m):
    for engine in m.engines:
        if engine == "memory":             # the reference itself (the oracles' tests)
            continue
        node = MODEL_PROOFS.get(m.name, {}).get(engine) or PROOFS[m.reads].get(engine)
        assert node is not None, f"{m.name} on {engine}: no test proves it"
        assert _test_exists(node), node


#: The test comparing each engine's release with the in-memory release.
ANONYMIZE_PROOFS = {
    "stream": "tests/test_out_of_core.py::test_inputs_of_every_form_and_order_give_the_same_bytes",
    "dask": "tests/test_engines_anonymize.py::test_random_tables_every_engine_equals_memory",
    "duckdb": "tests/test_engines_anonymize.py::test_random_tables_every_engine_equals_memory",
    "spark": "tests/test_engines_anonymize.py::test_spark_release_equals_in_memory",
}


def test_every_release_engine_names_its_proof():
    for engine in registry.ANONYMIZE_ENGINES:
        if engine == "memory":
            continue
        node = ANONYMIZE_PROOFS.get(engine)
        assert node is not None, f"release on {engine}: no test proves it"
        assert _test_exists(node), node


def test_readme_engine_table_is_generated_from_the_registry():
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- registry:engines -->\n")[1].split("<!-- /registry:engines -->")[0]
    assert block == registry.engine_table(), \
        "README's engine table is stale: paste `python -m fastpriv.registry engines`"
