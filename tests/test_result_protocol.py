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
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

import fastpriv as fp
from fastpriv import ck_safety, classic, risk
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
        "combinations": lambda: risk.combinations(TABLE, qi=["age", "sex", "disease"], m=2),
        "verdict": lambda: risk.verdict(risk.audit(TABLE, qi=["age", "sex"]), max_risk=0.5),
        "population_uniques": lambda: risk.population_uniques(
            np.array([1, 2]), np.array([3, 2]), 1000.0),
    },
}

PLAIN = (bool, int, float, Fraction, str, type(None), np.ndarray, np.generic, pa.Table)


def _public_functions(module) -> set[str]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    return {n for n in names
            if inspect.isfunction(getattr(module, n, None))
            and getattr(module, n).__module__ == module.__name__}


@pytest.mark.parametrize("module", list(CALLS), ids=lambda m: m.__name__)
def test_every_public_function_is_called(module):
    missing = _public_functions(module) - set(CALLS[module])
    assert not missing, f"{module.__name__}: add {sorted(missing)} to CALLS"


def check_protocol(res) -> None:
    """Assert that ``res`` follows the result protocol (see the module docstring)."""
    cls = type(res)
    assert isinstance(res, Result), f"{cls.__name__} does not derive from Result"
    assert dataclasses.is_dataclass(res) and cls.__dataclass_params__.frozen, cls.__name__
    assert cls.__eq__ is Result.__eq__, f"{cls.__name__}: declare @dataclass(eq=False)"
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
