"""The re-identification risk's own part of ``fastpriv audit`` (with a sensitive column).

The model's ``audit_cli`` (:mod:`fastpriv.registry`), run after the verdict is printed: with
``--qi`` (and the risk not switched off) the risk of the QI classes is measured, printed
with its PASS/FAIL against ``--max-risk`` and the ``fastpriv anonymize`` command that
fixes it, and written under ``risk`` in the JSON.
"""

from __future__ import annotations

import argparse
import math
from typing import Any


def audit(rel: Any, args: argparse.Namespace, d: dict) -> tuple[dict | None, bool]:
    """Measure, print and return the risk of the QI classes when ``fastpriv audit`` asks.

    Parameters
    ----------
    rel : Release
        The audited release (unused: the risk reads the data's QI classes).
    args : argparse.Namespace
        ``fastpriv audit``'s arguments (``risk``, ``qi``, ``max_risk``, the data's).
    d : dict
        The report payload: when its verdict's remedies say no generalization can pass,
        no command is offered for the risk alone.

    Returns
    -------
    tuple
        ``(entry, ok)``: the risk's JSON (None when the risk does not run) and its PASS.

    """
    if not args.risk:
        return None, True
    unreachable = any(not r.startswith("fastpriv ") for r in d["verdict"]["remedies"])
    return _measure(args, remedy=not unreachable)


def _measure(args: argparse.Namespace, *, remedy: bool = True) -> tuple[dict, bool]:
    """Re-identification risk of the QI classes: print it, return it and PASS.

    ``remedy=False``: the verdict already said no generalization can pass, so no command is
    offered for the risk alone.
    """
    from .. import risk
    from ._common import data_of, load_population, print_remedy

    res = risk.audit(data_of(args), qi=args.qi,
                     threshold=args.max_risk, population=load_population(args),
                     nulls=args.nulls, weight=args.weight,
                     sampling_weight=args.sampling_weight)
    ok, lines = risk.verdict(res, args.max_risk)
    print()
    print("Re-identification risk")
    print(res.summary())
    for line in lines:
        print("  " + line)
    if not ok and remedy:
        n_records = int(res.params["n_records"])
        n = math.ceil(1 / args.max_risk - 1e-12) if args.max_risk > 0 else n_records + 1
        why = None
        if n > n_records:      # not even one class holding every record is rare enough
            why = (f"even one group of all {n_records:,} records has a prosecutor risk of "
                   f"{1 / n_records:.4g} > max-risk {args.max_risk:g}" if n_records else
                   "there are no records")
        print_remedy(args, "mondrian", ["--min-size", str(n)], unreachable=why)
    return res.to_dict(), ok
