"""Algorithms that produce releases.

Every algorithm returns an :class:`~fastpriv.anonymize.Anonymized` result with
``.release`` (a :class:`~fastpriv.Release`) and ``.group_ids`` (group id per input row).
Submodules are imported on first use, so importing this package costs nothing.

================================  =========================================
``anatomy(table, sensitive, l)``   ℓ-diverse bucketization (Xiao & Tao)
``mondrian(table, qi, …)``         strict multidimensional partitioning
``lattice_search(…)``              full-domain generalization, any monotone criterion
``skyline_anonymize(…)``           SkylineAnonymize (Chen et al.)
``art(…)``                         ART for r-robustness (Wong et al.)
================================  =========================================
"""

from __future__ import annotations

import importlib
from typing import Any

from ._result import Anonymized

__all__ = ["Anonymized", "anatomy", "mondrian", "lattice_search", "minimal_ck_safe",
           "skyline_anonymize", "art"]

_LAZY = {
    "anatomy": ("fastpriv.anonymize.anatomy", "anatomy"),
    "mondrian": ("fastpriv.anonymize.mondrian", "mondrian"),
    "lattice_search": ("fastpriv.anonymize.lattice", "lattice_search"),
    "minimal_ck_safe": ("fastpriv.anonymize.lattice", "minimal_ck_safe"),
    "skyline_anonymize": ("fastpriv.anonymize.skyline", "skyline_anonymize"),
    "art": ("fastpriv.anonymize.art", "art"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastpriv.anonymize' has no attribute {name!r}")
