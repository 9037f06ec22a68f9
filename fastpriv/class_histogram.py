"""The class-size histogram: re-identification risk as a fold over QI classes.

Without a population table or sampling weights, every measure of
:func:`fastpriv.risk.audit` — prosecutor, journalist and marketer risk against the sample,
sample uniques, the population-uniqueness models of a population *size* (Pitman, Zayatz,
SNB, Dankar's choice) and the individual risk they imply — depends on the classes only
through the histogram of their sizes (how many classes have f records), and its witness is
the first smallest class in key order. :class:`ClassHistogram` is that summary: built from
complete classes (:meth:`ClassHistogram.from_class_counts`), merged across disjoint sets of
classes by adding counts size by size (:meth:`ClassHistogram.merge`), and read by
``risk.audit`` as it reads the classes themselves. Its size is the number of distinct class
sizes, not the number of classes, so an engine can count the classes where the data lives
and send only this.

With sampling weights each class also has its estimated population size F̂_j = max(Σ
sampling weights, f_j), a float of its own, so the measures that read it (Benedetti–Franconi
individual risk, journalist and marketer risk on F̂) do not fold into a histogram of
(f, F̂) pairs. :class:`SamplingHistogram` keeps, besides the size histogram, the measures
themselves: exact sums (:mod:`fastpriv._exact_sum`), maxima, minima and counts above the
audit's threshold, and the first class whose sampling weights sum to less than its
records. Its size is fixed; parts merge in any order to the bits of the whole table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import check_choice, real_array
from .errors import InputError, InputTypeError
from .results import Result, json_safe

__all__ = ["ClassHistogram", "PopulationHistogram", "SamplingHistogram"]


class _Sizes:
    """n and u of a summary holding class sizes ``size`` and their numbers ``count``."""

    size: np.ndarray
    count: np.ndarray

    @property
    def n_records(self) -> int:
        """n, the number of records (of the data)."""
        return int((self.size * self.count).sum())

    @property
    def n_classes(self) -> int:
        """u, the number of classes (of the data)."""
        return int(self.count.sum())


@dataclass(frozen=True, eq=False)
class ClassHistogram(_Sizes, Result):
    """How many QI classes have each size, with the first smallest class.

    Attributes
    ----------
    qi : tuple of str
        The QI columns.
    size : int64 array
        The distinct class sizes f, ascending.
    count : int64 array
        ``count[i]`` classes have ``size[i]`` records.
    smallest : dict
        The QI values ``{column: value}`` of the first class of the smallest size, in the
        key order of :class:`fastpriv.risk.ClassCounts` (nulls last).
    nulls : {"error", "drop", "value"}
        The null policy the classes were counted under.

    """

    qi: tuple
    size: np.ndarray = field(repr=False)
    count: np.ndarray = field(repr=False)
    smallest: dict
    nulls: str = "error"
    #: no sampling weights: a histogram of sizes does not carry them (read by risk.audit)
    sampling_weight_sums = None

    def __post_init__(self) -> None:
        size = real_array(self.size, "size").astype(np.int64)
        count = real_array(self.count, "count").astype(np.int64)
        if size.shape != count.shape or size.ndim != 1 or not size.size:
            raise InputError("size and count must be non-empty 1-d arrays of one length")
        if (size < 1).any() or (count < 1).any() or (np.diff(size) <= 0).any():
            raise InputError("size must be increasing sizes >= 1 and count counts >= 1")
        check_choice(self.nulls, "nulls", ("error", "drop", "value"))
        if list(self.smallest) != list(self.qi):
            raise InputError(f"smallest must name the QI columns {list(self.qi)}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "count", count)

    @classmethod
    def from_class_counts(cls, classes: Any) -> "ClassHistogram":
        """Return the histogram of :class:`fastpriv.risk.ClassCounts` (complete classes)."""
        if not all(hasattr(classes, a) for a in ("histogram", "values_of", "sizes", "qi")):
            raise InputTypeError(f"classes must be ClassCounts, got {type(classes).__name__}")
        if classes.sampling_weight_sums is not None:
            raise InputError("classes: a class-size histogram drops sampling weight sums; "
                             "audit the ClassCounts themselves")
        if classes.n_classes == 0:
            raise InputError("classes: no class to summarize")
        size, count = classes.histogram()
        j = int(np.argmin(classes.sizes))
        return cls(tuple(classes.qi), size, count, classes.values_of(j), classes.nulls)

    def histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(size, count)``, as :meth:`fastpriv.risk.ClassCounts.histogram`."""
        return self.size, self.count

    def merge(self, *others: "ClassHistogram") -> "ClassHistogram":
        """Return the histogram of the union of disjoint sets of complete classes.

        Counts add size by size; the smallest class is the smaller size's, ties going to
        the first key (nulls last), as the classes of the whole table would name it.
        """
        from ._labels import label_less

        out = self
        for o in others:
            if not isinstance(o, ClassHistogram):
                raise InputTypeError(f"merge: expected ClassHistogram, got {type(o).__name__}")
            if (o.qi, o.nulls) != (self.qi, self.nulls):
                raise InputError("merge: the histograms are over different QI columns or "
                                 "null policies")
            size = np.union1d(out.size, o.size)
            count = np.zeros(size.size, dtype=np.int64)
            count[np.searchsorted(size, out.size)] += out.count
            count[np.searchsorted(size, o.size)] += o.count
            first = out.smallest
            if o.size[0] < out.size[0] or (o.size[0] == out.size[0] and label_less(
                    tuple(o.smallest.values()), tuple(out.smallest.values()))):
                first = o.smallest
            out = ClassHistogram(self.qi, size, count, dict(first), self.nulls)
        return out

    @property
    def value(self) -> int:
        """The number of classes."""
        return self.n_classes

    @property
    def params(self) -> dict:
        """The QI columns and the null policy."""
        return {"qi": list(self.qi), "nulls": self.nulls}

    @property
    def witness(self) -> None:
        """None: a summary, not a verdict (see :func:`fastpriv.risk.audit`)."""
        return None

    def to_dict(self) -> dict:
        """JSON-safe dict: QI, null policy, records, classes, histogram, smallest class."""
        return {"qi": list(self.qi), "nulls": self.nulls, "n_records": self.n_records,
                "n_classes": self.n_classes,
                "class_size_histogram": {"size": self.size.tolist(),
                                         "count": self.count.tolist()},
                "smallest": json_safe(self.smallest)}

    def summary(self) -> str:
        """One line: records, classes and the smallest class."""
        return (f"{self.n_records:,} records in {self.n_classes:,} QI classes over "
                f"{', '.join(self.qi)}; smallest class {int(self.size[0]):,}")



