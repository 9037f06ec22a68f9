"""Report section of the quasi-identifier classes: k-anonymity when no column is sensitive.

ARX's everyday set-up makes every column a quasi-identifier and asks two questions that do
not read a sensitive attribute: is every class of identical QI values large enough
(k-anonymity, Samarati & Sweeney 1998: k = min_j f_j over the classes), and how likely is a
record to be re-identified (:mod:`fastpriv.risk`). :func:`classes_section` answers the first
from the same :class:`~fastpriv.risk.ClassCounts` the risk section reads, so a report
without a sensitive column costs one count of the classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["classes_section", "NO_SENSITIVE_REASON"]

#: Why the models of attribute disclosure are skipped in a report without a sensitive column.
NO_SENSITIVE_REASON = (
    "no sensitive column was given (sensitive=None / no --sensitive): the models of "
    "attribute disclosure need one; k-anonymity and re-identification risk are measured "
    "over the classes of identical quasi-identifiers")


def classes_section(cc: Any, *, top: int) -> dict:
    """Describe the QI classes of ``cc`` (a :class:`~fastpriv.risk.ClassCounts`).

    Returns a JSON-ready dict: ``qi``, ``n_classes``, ``n_records``, ``k`` (the smallest
    class size, i.e. the achieved k of k-anonymity), ``worst_label`` (the QI values of the
    first smallest class, in class order), ``class_size`` (min, median, mean, max),
    ``singleton_classes`` (sample uniques) and ``smallest`` (the ``top`` smallest classes
    with their QI values and sizes, ties in class order).
    """
    sizes = np.asarray(cc.sizes, dtype=np.int64)
    n = int(sizes.shape[0])
    order = np.argsort(sizes, kind="stable")[:top] if n else np.zeros(0, np.int64)
    smallest = [{"values": cc.values_of(int(j)), "size": int(sizes[j])} for j in order]
    return {"status": "ok", "reason": None, "seconds": 0.0, "qi": list(cc.qi),
            "n_classes": n, "n_records": int(sizes.sum()),
            "k": int(sizes.min()) if n else 0,
            "worst_label": smallest[0]["values"] if smallest else None,
            "class_size": {"min": int(sizes.min()) if n else 0,
                           "median": float(np.median(sizes)) if n else 0.0,
                           "mean": float(sizes.mean()) if n else 0.0,
                           "max": int(sizes.max()) if n else 0},
            "singleton_classes": int((sizes == 1).sum()), "smallest": smallest}
