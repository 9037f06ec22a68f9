"""Algorithms that produce releases.

Every algorithm returns an :class:`~fastpriv.anonymize.Anonymized` result with
``.release`` (a :class:`~fastpriv.Release`) and ``.group_ids`` (group id per input row).
Submodules are imported on first use, so importing this package costs nothing.

==============================================  ==============================================
``anatomy(data, sensitive=, l=)``               ℓ-diverse bucketization (Xiao & Tao)
``mondrian(data, qi=, sensitive=, …)``          strict multidimensional partitioning
``lattice_search(data, qi=, sensitive=, …)``    full-domain generalization, monotone criterion
``skyline_anonymize(data, qi=, sensitive=, …)`` SkylineAnonymize (Chen et al.)
``art(data, qi=, sensitive=, r=, …)``           ART for r-robustness (Wong et al.)
``release_out_of_core(data, output=, …)``       any of the generalizations above, out of core
==============================================  ==============================================
"""

from __future__ import annotations

import importlib
from typing import Any

from ._result import (
    Anonymized,
    ArtResult,
    LatticeAnonymized,
    MondrianResult,
    SkylineAnonymized,
    release_paths,
)

__all__ = ["Anonymized", "MondrianResult", "SkylineAnonymized", "ArtResult", "LatticeAnonymized",
           "release_paths", "anatomy", "AnatomyResult", "mondrian", "MondrianTree",
           "lattice_search", "minimal_ck_safe", "skyline_anonymize", "art",
           "release_out_of_core"]

# Implementation modules whose name would equal their function's (anatomy, mondrian, art)
# are private (``_anatomy``…): a public submodule named like the function would replace the
# package attribute as soon as it is imported directly.
_LAZY = {
    "anatomy": ("fastpriv.anonymize._anatomy", "anatomy"),
    "AnatomyResult": ("fastpriv.anonymize._anatomy", "AnatomyResult"),
    "mondrian": ("fastpriv.anonymize._mondrian", "mondrian"),
    "MondrianTree": ("fastpriv.anonymize._mondrian", "MondrianTree"),
    "lattice_search": ("fastpriv.anonymize.lattice", "lattice_search"),
    "minimal_ck_safe": ("fastpriv.anonymize.lattice", "minimal_ck_safe"),
    "skyline_anonymize": ("fastpriv.anonymize.skyline", "skyline_anonymize"),
    "art": ("fastpriv.anonymize._art", "art"),
    "release_out_of_core": ("fastpriv.anonymize.out_of_core", "release_out_of_core"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastpriv.anonymize' has no attribute {name!r}")


def _one_row_per_person(data: Any, weight: Any, used: list[str]) -> Any:
    """Return ``data`` with each row repeated ``weight`` times: one row per person.

    For the anonymizers that place every person on their own (Anatomy, ART: the people of
    one weighted row may land in different groups), ``weight=`` reads as everywhere in
    fastpriv — each row stands for ``weight`` identical people — and their result is the
    one of this expanded table. ``weight`` is checked like the other anonymizers' (a
    column name, not one of the ``used`` columns, integers ≥ 0 without nulls:
    :func:`fastpriv.anonymize._input.input_weights`); the weight column is dropped, the
    copies of a row are consecutive, in input order, and rows of weight 0 stand for nobody.
    Refused before expanding when the people would not fit in the free memory
    (:func:`fastpriv._arrow.expand_weights`). ``fastpriv anonymize --weight`` calls
    Anatomy and ART with ``weight=`` and publishes their ``source``, this table.
    """
    from .._arrow import as_table, expand_weights
    from ._input import input_weights

    table = as_table(data, param="data")
    input_weights(table, weight, used)
    return expand_weights(table, weight)
