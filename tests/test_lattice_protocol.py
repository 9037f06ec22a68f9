"""Lattice results follow the result protocol (fastpriv.results) and the vocabulary."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

import fastpriv.predicates as P
from fastpriv.anonymize import lattice_search, minimal_ck_safe
from fastpriv.anonymize.lattice import (
    ChainSearch,
    GeneralizationLattice,
    LatticeSearch,
    LatticeWitness,
    NodeCheck,
    SearchProgress,
)
from fastpriv.datasets import load_adult
from fastpriv.results import Result, Witness

QI = ["age", "marital_status", "race", "sex"]


def _protocol(r, cls):
    assert isinstance(r, cls) and isinstance(r, Result)
    assert dataclasses.is_dataclass(r) and r.__dataclass_params__.frozen
    assert isinstance(r.params, dict)
    assert r.witness is None or isinstance(r.witness, Witness)
    json.dumps(r.to_dict())
    assert isinstance(r.summary(), str) and r.summary()
    assert r == r and r == copy.deepcopy(r)


def test_lattice_results_follow_the_protocol():
    adult = load_adult(QI + ["occupation"])
    seen = []
    res = lattice_search(adult, qi=QI, sensitive="occupation", min_size=10,
                         suppression=0.01, on_check=seen.append)
    _protocol(res, LatticeSearch)
    assert res.value == len(res.minimal) > 0
    w = res.witness
    assert isinstance(w, LatticeWitness) and w.node == res.best
    assert w.levels == dict(zip(QI, res.best, strict=True))
    assert w.score == res.scores[res.best]
    assert res.params["criterion"] == res.criterion and res.params["suppression"] == 0.01
    assert res.seconds["total"] >= res.seconds["rollup"] >= 0.0
    assert json.loads(json.dumps(res.to_dict()))["value"] == res.value
    _protocol(seen[-1], SearchProgress)
    assert seen[-1].value == seen[-1].n_checked == res.n_checked
    lat = GeneralizationLattice(adult, QI, "occupation")
    chk = lat.check(res.best, P.KAnonymity(10), suppression=0.01)
    _protocol(chk, NodeCheck)
    assert chk.value is True and chk.params["node"] == list(res.best)
    chain = minimal_ck_safe(adult, qi=QI, sensitive="occupation", c=0.6, k=2,
                            method="chain")
    _protocol(chain, ChainSearch)
    assert chain.value == chain.n_checked and chain.witness.node == chain.node


def test_no_node_has_no_witness():
    import pyarrow as pa

    t = pa.table({"a": [1, 2, 3], "s": ["x", "x", "x"]})
    res = lattice_search(t, qi=["a"], sensitive="s", hierarchies={"a": [2, "*"]}, l=2)
    _protocol(res, LatticeSearch)
    assert res.value == 0 and res.witness is None


def test_vocabulary_keywords():
    adult = load_adult(QI + ["occupation"])
    a = lattice_search(adult, qi=QI, sensitive="occupation", c=0.8, k=3,
                       knowledge_kind="negations", materialize=False)
    b = GeneralizationLattice(adult, QI, "occupation").search(
        P.CKSafety(0.8, 3, "negations"), materialize=False)
    assert a.minimal == b.minimal and a.best == b.best
    with pytest.raises(ValueError, match="knowledge_kind"):
        lattice_search(adult, qi=QI, sensitive="occupation", c=0.8, k=3,
                       knowledge_kind="facts")
    with pytest.raises(ValueError, match="needs both c"):
        lattice_search(adult, qi=QI, sensitive="occupation", c=0.8)
    with pytest.raises(ValueError, match="no privacy criterion"):
        lattice_search(adult, qi=QI, sensitive="occupation")
    with pytest.raises(TypeError):
        lattice_search(adult, QI, "occupation", min_size=5)  # keyword-only
