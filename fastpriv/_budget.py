"""Resource budgets: what a long step needs, known before it starts.

A step whose memory or time grows faster than its input — a check of every one of millions
of sensitive values, the possible-world posteriors of a group of 10⁵ people (quadratic in
its size), weights expanded into one row per person — estimates its need from the sizes
first, and refuses what cannot finish instead of failing hours later with a MemoryError:

* memory against what the machine has free now: :data:`MEMORY_SHARE` of ``MemAvailable``
  (``/proc/meminfo``; no bound where the system does not say);
* time against a budget in seconds (the ``max_seconds=`` of the step, :data:`MAX_SECONDS`
  by default; ``None`` waits however long it takes).

Beyond either, :func:`check_memory` / :func:`check_seconds` raise
:class:`~fastpriv.errors.InputError` with the figure (needed and available, or the
estimated time and the budget) and the way out (an option, a smaller input). A step
within its budget that is still long runs with its estimate on stderr
(:class:`fastpriv._progress.Estimate`). Time estimates are the step's operation count
(from the complexity in its docstring) times a rate measured on a 2-core machine: they are
good to a small factor, which is what a budget of minutes against hours needs; memory
estimates are per-item costs measured the same way (peak resident memory, VmHWM).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ._progress import fmt_bytes, fmt_seconds
from .errors import InputError, InputTypeError

__all__ = ["MEMORY_SHARE", "MAX_SECONDS", "EXPANDED_ROW_BYTES", "UNIT_BYTES",
           "ESP_OP_SECONDS", "esp_work", "available_memory", "check_memory", "check_seconds",
           "check_max_seconds", "max_seconds_arg"]

#: Share of the free memory (MemAvailable) one step may plan to use.
MEMORY_SHARE = 0.8
#: Default bound on the estimated seconds of one long step (the ``max_seconds=`` of
#: :func:`fastpriv.robustness.audit`, :func:`fastpriv.foreground.mine` / ``attack``).
MAX_SECONDS = 600.0
#: Memory per person of a weighted table expanded into one row per person, besides the
#: row's own columns: the repeat index, the encoded columns, the method's per-row arrays
#: (Anatomy: 180 B measured at 10⁶ people, VmHWM).
EXPANDED_ROW_BYTES = 200
#: Memory per unit (person) of a row-level model reading a weighted table expanded into
#: people (:attr:`fastpriv.rows.RowView.group_order`): r-robustness measured 210 B per
#: person at 10⁶ people (VmHWM), the foreground attack 100 B.
UNIT_BYTES = 256

#: Seconds per operation of the prefix/suffix elementary-symmetric posteriors
#: (:func:`esp_work` operations; 2.2 ns measured on 2 cores, one group of 10⁵ tuples with
#: four values of 25,000 each: 10¹⁰ operations in 22 s).
ESP_OP_SECONDS = 2.5e-9


def esp_work(N: Any, n: Any) -> Any:
    """Operations of the binary-model posteriors of groups of ``N`` tuples, ``n`` of x.

    The stable prefix/suffix algorithm (:func:`fastpriv._kernels.possible_worlds.loo_core`)
    costs O(N · min(n, N − n)): quadratic in a group's size. Works on numbers and arrays.
    """
    import numpy as np

    N = np.asarray(N, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return N * (np.minimum(n, N - n) + 1.0)


def available_memory() -> int | None:
    """Bytes of memory free for new allocations now (``MemAvailable``), None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(need: float, what: str, way_out: str) -> None:
    """Refuse a step that needs more than :data:`MEMORY_SHARE` of the free memory.

    Parameters
    ----------
    need : float
        Estimated bytes the step allocates.
    what : str
        The step and its size, as the sentence's subject ("checking the skyline of
        10,000,000 sensitive values").
    way_out : str
        What the user can do instead (an option, a coarser column).

    Raises
    ------
    InputError
        ``"<what> needs about 21 GiB of memory; 18 GiB is free (MemAvailable): <way_out>"``.

    """
    free = available_memory()
    if free is None or need <= MEMORY_SHARE * free:
        return
    raise InputError(f"{what} needs about {fmt_bytes(need)} of memory; {fmt_bytes(free)} is "
                     f"free (MemAvailable), so it would fail part-way: {way_out}")


def check_max_seconds(max_seconds: Any, param: str = "max_seconds") -> float | None:
    """Validate a time budget: a positive number of seconds, or None (no bound)."""
    if max_seconds is None:
        return None
    if isinstance(max_seconds, bool) or not isinstance(max_seconds, numbers.Real):
        raise InputTypeError(f"{param} must be a number of seconds or None, got "
                             f"{type(max_seconds).__name__}")
    if not (max_seconds > 0):      # also refuses NaN
        raise InputError(f"{param} must be positive (seconds) or None, got {max_seconds!r}")
    return float(max_seconds)


def max_seconds_arg(text: str) -> float | None:
    """Parse ``--max-seconds``: a positive number of seconds, or ``none`` (no bound)."""
    import argparse

    if text.strip().lower() in ("none", "inf", "0"):
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (0 < v < math.inf):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds or none, "
                                         f"got {text!r}")
    return v


def check_seconds(estimate: float, what: str, way_out: str, max_seconds: float | None,
                  param: str = "max_seconds") -> None:
    """Refuse a step estimated to take longer than ``max_seconds`` (None: never refuse).

    Raises
    ------
    InputError
        ``"<what> would take about 3.2 h (estimate), more than max_seconds = 600 s:
        <way_out>"``.

    """
    if max_seconds is None or estimate <= max_seconds:
        return
    raise InputError(f"{what} would take about {fmt_seconds(estimate)} (estimate), more than "
                     f"{param} = {max_seconds:g} s: {way_out}")