def _class(values: dict, size: int, population_size: int) -> dict:
    """Return a class as the summary keeps it: QI values, records in the data, people."""
    return {"qi_values": dict(values), "size": int(size),
            "population_size": int(population_size)}


def _first(a: dict | None, b: dict | None, key: Any) -> dict | None:
    """Return whichever of ``a``, ``b`` comes first by ``key``, then by QI values (nulls last)."""
    from ._labels import label_less

    if a is None or b is None:
        return a if b is None else b
    ka, kb = key(a), key(b)
    if kb < ka or (kb == ka and label_less(tuple(b["qi_values"].values()),
                                           tuple(a["qi_values"].values()))):
        return b
    return a


def _smallest(c: dict) -> int:
    return c["size"]


def _rarest(c: dict) -> int:
    return c["population_size"]


def _most_exposed(c: dict) -> float:
    return -(c["size"] / c["population_size"])


@dataclass(frozen=True, eq=False)
class PopulationHistogram(_Sizes, Result):
    """The data's classes matched with a population's, summarized: a fold over QI classes.

    k-map (min_j F_j), δ-presence (f_j / F_j: its maximum, its minimum) and the risk
    measures against a population table (journalist and marketer risk, Σ f_j / F_j) depend
    on the classes only through how many have each pair (f_j records in the data, F_j
    people in the population), the population's totals, and their witnesses — the first
    class (key order, nulls last) of smallest f, of smallest F and of largest f / F. This
    is that summary. It is built from complete matched classes
    (:meth:`from_matched`), merged across disjoint sets of classes (:meth:`merge`: counts
    add pair by pair, witnesses by their key), and read by :func:`fastpriv.risk.audit`,
    :func:`fastpriv.population.k_map` and :func:`~fastpriv.population.delta_presence` as
    they read a table and its population; in memory they read it too, so an engine's
    summary answers exactly as the table. Its size is the number of distinct (f, F) pairs.

    Attributes
    ----------
    qi : tuple of str
        The QI columns.
    size, population_size, count : int64 arrays
        ``count[i]`` classes of the data have ``size[i]`` records and ``population_size[i]``
        people in the population (pairs ascending).
    n_population, n_population_classes : int
        Records and classes of the population table (under the null policy).
    smallest, rarest, most_exposed : dict or None
        ``{"qi_values", "size", "population_size"}`` of the first class of smallest size,
        of smallest population size (k-map) and of largest f / F (δ_max); None when the
        summary holds no class of the data (a part of a population without data).
    nulls : {"error", "drop", "value"}
        The null policy both tables were counted under.

    """

    qi: tuple
    size: np.ndarray = field(repr=False)
    population_size: np.ndarray = field(repr=False)
    count: np.ndarray = field(repr=False)
    n_population: int
    n_population_classes: int
    smallest: dict | None
    rarest: dict | None
    most_exposed: dict | None
    nulls: str = "error"
    #: no sampling weights: the pairs do not carry them (read by risk.audit)
    sampling_weight_sums = None

    def __post_init__(self) -> None:
        arrays = [real_array(a, name).astype(np.int64) for a, name in
                  ((self.size, "size"), (self.population_size, "population_size"),
                   (self.count, "count"))]
        size, big_f, count = arrays
        if len({a.shape for a in arrays}) != 1 or size.ndim != 1:
            raise InputError("size, population_size and count must be 1-d arrays of one length")
        if (size < 1).any() or (count < 1).any() or (big_f < size).any():
            raise InputError("size must be >= 1, population_size >= size and count >= 1")
        check_choice(self.nulls, "nulls", ("error", "drop", "value"))
        if (self.smallest is None) != (size.size == 0):
            raise InputError("smallest must name a class exactly when there are classes")
        for name, a in zip(("size", "population_size", "count"), arrays, strict=True):
            object.__setattr__(self, name, a)

    @classmethod
    def from_matched(cls, classes: Any, population_size: Any, *, n_population: int,
                     n_population_classes: int) -> "PopulationHistogram":
        """Summarize matched classes: :class:`fastpriv.risk.ClassCounts` and their F_j."""
        f = np.asarray(classes.sizes, dtype=np.int64)
        big_f = np.asarray(population_size, dtype=np.int64)
        pairs, count = np.unique(np.stack([f, big_f], axis=1), axis=0, return_counts=True)

        def witness(j: int) -> dict:
            return _class(classes.values_of(j), f[j], big_f[j])

        return cls(tuple(classes.qi), pairs[:, 0], pairs[:, 1], count, int(n_population),
                   int(n_population_classes), witness(int(np.argmin(f))),
                   witness(int(np.argmin(big_f))), witness(int(np.argmax(f / big_f))),
                   classes.nulls)

    @classmethod
    def population_only(cls, qi: Any, nulls: str, *, n_population: int,
                        n_population_classes: int) -> "PopulationHistogram":
        """Summarize population classes that no record of the data falls in."""
        empty = np.zeros(0, dtype=np.int64)
        return cls(tuple(qi), empty, empty, empty, int(n_population), int(n_population_classes),
                   None, None, None, nulls)

    def merge(self, *others: "PopulationHistogram") -> "PopulationHistogram":
        """Return the summary of the union of disjoint sets of complete classes.

        Pair counts and population totals add; each witness is the one coming first by its
        key (smaller f, smaller F, larger f / F), then by QI values (nulls last), as the
        classes of the whole table would name it.
        """
        out = self
        for o in others:
            if not isinstance(o, PopulationHistogram):
                raise InputTypeError(f"merge: expected PopulationHistogram, got "
                                     f"{type(o).__name__}")
            if (o.qi, o.nulls) != (out.qi, out.nulls):
                raise InputError("merge: the summaries are over different QI columns or null "
                                 "policies")
            pairs = np.concatenate([np.stack([out.size, out.population_size], axis=1),
                                    np.stack([o.size, o.population_size], axis=1)])
            uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
            count = np.zeros(uniq.shape[0], dtype=np.int64)
            np.add.at(count, inv.ravel(), np.concatenate([out.count, o.count]))
            out = PopulationHistogram(
                out.qi, uniq[:, 0], uniq[:, 1], count,
                out.n_population + o.n_population,
                out.n_population_classes + o.n_population_classes,
                _first(out.smallest, o.smallest, _smallest),
                _first(out.rarest, o.rarest, _rarest),
                _first(out.most_exposed, o.most_exposed, _most_exposed), out.nulls)
        return out

    def histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(size, count)`` of the data's classes, as :meth:`ClassHistogram.histogram`."""
        size, inv = np.unique(self.size, return_inverse=True)
        count = np.zeros(size.size, dtype=np.int64)
        np.add.at(count, inv.ravel(), self.count)
        return size, count

    def k_map(self) -> tuple[int, dict]:
        """Return ``(k, class)``: k-map = min_j F_j (Sweeney 2002) and the first class there."""
        self._require_classes()
        return int(self.rarest["population_size"]), self.rarest

    def delta(self) -> tuple[float, float, dict]:
        """Return ``(δ_max, δ_min, class)``, δ_j = f_j / F_j (Nergiz et al. 2007).

        δ_min is over the population's classes: 0 when one of them is absent from the data;
        the class is the first attaining δ_max.
        """
        self._require_classes()
        c = self.most_exposed
        d_min = (float((self.size / self.population_size).min())
                 if self.n_population_classes == self.n_classes else 0.0)
        return c["size"] / c["population_size"], d_min, c

    def exposure_sum(self) -> float:
        """Σ_j f_j / F_j over the data's classes (correctly rounded sum over the pairs)."""
        import math

        return math.fsum((self.count * (self.size / self.population_size)).tolist())

    def _require_classes(self) -> None:
        if self.smallest is None:
            raise InputError("data has no rows (after the null policy and weights of 0)")

    @property
    def value(self) -> int:
        """The number of classes of the data."""
        return self.n_classes

    @property
    def params(self) -> dict:
        """The QI columns, the null policy and the population's totals."""
        return {"qi": list(self.qi), "nulls": self.nulls, "n_population": self.n_population,
                "n_population_classes": self.n_population_classes}

    @property
    def witness(self) -> None:
        """None: a summary, not a verdict (see :func:`fastpriv.population.k_map`)."""
        return None

    def to_dict(self) -> dict:
        """JSON-safe dict: QI, null policy, totals, the (f, F) pairs and the three classes."""
        return json_safe({**self.params, "n_records": self.n_records,
                          "n_classes": self.n_classes,
                          "pairs": {"size": self.size.tolist(),
                                    "population_size": self.population_size.tolist(),
                                    "count": self.count.tolist()},
                          "smallest": self.smallest, "rarest": self.rarest,
                          "most_exposed": self.most_exposed})

    def summary(self) -> str:
        """One line: records and classes of the data and of the population."""
        return (f"{self.n_records:,} records in {self.n_classes:,} QI classes over "
                f"{', '.join(self.qi)}, matched with {self.n_population:,} people in "
                f"{self.n_population_classes:,} classes of the population")


