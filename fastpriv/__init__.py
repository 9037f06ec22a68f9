"""fastpriv: worst-case background-knowledge privacy audits with a Numba core.

Public entry points (imported lazily so that ``import fastpriv`` stays fast):

* :class:`fastpriv.Release` — the encoded release every model reads;
* :class:`fastpriv.Hierarchy` — a generalization hierarchy (:mod:`fastpriv.hierarchies`);
* :mod:`fastpriv.classic` — k-anonymity, ℓ-diversity variants, t-closeness;
* :mod:`fastpriv.ck_safety`, :mod:`fastpriv.skyline`, :mod:`fastpriv.robustness`,
  :mod:`fastpriv.foreground` — the worst-case models;
* :mod:`fastpriv.anonymize`, :mod:`fastpriv.metrics`, :mod:`fastpriv.datasets`;
* :mod:`fastpriv.frontier` — risk and loss of every generalization, the Pareto frontier;
* :mod:`fastpriv.risk`, :mod:`fastpriv.population` — re-identification risk, k-map and
  δ-presence from the classes of quasi-identifiers;
* :mod:`fastpriv.registry` — the declaration of every model.

Every public module (a name without a leading underscore) is an attribute of the package,
imported on first use: ``import fastpriv as fp; fp.population`` works without
``import fastpriv.population``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__
from .errors import InputError, InputTypeError

#: Every public module of the package, imported on first access (``fastpriv.risk``).
#: ``tests/test_package_modules.py`` keeps it equal to the modules on disk.
_SUBMODULES = ("anonymize", "ck_safety", "class_histogram", "classic", "cli", "counts", "datasets",
               "distributed", "engines", "errors", "folds", "foreground", "foreground_fold",
               "frontier", "hierarchical_t", "hierarchies", "knowledge", "metrics", "population",
               "predicates", "pushdown", "registry", "release", "report", "results", "risk",
               "robustness", "robustness_fold", "rows", "skyline", "spark", "stream_counts",
               "streaming")
_ATTRS = {"Release": ("fastpriv.release", "Release"),
          "Hierarchy": ("fastpriv.hierarchies", "Hierarchy"),
          "read_csv": ("fastpriv._arrow", "read_csv"),
          "CountAccumulator": ("fastpriv.counts", "CountAccumulator")}

__all__ = ["__version__", "InputError", "InputTypeError", *_ATTRS, *_SUBMODULES]


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
