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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import check_choice, real_array
from .errors import InputError, InputTypeError
from .results import Result, json_safe

__all__ = ["ClassHistogram"]


@dataclass(frozen=True, eq=False)
class ClassHistogram(Result):
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

    @property
    def n_records(self) -> int:
        """n, the number of records."""
        return int((self.size * self.count).sum())

    @property
    def n_classes(self) -> int:
        """u, the number of classes."""
        return int(self.count.sum())

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

