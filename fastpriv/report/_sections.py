"""The report's section shape and what the models' section functions share.

Every section of the report is a dict with ``status`` (``"ok"``, ``"skipped"``,
``"failed"``), ``reason`` and ``seconds`` plus its content (:func:`section`). The section
functions the models declare in :mod:`fastpriv.registry` (``sections``) receive the report's
context (:class:`fastpriv.report._build` builds it: the release, the loaded input, the
options) and build theirs with the helpers below.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import InputError

__all__ = ["section", "skipped", "run_section", "row_level_reason", "ROWS_PER_GROUP"]

#: Rows listed per group in the worst-groups table and the targets.
ROWS_PER_GROUP = 20


def section(status: str = "ok", reason: str | None = None, seconds: float = 0.0,
            **content: Any) -> dict:
    """Return a report section: ``status``, ``reason``, ``seconds`` and the content."""
    return {"status": status, "reason": reason, "seconds": float(seconds), **content}


def skipped(reason: str) -> dict:
    """Return a section skipped by design, with the reason."""
    return section("skipped", reason)


def run_section(fn: Callable[..., dict], *args: Any, **kw: Any) -> dict:
    """Run a section; a model's InputError becomes a 'failed' section (bugs propagate)."""
    t0 = time.perf_counter()
    try:
        out = fn(*args, **kw)
    except InputError as exc:       # a model refusing this input; a bug propagates
        return section("failed", f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    if out.get("status") in (None, "ok"):
        out["seconds"] = time.perf_counter() - t0
    return out


def row_level_reason(ctx: Any, what: str, needs_qi: bool) -> str | None:
    """Why a row-level section (r-robustness, the attack) cannot run, or None.

    ``ctx`` is the report's context (``inp``: the loaded input, ``o``: the options).
    """
    inp, o = ctx.inp, ctx.o
    if inp.row_reason:
        return inp.row_reason
    if inp.rel.case != "svpi":
        return (f"{what} is defined for one sensitive value per individual; this release "
                f"is {inp.rel.case!r}")
    if inp.grouping == "qi":
        return ("the groups are the distinct values of the QI columns, so everyone in a "
                "group shares every QI signature and distribution-based posteriors equal "
                "the group frequencies already reported by (α,k)-anonymity; give the "
                "group-id column (group=/--group) together with the exact QI columns "
                "(qi=/--qi) to audit against QI-based knowledge")
    if needs_qi and not o.qi:
        return ("no quasi-identifier columns were given (qi=/--qi): the adversary's "
                "QI-based statistics cannot be formed")
    if o.r is None:
        return "c = 1 gives no threshold 1/r < 1: pass r= (> 1) explicitly"
    return None
