"""k-map and δ-presence: privacy against a population table, as verdict models.

Both compare the classes of identical quasi-identifiers of the data (the sample, f_j records
in class j) with the same classes of a population table that holds the sample (F_j people):

* **k-map** (Sweeney 2002; El Emam & Dankar 2008): every record of the sample matches at
  least k people of the population, k = min_j F_j over the sample's classes. Unlike
  k-anonymity, a class may be small in the data if it is large in the population.
* **δ-presence** (Nergiz, Atzori & Clifton 2007): the probability that a person of
  population class j is in the data is δ_j = f_j / F_j; the data is (δ_min, δ_max)-present
  when every δ_j lies in the interval. Classes of the population absent from the data have
  δ = 0, so δ_min > 0 needs every population class in the data. The verdict checks the upper
  bound, δ_max ≤ ``max_delta`` (membership disclosure).

Both read only the QI columns (no sensitive column) and the class counts of
:func:`fastpriv.risk.class_counts`, so a weighted table (``weight=``, a ``GROUP BY`` count)
gives the answer of its expanded rows. They are declared in :mod:`fastpriv.registry`, which
gives ``fastpriv audit`` and ``fastpriv report`` their flags (``--min-k-map``,
``--max-delta``) and the verdict their checks.

Examples
--------
>>> import pyarrow as pa
>>> from fastpriv import population
>>> sample = pa.table({"zip": ["a", "a", "b"]})
>>> pop = pa.table({"zip": ["a"] * 4 + ["b"] * 2 + ["c"] * 3})
>>> population.k_map(sample, qi=["zip"], population=pop).value
2
>>> population.delta_presence(sample, qi=["zip"], population=pop).value
0.5

"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .registry import make_check
from .results import Result, Witness

__all__ = ["k_map", "delta_presence", "KMapResult", "DeltaPresenceResult", "PopulationClass",
           "k_map_checks", "delta_presence_checks", "NEEDS", "missing_needs"]


@dataclass(frozen=True, eq=False)
class PopulationClass(Witness):
    """A class of identical quasi-identifiers: its values, records in the data and people."""

    qi_values: dict
    size: int
    population_size: int

    def to_dict(self) -> dict:
        """JSON-safe dict of the fields."""
        return {"qi_values": {k: _plain(v) for k, v in self.qi_values.items()},
                "size": self.size, "population_size": self.population_size}

    def summary(self) -> str:
        """One sentence naming the class."""
        vals = ", ".join(f"{k}={v!r}" for k, v in self.qi_values.items())
        return (f"The class {vals} has {self.size:,} records in the data and "
                f"{self.population_size:,} people in the population.")


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


@dataclass(frozen=True, eq=False)
class KMapResult(Result):
    """k-map of the data against a population: ``value`` = min_j F_j; witness its class."""

    value: int
    witness: PopulationClass
    params: dict

    def to_dict(self) -> dict:
        """JSON-safe dict: ``value``, ``witness``, ``params``."""
        return {"model": "k_map", "value": self.value, "witness": self.witness.to_dict(),
                "params": self.params}

    def summary(self) -> str:
        """Return the achieved k-map and its class, in plain words."""
        return (f"k-map: every record matches at least {self.value:,} people of the "
                f"population. {self.witness.summary()}")


@dataclass(frozen=True, eq=False)
class DeltaPresenceResult(Result):
    """δ-presence: ``value`` = δ_max = max_j f_j/F_j; ``delta_min``; witness the δ_max class."""

    value: float
    delta_min: float
    witness: PopulationClass
    params: dict

    def to_dict(self) -> dict:
        """JSON-safe dict: ``value`` (δ_max), ``delta_min``, ``witness``, ``params``."""
        return {"model": "delta_presence", "value": self.value, "delta_min": self.delta_min,
                "witness": self.witness.to_dict(), "params": self.params}

    def summary(self) -> str:
        """Return the achieved (δ_min, δ_max) and the most exposed class, in words."""
        return (f"δ-presence: a person of the population is in the data with probability "
                f"between {self.delta_min:.4g} and {self.value:.4g}. "
                f"{self.witness.summary()}")


def _matched(data: Any, qi: Sequence[str] | None, population: Any, weight: str | None,
             nulls: str | None) -> tuple[Any, dict]:
    """Match the data's classes with the population's; their summary and the params.

    The summary is the :class:`~fastpriv.class_histogram.PopulationHistogram` of
    :func:`fastpriv.risk.match_population`, or ``data`` itself when an engine folded it
    (``population`` then left out). A stream of record batches
    (:func:`fastpriv.stream_counts.is_stream`), as the data or the population, is counted
    batch by batch (:func:`fastpriv.stream_counts.class_counts`).
    """
    from . import risk, stream_counts
    from .class_histogram import PopulationHistogram

    if isinstance(data, PopulationHistogram):
        if population is not None or weight is not None or (nulls not in (None, data.nulls)):
            raise InputError("data: a PopulationHistogram was matched with its population "
                             "under its null policy already; leave population=, weight= and "
                             "nulls= out")
        if qi is not None and ([qi] if isinstance(qi, str) else list(qi)) != list(data.qi):
            raise InputError(f"qi: the summary is over {list(data.qi)}, not {list(qi)}")
        if data.n_classes == 0:
            raise InputError("data has no rows (after the null policy and weights of 0)")
        return data, _params(data, weight)
    if population is None or isinstance(population, (int, float)):
        raise InputError("population: give the population table (a table or a path with the "
                         f"QI columns); got {population!r}")
    if stream_counts.is_stream(data):
        sample = stream_counts.class_counts(data, qi=qi, weight=weight,
                                            nulls="error" if nulls is None else nulls)
    else:
        sample = risk.class_counts(data, qi=qi, weight=weight, nulls=nulls)
    if stream_counts.is_stream(population):
        population = stream_counts.class_counts(population, qi=list(sample.qi),
                                                 nulls=sample.nulls)
    pairs = risk.match_population(sample, population).histogram()
    return pairs, _params(pairs, weight)


def _params(pairs: Any, weight: str | None) -> dict:
    return {"qi": list(pairs.qi), "n_records": pairs.n_records,
            "n_population": pairs.n_population, "n_classes": pairs.n_classes,
            "n_population_classes": pairs.n_population_classes, "weight": weight,
            "nulls": pairs.nulls}


def _class(c: dict) -> PopulationClass:
    """Return the witness: a class of the data with its records and people."""
    return PopulationClass(dict(c["qi_values"]), c["size"], c["population_size"])


def k_map(data: Any, *, qi: Sequence[str] | None = None, population: Any = None,
          weight: str | None = None, nulls: str | None = None) -> KMapResult:
    """k-map: the smallest population class matched by a record of the data.

    k = min_j F_j over the sample's classes j (Sweeney 2002; El Emam & Dankar 2008).

    Parameters
    ----------
    data : table-like, path, Release, ClassCounts or PopulationHistogram
        The data (the sample), or its classes already matched with the population where
        the data lives (:class:`~fastpriv.class_histogram.PopulationHistogram`, e.g.
        :func:`fastpriv.spark.population_histogram`; ``population=`` then left out).
    qi : list of str
        Quasi-identifier columns.
    population : table-like, path or stream of record batches, optional
        The population table (required unless ``data`` is a summary); it must hold the
        data (every F_j ≥ f_j). A ``RecordBatchReader`` or an iterator of record batches
        is counted batch by batch (:func:`fastpriv.stream_counts.class_counts`: memory ∝
        its classes), as is a streamed ``data``.
    weight : str, optional
        Multiplicity column of the data (rows standing for several identical records).
    nulls : {"error", "drop", "value"}, optional
        Null policy for the QI columns of both tables (default ``"error"``; class counts
        keep the one they were counted under, as in :func:`fastpriv.risk.audit`);
        ``params["nulls"]`` is the policy used.

    """
    pairs, params = _matched(data, qi, population, weight, nulls)
    k, c = pairs.k_map()
    return KMapResult(k, _class(c), params)


def delta_presence(data: Any, *, qi: Sequence[str] | None = None, population: Any = None,
                   weight: str | None = None,
                   nulls: str | None = None) -> DeltaPresenceResult:
    """δ-presence: δ_j = f_j / F_j, the chance a person of class j is in the data.

    Returns δ_max = max_j δ_j as ``value`` and δ_min (0 when a population class is absent
    from the data) — Nergiz, Atzori & Clifton (2007), Def. 3. Parameters as :func:`k_map`.
    """
    pairs, params = _matched(data, qi, population, weight, nulls)
    d_max, d_min, c = pairs.delta()
    return DeltaPresenceResult(d_max, d_min, _class(c), params)


# ------------------------------------------------------------------ verdict (registry hooks)
#: What a verdict model can need (:attr:`fastpriv.registry.Model.needs`): whether the inputs
#: of the verdict hold it (``have(classes, population)``) and how to give it.
NEEDS: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "qi_classes": (lambda classes, population: classes is not None,
                   "the QI classes (--qi)"),
    "population_table": (lambda classes, population: population is not None
                         and not isinstance(population, numbers.Real),
                         "a population table (--population TABLE)"),
}


def missing_needs(name: str, classes: Any, population: Any) -> list[str]:
    """Return what model ``name`` needs (its declared ``needs``) and the verdict lacks.

    Each entry says how to give it (e.g. ``"a population table (--population TABLE)"``);
    empty when the model can run. A need no entry of :data:`NEEDS` knows is a declaration
    error (LookupError), not bad input.
    """
    from .registry import model

    m = model(name)
    unknown = [n for n in m.needs if n not in NEEDS]
    if unknown:
        raise LookupError(f"model {name!r} declares needs {unknown} that population.NEEDS "
                          f"does not know (known: {sorted(NEEDS)})")
    return [NEEDS[n][1] for n in m.needs if not NEEDS[n][0](classes, population)]


def _verdict(name: str, compute: Any, classes: Any, population: Any, passed: Any,
             required: str, plain: Any) -> dict:
    """Run a population model for the verdict: its section and its one check.

    Skipped, naming what is missing, when the inputs lack what the model declares it needs.
    """
    from .registry import model

    m = model(name)
    missing = missing_needs(name, classes, population)
    if missing:
        reason = f"{m.title} needs {' and '.join(missing)}"
        return {"section": {"status": "skipped", "reason": reason},
                "checks": [make_check(m.name, m.title, m.question, status="skipped",
                                      reason=reason)]}
    res = compute(classes, population=population)
    return {"section": {"status": "ok", "reason": None, **res.to_dict()},
            "checks": [make_check(m.name, m.title, m.question, bool(passed(res.value)),
                                  res.value, required, plain(res.value))]}


def k_map_checks(classes: Any, *, population: Any, thresholds: dict,
                 **_: Any) -> dict:
    """Return the k-map section and check: PASS when k-map ≥ ``min_k_map``."""
    want = thresholds["min_k_map"]
    return _verdict("k_map", k_map, classes, population, lambda v: v >= want,
                    f"k-map ≥ {want}",
                    lambda v: f"The rarest class in the data matches {v:,} people of the "
                              f"population (required: at least {want}).")


def delta_presence_checks(classes: Any, *, population: Any, thresholds: dict,
                          **_: Any) -> dict:
    """Return the δ-presence section and check: PASS when δ_max ≤ ``max_delta``."""
    want = thresholds["max_delta"]
    return _verdict("delta_presence", delta_presence, classes, population,
                    lambda v: v <= want, f"δ ≤ {want:g}",
                    lambda v: f"A person of the most exposed population class is in the data "
                              f"with probability {v:.4g} (allowed: at most {want:g}).")
