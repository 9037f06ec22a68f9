"""fastpriv: worst-case background-knowledge privacy audits with a Numba core.

Public entry points (imported lazily so that ``import fastpriv`` stays fast):

* :class:`fastpriv.Release` — the encoded release every model reads;
* :class:`fastpriv.Hierarchy` — a generalization hierarchy (:mod:`fastpriv.hierarchies`);
* :mod:`fastpriv.classic` — k-anonymity, ℓ-diversity variants, t-closeness;
* :mod:`fastpriv.ck_safety`, :mod:`fastpriv.skyline`, :mod:`fastpriv.robustness`,
  :mod:`fastpriv.foreground` — the worst-case models;
* :mod:`fastpriv.anonymize`, :mod:`fastpriv.metrics`, :mod:`fastpriv.datasets`;
* :mod:`fastpriv.frontier` — risk and loss of every generalization, the Pareto frontier.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__
from .errors import InputError, InputTypeError

__all__ = [
    "__version__",
    "InputError",
    "InputTypeError",
    "Release",
    "Hierarchy",
    "CountAccumulator",
    "read_csv",
    "classic",
    "ck_safety",
    "skyline",
    "robustness",
    "foreground",
    "anonymize",
    "metrics",
    "datasets",
    "hierarchies",
    "knowledge",
    "predicates",
    "streaming",
    "report",
    "risk",
    "pushdown",
    "spark",
    "frontier",
]

_ATTRS = {"Release": ("fastpriv.release", "Release"),
          "Hierarchy": ("fastpriv.hierarchies", "Hierarchy"),
          "read_csv": ("fastpriv._arrow", "read_csv"),
          "CountAccumulator": ("fastpriv.counts", "CountAccumulator")}
_SUBMODULES = {"classic", "ck_safety", "skyline", "robustness", "foreground", "anonymize",
               "metrics", "datasets", "hierarchies", "counts", "release", "distributed",
               "knowledge", "predicates", "streaming", "report", "spark", "pushdown",
               "risk", "frontier"}


def __getattr__(name: str) -> Any:
    if name in _ATTRS:
        mod, attr = _ATTRS[name]
        value = getattr(importlib.import_module(mod), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"fastpriv.{name}")
    else:
        raise AttributeError(f"module 'fastpriv' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
