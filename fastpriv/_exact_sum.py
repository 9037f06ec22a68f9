"""Exact sums of float64 values, held as integers so that sums of parts merge in any order.

Every finite float64 is an integer multiple of 2**-1127 (its 53-bit significand times a
power of two no lower than 2**-1127), so a sum of them is an integer in that unit: held as
a Python ``int`` it is exact, parts add in any order and grouping, and :func:`to_float`
rounds the whole sum once (correctly rounded: CPython's ``int / int``). A fold whose parts
each keep :func:`exact_sum` of their values gives the same float as the whole array, bit
for bit, however the rows were split — which a float accumulator does not.
"""

from __future__ import annotations

import math

import numpy as np

#: every finite float64 is an integer times 2**-_UNIT
_UNIT = 1127
#: significands are split in two halves of at most this many bits before adding
_HALF = 26
#: values added per ``bincount`` pass: sums of 27-bit halves stay below 2**53 (exact)
_CHUNK = 1 << 25


def exact_sum(values: np.ndarray) -> int:
    """Return Σ ``values`` exactly, in units of 2**-1127 (finite float64 values).

    x = m · 2**e with |m| in [0.5, 1) (``frexp``), so x = M · 2**(e + 1074) units with
    M = m · 2**53 an integer below 2**53. The significands are split into two halves and
    added exponent by exponent (float ``bincount``, every partial sum an integer below
    2**53), then the few per-exponent totals are shifted and added as Python integers.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise ValueError("exact_sum: values must be finite")
    total = 0
    for a in range(0, x.size, _CHUNK):
        m, e = np.frexp(x[a:a + _CHUNK])
        big = np.ldexp(m, 53).astype(np.int64)
        shift = e.astype(np.int64) + 1074              # >= 1 for every finite float64
        hi = np.bincount(shift, weights=(big >> _HALF).astype(np.float64))
        lo = np.bincount(shift, weights=(big & ((1 << _HALF) - 1)).astype(np.float64))
        for s in np.flatnonzero((hi != 0) | (lo != 0)).tolist():
            total += ((int(hi[s]) << _HALF) + int(lo[s])) << s
    return total


def to_float(total: int) -> float:
    """Return the float64 nearest to a sum of :func:`exact_sum`, rounded once.

    Past the largest float64 it is ±inf, as float addition overflows.
    """
    try:
        return total / (1 << _UNIT)
    except OverflowError:
        return math.inf if total > 0 else -math.inf
