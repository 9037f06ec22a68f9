"""(c,k)-safety's own part of ``fastpriv audit``: the model's audit at ``--k`` and its table.

The model's ``audit_cli`` (:mod:`fastpriv.registry`): ``fastpriv audit`` with a sensitive
column writes the full (c,k)-safety audit of an SVPI release under ``ck_safety`` in its JSON
(in place of the report's section) and prints its table under ``--verbose``.
"""

from __future__ import annotations

import argparse
from typing import Any


def audit(rel: Any, args: argparse.Namespace, d: dict) -> tuple[dict | None, bool]:
    """Audit (c,k)-safety at ``--k`` for ``fastpriv audit``; print its table under --verbose.

    Parameters
    ----------
    rel : Release
        The audited release.
    args : argparse.Namespace
        ``fastpriv audit``'s arguments (``k``, ``verbose``).
    d : dict
        The report payload (unused: the verdict reads the report's own section).

    Returns
    -------
    tuple
        ``(entry, ok)``: the audit's JSON (None for a release that is not SVPI, which the
        audit does not read) and True (the verdict alone decides the exit status).

    """
    if rel.case != "svpi":
        return None, True
    from .. import ck_safety
    from ._common import format_table

    ck = ck_safety.audit(rel, k=args.k)
    if args.verbose:
        print()
        print(format_table(["knowledge", "max disclosure", "worst group", "witness"],
                           ck.rows(), title="(c,k)-safety (Martin et al.)"))
    return ck.to_dict(), True