def _short(a: dict | None, b: dict | None) -> dict | None:
    """Return the class of ``a``, ``b`` coming first by QI values (nulls last)."""
    from ._labels import label_less

    if a is None or b is None:
        return a if b is None else b
    return b if label_less(tuple(b["qi_values"].values()),
                           tuple(a["qi_values"].values())) else a


@dataclass(frozen=True, eq=False)
class SamplingHistogram(Result):
    """The class-size histogram with the sampling-weight measures of risk: a fold over classes.

    For classes j with f_j records and sampling weights summing to W_j, F̂_j = max(W_j, f_j)
    estimates the class's population size; the measures :func:`fastpriv.risk.audit` reads
    from it are sums, extremes and counts over classes (Benedetti & Franconi 1998 for the
    individual risk r_j = r(f_j, F̂_j); Dankar & El Emam for journalist and marketer risk),
    kept here so that summaries of disjoint sets of complete classes merge
    (:meth:`merge`) into the summary of the whole table — exactly: sums are exact
    (:func:`fastpriv._exact_sum.exact_sum`) and rounded once when read. The counts above
    a threshold need the threshold: the summary is for one (``threshold``).

    Attributes
    ----------
    classes : ClassHistogram
        The class sizes and the first smallest class.
    sampling_weight : str
        The sampling weight column.
    threshold : float
        The risk threshold the counts above are for (a record is at risk when its risk
        is strictly greater).
    weight_total : int
        Σ_j W_j (the population size the weights estimate). This and the other exact sums
        are integers in units of 2**-1127 (:func:`fastpriv._exact_sum.exact_sum`), read as
        floats with :meth:`total`.
    least_population : float
        min_j F̂_j (journalist risk: its inverse).
    population_total : int
        Σ_j F̂_j (exact sum).
    exposure : int
        Σ_j f_j / F̂_j (exact sum; marketer risk: it over n).
    journalist_above : int
        Σ f_j over the classes with 1 / F̂_j > threshold.
    individual_max : float
        max_j r_j.
    expected : int
        Σ_j f_j r_j (exact sum: the expected re-identifications).
    individual_above : int
        Σ f_j over the classes with r_j > threshold.
    short : dict or None
        ``{"qi_values", "size", "sampling_weight_sum"}`` of the first class (key order,
        nulls last) whose sampling weights sum to less than its records (refused by
        ``risk.audit``); None when there is none.

    """

    classes: ClassHistogram
    sampling_weight: str
    threshold: float
    weight_total: int = field(repr=False)
    least_population: float
    population_total: int = field(repr=False)
    exposure: int = field(repr=False)
    journalist_above: int
    individual_max: float
    expected: int = field(repr=False)
    individual_above: int
    short: dict | None = None

    def __post_init__(self) -> None:
        from ._validation import check_probability

        if not isinstance(self.classes, ClassHistogram):
            raise InputTypeError(f"classes must be a ClassHistogram, got "
                                 f"{type(self.classes).__name__}")
        if not isinstance(self.sampling_weight, str):
            raise InputTypeError("sampling_weight must be a column name")
        object.__setattr__(self, "threshold", check_probability(self.threshold, "threshold"))
        for name in ("weight_total", "population_total", "exposure", "expected",
                     "journalist_above", "individual_above"):
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name),
                                                                       int):
                raise InputTypeError(f"{name} must be an int (an exact sum or a count)")

    @classmethod
    def from_class_counts(cls, classes: Any, *, threshold: float) -> "SamplingHistogram":
        """Summarize :class:`fastpriv.risk.ClassCounts` with sampling weight sums."""
        from ._exact_sum import exact_sum
        from ._kernels import risk as kr
        from ._validation import check_probability, kernel_array

        if not all(hasattr(classes, a) for a in ("histogram", "values_of", "sizes", "qi")):
            raise InputTypeError(f"classes must be ClassCounts, got {type(classes).__name__}")
        if classes.sampling_weight_sums is None:
            raise InputError("classes: counted without sampling weights (sampling_weight=)")
        if classes.n_classes == 0:
            raise InputError("classes: no class to summarize")
        thr = check_probability(threshold, "threshold")
        wsum = np.asarray(classes.sampling_weight_sums, dtype=np.float64)
        f = np.asarray(classes.sizes).astype(np.float64)
        big_f = np.maximum(wsum, f)
        r = kr.bf_individual_risk(kernel_array(classes.sizes, np.int64),
                                  kernel_array(big_f, np.float64))
        bad = np.flatnonzero(wsum < f * (1 - 1e-12))
        short = None if not bad.size else {
            "qi_values": classes.values_of(int(bad[0])), "size": int(f[bad[0]]),
            "sampling_weight_sum": float(wsum[bad[0]])}
        return cls(ClassHistogram.from_class_counts(_without_sums(classes)),
                   classes.sampling_weight or "sampling_weight", thr, exact_sum(wsum),
                   float(big_f.min()), exact_sum(big_f), exact_sum(f / big_f),
                   int(f[1.0 / big_f > thr].sum()), float(r.max()), exact_sum(f * r),
                   int(f[r > thr].sum()), short)

    def merge(self, *others: "SamplingHistogram") -> "SamplingHistogram":
        """Return the summary of the union of disjoint sets of complete classes.

        Histograms merge as :meth:`ClassHistogram.merge`; sums and counts add, extremes
        take the extreme, the short class is the first by QI values.
        """
        out = self
        for o in others:
            if not isinstance(o, SamplingHistogram):
                raise InputTypeError(f"merge: expected SamplingHistogram, got "
                                     f"{type(o).__name__}")
            if (o.sampling_weight, o.threshold) != (out.sampling_weight, out.threshold):
                raise InputError("merge: the summaries are of different sampling weight "
                                 "columns or thresholds")
            out = SamplingHistogram(
                out.classes.merge(o.classes), out.sampling_weight, out.threshold,
                out.weight_total + o.weight_total,
                min(out.least_population, o.least_population),
                out.population_total + o.population_total, out.exposure + o.exposure,
                out.journalist_above + o.journalist_above,
                max(out.individual_max, o.individual_max), out.expected + o.expected,
                out.individual_above + o.individual_above, _short(out.short, o.short))
        return out

    # what risk.audit reads of its classes
    @property
    def qi(self) -> tuple:
        """The QI columns."""
        return self.classes.qi

    @property
    def nulls(self) -> str:
        """The null policy the classes were counted under."""
        return self.classes.nulls

    @property
    def smallest(self) -> dict:
        """The first smallest class (as :attr:`ClassHistogram.smallest`)."""
        return self.classes.smallest

    @property
    def n_records(self) -> int:
        """n, the number of records."""
        return self.classes.n_records

    @property
    def n_classes(self) -> int:
        """u, the number of classes."""
        return self.classes.n_classes

    def histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(size, count)``, as :meth:`ClassHistogram.histogram`."""
        return self.classes.histogram()

    def total(self, name: str) -> float:
        """Return one exact sum rounded to a float.

        ``name``: ``weight_total``, ``population_total``, ``exposure`` or ``expected``.
        """
        from ._exact_sum import to_float

        return to_float(getattr(self, name))

    @property
    def value(self) -> int:
        """The number of classes."""
        return self.n_classes

    @property
    def params(self) -> dict:
        """The QI columns, the null policy, the sampling weight column and the threshold."""
        return {**self.classes.params, "sampling_weight": self.sampling_weight,
                "threshold": self.threshold}

    @property
    def witness(self) -> None:
        """None: a summary, not a verdict (see :func:`fastpriv.risk.audit`)."""
        return None

    def to_dict(self) -> dict:
        """JSON-safe dict: the histogram's, the measures' sums (rounded) and the short class."""
        return json_safe({**self.classes.to_dict(), **self.params,
                          "weight_total": self.total("weight_total"),
                          "least_population": self.least_population,
                          "population_total": self.total("population_total"),
                          "exposure": self.total("exposure"),
                          "journalist_above": self.journalist_above,
                          "individual_max": self.individual_max,
                          "expected": self.total("expected"),
                          "individual_above": self.individual_above, "short": self.short})

    def summary(self) -> str:
        """One line: the histogram's, with the estimated population size."""
        return (f"{self.classes.summary()}; sampling weights {self.sampling_weight!r} "
                f"estimate {self.total('weight_total'):,.6g} people")


def _without_sums(classes: Any) -> Any:
    """Return the classes without their sampling weight sums (their size histogram's input)."""
    import dataclasses

    return dataclasses.replace(classes, sampling_weight_sums=None, sampling_weight=None)
