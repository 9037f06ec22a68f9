"""Every public function's result follows one protocol (fastpriv.results).

A result that is not a plain number, flag, array or table is a frozen dataclass deriving from
``fastpriv.results.Result`` with ``.value``, ``.params``, ``.witness`` (None or a
``fastpriv.results.Witness``), a JSON-safe ``.to_dict()``, a non-empty ``.summary()`` and
value equality. ``CALLS`` runs every public function of the model modules once on a small
input; ``test_every_public_function_is_called`` makes sure none is forgotten.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fastpriv as fp
from fastpriv import (
    anonymize,
    ck_safety,
    classic,
    foreground,
    foreground_fold,
    metrics,
    pushdown,
    risk,
    robustness,
    robustness_fold,
    skyline,
)
from fastpriv.results import Result, Witness

GROUPS = [["flu", "flu", "cold", "hiv"], ["cold", "flu", "mumps"], ["hiv", "hiv", "cold"]]
TABLE = pa.table({
    "age": [30, 30, 40, 40, 50, 50, 60, 60, 30, 40],
    "sex": ["F", "M", "F", "M", "F", "M", "F", "M", "F", "M"],
    "g": [0, 0, 1, 1, 2, 2, 3, 3, 0, 1],
    "disease": ["flu", "cold", "flu", "hiv", "cold", "cold", "flu", "hiv", "hiv", "flu"],
})


def _rel():
    return fp.Release.from_groups(GROUPS)


#: module -> {function name: call}. A function returning a plain value is listed too.
CALLS = {
    classic: {
        "k_anonymity": lambda: classic.k_anonymity(_rel()),
        "alpha_k_anonymity": lambda: classic.alpha_k_anonymity(_rel()),
        "l_diversity": lambda: classic.l_diversity(_rel()),
        "entropy_l_diversity": lambda: classic.entropy_l_diversity(_rel()),
        "recursive_cl_diversity": lambda: classic.recursive_cl_diversity(_rel(), l=2),
        "t_closeness": lambda: classic.t_closeness(_rel()),
        "beta_likeness": lambda: classic.beta_likeness(_rel()),
        "delta_disclosure": lambda: classic.delta_disclosure(_rel()),
        "per_group": lambda: classic.per_group(_rel(), "t_closeness"),
        "violations": lambda: classic.violations(_rel(), "l_diversity", 3),
        "audit": lambda: classic.audit(TABLE, sensitive="disease", group="g"),
    },
    ck_safety: {
        "saturation_k": lambda: ck_safety.saturation_k(_rel()),
        "max_disclosure": lambda: ck_safety.max_disclosure(_rel(), k=2),
        "disclosure_curve": lambda: ck_safety.disclosure_curve(_rel(), k_max=3),
        "is_safe": lambda: ck_safety.is_safe(_rel(), c=0.9, k=1),
        "max_safe_k": lambda: ck_safety.max_safe_k(_rel(), c=0.9),
        "audit": lambda: ck_safety.audit(TABLE, sensitive="disease", qi=["age", "sex"], k=2),
    },
    risk: {
        "audit": lambda: risk.audit(TABLE, qi=["age", "sex"]),
        "class_counts": lambda: risk.class_counts(TABLE, qi=["age", "sex"]),
        "match_counts": lambda: risk.match_counts(
            pa.table({"age": [30, 40, 50], "n": [2, None, 1], "people": [3, 1, 1]}),
            qi=["age"], count="n", population_count="people"),
        "combinations": lambda: risk.combinations(TABLE, qi=["age", "sex", "disease"], max_set_size=2),
        "verdict": lambda: risk.verdict(risk.audit(TABLE, qi=["age", "sex"]), max_risk=0.5),
        "population_uniques": lambda: risk.population_uniques(
            np.array([1, 2]), np.array([3, 2]), 1000.0),
        "population_unique_estimate": lambda: risk.population_unique_estimate(
            np.array([1, 2]), np.array([3, 2]), 1000.0),
    },
}

QI = ["age", "sex"]
ROWS = {"qi": QI, "sensitive": "disease", "group": "g"}


def _fg_groups():
    from tests.spec_vectors import vectors_by_id

    return vectors_by_id("foreground.jsonl")["foreground-example2"]["input"]["groups"]


CALLS[robustness] = {
    "posterior": lambda: robustness.posterior([0.9, 0.2, 0.2, 0.1], 1),
    "posterior_batch": lambda: robustness.posterior_batch(
        np.array([0.9, 0.2, 0.5, 0.5]), np.array([0, 2, 4]), np.array([1, 1])),
    "posterior_multivalued": lambda: robustness.posterior_multivalued(
        [{"a": 0.5, "b": 0.5}, {"a": 0.2, "b": 0.8}], ["a", "b"]),
    "delta_ceil": lambda: robustness.delta_ceil(10, 2, 0.3),
    "min_group_size": lambda: robustness.min_group_size(0.1, 2, 0.3),
    "delta_check": lambda: robustness.delta_check([0.2, 0.3, 0.25], 2),
    "audit": lambda: robustness.audit(TABLE, r=2, **ROWS),
}
CALLS[foreground] = {
    "fit_global_distribution": lambda: foreground.fit_global_distribution(_fg_groups(), 2),
    "mine": lambda: foreground.mine(TABLE, min_support=1, **ROWS),
    "attack": lambda: foreground.attack(
        fp.Release.from_table(TABLE, **ROWS), qi=QI, r=2, min_support=1),
}

SKY = {"*": [(1, 1, 1, 0.9), (2, 1, 1, 0.95)]}
CALLS[skyline] = {
    "breach_probability": lambda: skyline.breach_probability(_rel(), sigma="flu", l=1, k=1, m=1),
    "dp_breach_probability": lambda: skyline.dp_breach_probability(
        _rel(), sigma="flu", l=1, k=1, m=1),
    "check": lambda: skyline.check(TABLE, skylines=SKY, sensitive="disease", group="g"),
    "knowledge_skyline": lambda: skyline.knowledge_skyline(_rel(), sigma="flu", c=0.9),
    "knowledge_skylines": lambda: skyline.knowledge_skylines(_rel(), c=0.9),
    "knowledge_probability": lambda: skyline.knowledge_probability(
        _rel(), sigma="flu", target=0, x=["cold"]),
    "forget_indexes": lambda: skyline.forget_indexes(_rel()),
}


def _rows_of(table: pa.Table, group: list) -> pa.Table:
    cols = ["age", "sex", *group, "disease"]
    counted = table.group_by(cols).aggregate([([], "count_all")])
    return pushdown.finish_row_counts(counted, qi=["age", "sex"], group=group,
                                      sensitive="disease", count="count_all")


CALLS[robustness_fold] = {
    "audit_part": lambda: robustness_fold.audit_part(
        _rows_of(TABLE, ["g"]), qi=["age", "sex"], group=["g"], sensitive="disease",
        count="count_all", r=2, knowledge=robustness_fold.derive_knowledge(
            _rows_of(TABLE, []), qi=["age", "sex"], sensitive="disease", count="count_all",
            min_support=1)),
}


def _foreground_fold():
    fold = foreground_fold.prepare(lambda: _rows_of(TABLE, []), qi=["age", "sex"], group="g",
                                   sensitive="disease", count="count_all", r=2, min_support=1)
    rows = _rows_of(TABLE, ["g"])
    mined = fold.solve(foreground_fold.systems_part(rows, **fold.systems_args()))
    return fold.finish(foreground_fold.attack_part(rows, **fold.attack_args(mined)), mined)


CALLS[foreground_fold] = {"attack_part": _foreground_fold}
#: public helpers that are not model calls, with the reason they return no result object
BUILDING_BLOCKS = {
    skyline: {"combine_row": "Theorem 2's combine of one row of statistics (numbers in, out)",
              "normalize_skylines": "input normalization shared with skyline_anonymize",
              "prepare": "builds SigmaTables, a prepared input for repeated evaluation"},
    robustness_fold: {"derive_knowledge": "pass 1 of the r-robustness fold: a Knowledge "
                                          "(tested in tests/test_robustness_fold.py)",
                      "prepare": "pass 1 and the keyword arguments of every part (a dict), "
                                 "shared by the engines' robustness_audit"},
    foreground_fold: {"prepare": "pass 1 of the foreground fold: the driver's ForegroundFold "
                                 "(tested in tests/test_foreground_fold.py)",
                      "systems_part": "pass 2: a SystemsPart, the packed systems of a part "
                                      "(merged and solved by ForegroundFold.solve)",
                      "block_summary": "a block of systems' counts and work for the driver "
                                       "(tested in tests/test_foreground_fold.py)",
                      "block_solution": "a block of systems solved where it lives: the "
                                        "solver's arrays (tests/test_foreground_fold.py)"},
    ck_safety: {"needed_groups": "the groups (c,k)-safety's fold keeps (folds.CkState): "
                                 "group ids out, tested in tests/test_engine_folds.py"},
}
ADULT_QI = ["age", "sex", "race"]


def _adult():
    return fp.datasets.load_adult(ADULT_QI + ["workclass", "occupation"])


CALLS[anonymize] = {
    "anatomy": lambda: anonymize.anatomy(_adult(), sensitive="occupation", l=3),
    "mondrian": lambda: anonymize.mondrian(_adult(), qi=ADULT_QI, sensitive="occupation",
                                           min_size=10, l=3),
    "skyline_anonymize": lambda: anonymize.skyline_anonymize(
        _adult(), qi=ADULT_QI, sensitive="occupation", skylines={"*": [(1, 1, 1, 0.9)]}),
    "art": lambda: anonymize.art(_adult().slice(0, 3000), qi=ADULT_QI, sensitive="workclass",
                                 r=4),
    "release_paths": lambda: anonymize.release_paths("out.parquet", bucketization=True),
    "lattice_search": lambda: anonymize.lattice_search(
        _adult(), qi=ADULT_QI, sensitive="occupation", min_size=5, l=2),
    "minimal_ck_safe": lambda: anonymize.minimal_ck_safe(
        _adult(), qi=ADULT_QI, sensitive="occupation", c=0.9, k=1),
    "release_out_of_core": lambda: anonymize.release_out_of_core(
        _adult(), output=Path(tempfile.mkdtemp()) / "release.parquet", method="mondrian",
        qi=ADULT_QI, sensitive="occupation", min_size=10, l=3),
}
CALLS[metrics] = {
    "query_error": lambda: metrics.query_error(
        _adult(), anonymize.mondrian(_adult(), qi=ADULT_QI, sensitive="occupation",
                                     min_size=10), n_queries=200),
    "discernibility": lambda: metrics.discernibility(_rel()),
    "average_group_size": lambda: metrics.average_group_size(_rel(), min_size=2),
    "average_delta": lambda: metrics.average_delta(np.array([0.1, 0.2, 0.3]),
                                                   np.array([0, 0, 1])),
}

PLAIN = (bool, int, float, Fraction, str, type(None), np.ndarray, np.generic, pa.Table)


def _public_functions(module) -> set[str]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    return {n for n in names
            if inspect.isfunction(getattr(module, n, None))
            and getattr(module, n).__module__.startswith(module.__name__)}


@pytest.mark.parametrize("module", list(CALLS), ids=lambda m: m.__name__)
def test_every_public_function_is_called(module):
    missing = _public_functions(module) - set(CALLS[module]) - set(
        BUILDING_BLOCKS.get(module, {}))
    assert not missing, f"{module.__name__}: add {sorted(missing)} to CALLS"


def check_protocol(res) -> None:
    """Assert that ``res`` follows the result protocol (see the module docstring)."""
    cls = type(res)
    assert isinstance(res, Result), f"{cls.__name__} does not derive from Result"
    assert dataclasses.is_dataclass(res) and cls.__dataclass_params__.frozen, cls.__name__
    assert not cls.__dataclass_params__.eq, f"{cls.__name__}: declare @dataclass(eq=False)"
    for attr in ("value", "params", "witness"):
        assert hasattr(res, attr), f"{cls.__name__} has no .{attr}"
    assert isinstance(res.params, dict), f"{cls.__name__}.params is not a dict"
    json.dumps(res.params)
    w = res.witness
    if w is not None:
        assert isinstance(w, Witness), f"{cls.__name__}.witness is a {type(w).__name__}"
        json.dumps(w.to_dict())
        assert isinstance(w.summary(), str) and w.summary()
        assert w == copy.deepcopy(w)
    json.dumps(res.to_dict(), allow_nan=False)
    text = res.summary()
    assert isinstance(text, str) and text.strip()
    assert res == res and res == copy.deepcopy(res) and not (res != copy.deepcopy(res))


def _results(x):
    if isinstance(x, PLAIN):
        return []
    if isinstance(x, (list, tuple)):
        return [r for v in x for r in _results(v)]
    if isinstance(x, dict) and not isinstance(x, Result):
        return [r for v in x.values() for r in _results(v)]
    return [x]


@pytest.mark.parametrize(("module", "name"),
                         [(m, n) for m, calls in CALLS.items() for n in calls],
                         ids=[f"{m.__name__}.{n}" for m, calls in CALLS.items() for n in calls])
def test_result_protocol(module, name):
    out = CALLS[module][name]()
    for res in _results(out):
        check_protocol(res)


def test_equality_compares_values_not_identity():
    a = classic.violations(_rel(), "l_diversity", 3)
    b = classic.violations(_rel(), "l_diversity", 3)
    c = classic.violations(_rel(), "l_diversity", 4)
    assert a == b and a is not b
    assert a != c
