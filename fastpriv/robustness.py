"""r-robustness under distribution-based background knowledge (Wong et al.).

An adversary knows QI-based distributions p(signature : value) (:class:`Knowledge`), the
release (which individuals share a group and the group's multiset of sensitive values) and
every individual's exact QI values. Every *possible world* — a distinct assignment of a
group's multiset to its tuples — is weighted by the product of the tuples' probabilities,
and p(t : x) is the weight of the worlds giving x to t over the total (spec
``robustness.md``). A release is **r-robust** when p(t : x) ≤ 1/r for every tuple t, value
x and known attribute set (not exceeding: the one non-strict threshold of fastpriv).

What is here
------------
* :func:`posterior` — binary model, one group: p_j = f_j E_{n-1}(f_{-j}) / E_n(f), by the
  stable O(N·min(n, N-n)) prefix/suffix elementary-symmetric algorithm (or enumeration, or
  exactly with fractions). The papers call exact computation intractable and fall back to
  the Δ bound; it is polynomial.
* :func:`posterior_multivalued` — full distributions: the normaliser is a permanent
  (#P-hard). Exact by a layered DP over the multiset of used values (O(Π(m_k+1)·K), all
  terms positive — the default), Ryser's formula in Gray-code order over column
  multiplicities (loses digits to cancellation; it reports how many) or enumeration.
* :func:`delta_ceil`, :func:`min_group_size`, :func:`delta_check` — Theorem 1's Δ bound in
  the pole-free form, its inverse (inequality 5) and a per-group check. The bound
  certifies r-robustness **only** in the binary model for a value occurring exactly once
  (brute force shows it false otherwise); the exact posterior is the authority.
* :func:`audit` — every tuple, attribute set and sensitive value of a released table:
  maximum posterior with its witness, problematic tuples, per-group maxima, which groups the
  Δ bound certifies and which needed the exact posterior, undefined posteriors (reported,
  never crashed on), seconds per phase. It reads the release's row view
  (:mod:`fastpriv.rows`), so it runs from raw rows or from distinct rows with a
  multiplicity (``weight=``) alike.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from ._budget import ESP_OP_SECONDS, MAX_SECONDS, check_max_seconds, check_seconds, esp_work
from ._progress import Estimate
from ._validation import (
    check_choice,
    check_int,
    check_nonnegative,
    check_r,
    kernel_array,
    real_array,
    value_codes,
)
from .errors import InputError, InputTypeError
from .knowledge import Knowledge
from .results import Result, Witness, json_safe

__all__ = [
    "posterior",
    "posterior_batch",
    "posterior_multivalued",
    "delta_ceil",
    "min_group_size",
    "delta_check",
    "DeltaCheck",
    "audit",
    "RobustnessAudit",
    "RobustnessWitness",
    "Knowledge",
    "MAX_ENUMERATION_WORLDS",
    "MAX_DP_STATES",
    "MAX_RYSER_TUPLES",
]

#: Largest number of possible worlds :func:`posterior` / :func:`posterior_multivalued`
#: enumerate (``method="enumerate"``).
MAX_ENUMERATION_WORLDS = 20_000_000
#: Largest number of DP states Π(m_k + 1) of the multi-valued DP (memory ≈ 24 B/state).
MAX_DP_STATES = 1 << 22
#: Largest group handled by Ryser's formula (2^N terms for distinct values).
MAX_RYSER_TUPLES = 25

_MODELS = ("binary", "multivalued")
_STATUS_TEXT = {1: "E_n(f) = 0: no possible world has positive probability",
                2: "recomputed in log space",
                3: "numerically unreliable (underflow or cancellation)"}


# ====================================================================== validation helpers
def _nblocks() -> int:
    import numba

    return int(numba.get_num_threads()) * 8


def _group_desc(group: Any) -> str:
    return "the group" if group is None else f"group {group!r}"


def _is_exact(x: Any) -> bool:
    return isinstance(x, (Fraction, numbers.Integral)) and not isinstance(x, bool)


def _check_f(f: Any, *, exact: bool, name: str = "f") -> Any:
    if isinstance(f, (str, bytes, Mapping)):
        raise InputTypeError(f"{name} must be a sequence of probabilities, got {type(f).__name__}")
    if exact:
        out = []
        for i, v in enumerate(list(f)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise InputTypeError(f"{name}[{i}] must be a real number, got {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise InputError(f"{name}[{i}] is not finite: {v!r}")
            q = Fraction(v)
            if not 0 <= q <= 1:
                raise InputError(f"{name}[{i}] must be in [0, 1], got {v!r}")
            out.append(q)
        if not out:
            raise InputError(f"{name} is empty: a group has at least one tuple")
        return out
    a = real_array(f, name)   # strings ("0.5") and booleans are refused, not parsed
    if a.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.size == 0:
        raise InputError(f"{name} is empty: a group has at least one tuple")
    bad = ~np.isfinite(a)
    if bad.any():
        raise InputError(f"{name} has non-finite values at positions "
                         f"{np.flatnonzero(bad)[:5].tolist()}")
    out_ = (a < 0) | (a > 1)
    if out_.any():
        i = int(np.flatnonzero(out_)[0])
        raise InputError(f"{name} must be in [0, 1]; {name}[{i}] = {a[i]!r}")
    return a


def _check_n(n_x: Any, N: int) -> int:
    if isinstance(n_x, bool) or not isinstance(n_x, numbers.Integral):
        raise InputTypeError(f"n_x must be an integer, got {type(n_x).__name__} {n_x!r}")
    n = int(n_x)
    if not 0 <= n <= N:
        raise InputError(f"n_x must be between 0 and the group size {N}, got {n}")
    return n


def _undefined_message(f: Sequence, n: int, group: Any) -> str:
    ones = sum(1 for v in f if v >= 1)
    pos = sum(1 for v in f if v > 0)
    if ones > n:
        why = (f"{ones} tuples have f = 1 but x occurs only n_x = {n} time"
               f"{'s' if n != 1 else ''}")
    else:
        why = f"only {pos} tuple{'s' if pos != 1 else ''} have f > 0 but x occurs n_x = {n} times"
    return (f"posterior undefined for {_group_desc(group)}: E_n(f) = 0 ({why}); the "
            "knowledge contradicts the release, so no possible world has positive "
            "probability")


# ====================================================================== binary posterior
def posterior(f: Sequence[float], n_x: int, *, method: str = "esp", exact: bool = False,
              group: Any = None) -> Any:
    """Binary-model posteriors p(t_j : x) of every tuple of one group.

    p_j = f_j · E_{n-1}(f_{-j}) / E_n(f), with f_j = p(sig(t_j) : x), n = n_x the number of
    x in the group and E_d the elementary symmetric "Poisson-binomial" coefficients
    [z^d] Π_i ((1 - f_i) + f_i z) (Wong et al., Section 3 and Table 5; spec
    robustness.md). Σ_j p_j = n_x.

    Parameters
    ----------
    f : sequence of float (or Fraction)
        p(sig_j : x) per tuple, in [0, 1] (exact 0 and 1 allowed).
    n_x : int
        Occurrences of x in the group, 0 ≤ n_x ≤ len(f).
    method : {"esp", "enumerate"}
        ``"esp"``: stable prefix/suffix algorithm, O(N·min(n, N-n)), no polynomial
        division, running log-scale (groups of any size). ``"enumerate"``: every one of the
        C(N, n) possible worlds (≤ :data:`MAX_ENUMERATION_WORLDS`), weights accumulated
        relative to the running maximum.
    exact : bool
        Compute with :class:`fractions.Fraction` (floats are converted exactly) and return
        a list of Fractions — decides ties against 1/r exactly.
    group : optional
        A label for error messages.

    Returns
    -------
    numpy.ndarray of float64 (or list of Fraction when ``exact``)

    Raises
    ------
    ValueError
        When E_n(f) = 0 (more than n_x tuples have f = 1, or fewer than n_x have f > 0):
        the posterior is undefined; the message names the group.

    Examples
    --------
    >>> posterior([0.5, 0.5, 0.2, 0.2], 2).round(4)          # Table 5: 8/11, 3/11
    array([0.7273, 0.7273, 0.2727, 0.2727])
    >>> posterior([Fraction(1, 2)] * 2 + [Fraction(1, 5)] * 2, 2, exact=True)[0]
    Fraction(8, 11)

    """
    check_choice(method, "method", ("esp", "enumerate"))
    fv = _check_f(f, exact=exact)
    N = len(fv)
    n = _check_n(n_x, N)
    ones = sum(1 for v in fv if v >= 1)
    pos = sum(1 for v in fv if v > 0)
    if not ones <= n <= pos:
        raise InputError(_undefined_message(list(fv), n, group))
    if exact:
        if method == "enumerate":
            return _exact_enumerate(fv, n)
        return _exact_esp(fv, n)
    from ._kernels import possible_worlds as pw

    if method == "enumerate":
        worlds = math.comb(N, n)
        if worlds > MAX_ENUMERATION_WORLDS:
            raise InputError(f"method='enumerate': {_group_desc(group)} has C({N}, {n}) = "
                             f"{worlds} possible worlds (limit {MAX_ENUMERATION_WORLDS}); "
                             "use method='esp'")
        st, p, _ = pw.binary_enumerate(kernel_array(fv, np.float64), n)
    else:
        st, p, _, _ = pw.binary_loo(kernel_array(fv, np.float64), n, int(pw.PREFIX_LIMIT),
                                    0, 0)
    if st == pw.STATUS_UNDEFINED:  # pragma: no cover - excluded by the structural test
        raise InputError(_undefined_message(list(fv), n, group))
    return np.minimum(p, 1.0)


def _exact_esp(f: list[Fraction], n: int) -> list[Fraction]:
    N = len(f)
    zero = Fraction(0)
    pre = [[Fraction(1)] + [zero] * n]
    for j in range(N):
        c = pre[-1]
        pre.append([(1 - f[j]) * c[d] + (f[j] * c[d - 1] if d else zero) for d in range(n + 1)])
    suf = [Fraction(1)] + [zero] * n
    out: list[Fraction] = [zero] * N
    for j in range(N - 1, -1, -1):
        P = pre[j]
        A = sum((P[a] * suf[n - 1 - a] for a in range(n)), zero)
        B = sum((P[a] * suf[n - a] for a in range(n + 1)), zero)
        den = f[j] * A + (1 - f[j]) * B
        out[j] = f[j] * A / den
        suf = [(1 - f[j]) * suf[d] + (f[j] * suf[d - 1] if d else zero) for d in range(n + 1)]
    return out


def _exact_enumerate(f: list[Fraction], n: int) -> list[Fraction]:
    import itertools

    N = len(f)
    if math.comb(N, n) > MAX_ENUMERATION_WORLDS:
        raise InputError(f"method='enumerate': C({N}, {n}) possible worlds is too many")
    acc = [Fraction(0)] * N
    tot = Fraction(0)
    for pos in itertools.combinations(range(N), n):
        s = set(pos)
        w = Fraction(1)
        for i in range(N):
            w *= f[i] if i in s else 1 - f[i]
        tot += w
        for i in pos:
            acc[i] += w
    return [a / tot for a in acc]


def posterior_batch(f: Any, offsets: Any, n_x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Binary-model posteriors of many groups in one parallel kernel call.

    Parameters
    ----------
    f : array-like of float
        Concatenated p(sig_j : x) of every segment (a group and one value x).
    offsets : array-like of int, length S + 1
        Segment s is ``f[offsets[s]:offsets[s+1]]`` (at least one tuple each).
    n_x : array-like of int, length S
        Occurrences of x in each segment's group.

    Returns
    -------
    p : numpy.ndarray
        Posteriors, aligned with ``f``; NaN for segments whose posterior is undefined.
    log_e : numpy.ndarray
        log E_n(f) per segment (-inf where undefined): the log-likelihood of the counts.

    """
    from ._kernels import possible_worlds as pw

    fa = _check_f(f, exact=False)
    off = np.asarray(offsets)
    if off.ndim != 1 or off.size < 2 or not np.issubdtype(off.dtype, np.integer):
        raise InputError("offsets must be a 1-D integer array of length S + 1 >= 2")
    off = off.astype(np.int64)
    if off[0] != 0 or off[-1] != fa.size or (np.diff(off) < 1).any():
        raise InputError("offsets must start at 0, end at len(f) and increase strictly")
    n = np.asarray(n_x)
    if n.shape != (off.size - 1,) or not np.issubdtype(n.dtype, np.integer):
        raise InputError(f"n_x must be an integer array with one entry per segment "
                         f"({off.size - 1})")
    n = n.astype(np.int64)
    if (n < 0).any() or (n > np.diff(off)).any():
        raise InputError("n_x must satisfy 0 <= n_x[s] <= segment size")
    p, st, log_e = pw.binary_posteriors_csr(kernel_array(off, np.int64),
                                            kernel_array(fa, np.float64),
                                            kernel_array(n, np.int64), int(pw.PREFIX_LIMIT),
                                            _nblocks())
    return np.minimum(p, 1.0), log_e


# ====================================================================== multi-valued
def _mv_method(method: str, N: int, mult: Sequence[int], max_states: int,
               group: Any) -> int:
    from ._kernels import possible_worlds as pw

    states = 1
    for m in mult:
        states *= m + 1
    if method == "dp" or (method == "auto" and states <= max_states):
        if states > max_states:
            raise InputError(f"method='dp': {_group_desc(group)} needs Π(m_k + 1) = {states} "
                             f"DP states (limit max_states={max_states})")
        return pw.METHOD_DP
    if method in ("ryser", "auto"):
        if N > MAX_RYSER_TUPLES:
            raise InputError(
                f"{_group_desc(group)} has {N} tuples and {states} multiset DP states: the "
                f"exact multi-valued posterior (a permanent, #P-hard) is limited to "
                f"{MAX_RYSER_TUPLES} tuples (Ryser) or {max_states} DP states. Use the "
                "binary model (model='binary'), or split the group")
        return pw.METHOD_RYSER
    return pw.METHOD_ENUMERATE


def posterior_multivalued(P: Sequence[Mapping[Any, Any]], values: Sequence[Any], *,
                          method: str = "auto", group: Any = None,
                          max_states: int = MAX_DP_STATES) -> dict[Any, np.ndarray]:
    """Multi-valued-model posteriors p(t_j : x) of one group, for every value x present.

    A possible world assigns the group's multiset ``values`` to its tuples; its weight is
    Π_j P[j][value of t_j] (Wong et al., equations 1–3 with full distributions).

    Parameters
    ----------
    P : sequence of mappings value -> probability
        The distribution p(sig_j : ·) of every tuple; values not listed have probability 0.
        Probabilities must be finite, in [0, 1] and sum to ≤ 1 per tuple.
    values : sequence
        The group's multiset of sensitive values (one per tuple).
    method : {"auto", "dp", "ryser", "enumerate"}
        ``"dp"``: layered DP over used multiplicities, O(Π(m_k+1)·K) time and memory, no
        cancellation (default when Π(m_k+1) ≤ ``max_states``). ``"ryser"``: Ryser's
        formula over column multiplicities in Gray-code order, O(Π(m_k+1)·N·K) time, O(N·K)
        memory, for up to :data:`MAX_RYSER_TUPLES` tuples (``"auto"`` falls back to it);
        inclusion–exclusion loses digits (it refuses when the cancellation ratio exceeds
        1e10). ``"enumerate"``: every distinct world (≤ :data:`MAX_ENUMERATION_WORLDS`).
    group : optional
        A label for error messages.
    max_states : int
        DP state limit.

    Returns
    -------
    dict value -> numpy.ndarray
        For every distinct value of ``values`` (sorted when the labels sort), the
        posterior of every tuple.

    Raises
    ------
    ValueError
        Invalid distributions; an undefined posterior (every world has probability 0);
        a group too large for the exact methods.

    Examples
    --------
    >>> post = posterior_multivalued([{"x": 0.4, "y": 0.4}, {"x": 0.2, "y": 0.4}], ["x", "y"])
    >>> post["x"].round(4)
    array([0.6667, 0.3333])

    """
    from ._kernels import possible_worlds as pw

    check_choice(method, "method", ("auto", "dp", "ryser", "enumerate"))
    if isinstance(P, Mapping) or isinstance(P, (str, bytes)):
        raise InputTypeError("P must be a sequence with one mapping value -> probability per tuple")
    P = list(P)
    vals = list(values) if not isinstance(values, (str, bytes)) else None
    if vals is None:
        raise InputTypeError("values must be a sequence (the group's multiset of values)")
    N = len(P)
    if N == 0:
        raise InputError("P is empty: a group has at least one tuple")
    if len(vals) != N:
        raise InputError(f"values has {len(vals)} entries but P has {N} tuples (one value "
                         "per tuple)")
    try:
        distinct = sorted(set(vals))
    except TypeError:
        distinct = list(dict.fromkeys(vals))
    K = len(distinct)
    M = np.zeros((N, K), dtype=np.float64)
    for j, row in enumerate(P):
        if not isinstance(row, Mapping):
            raise InputTypeError(f"P[{j}] must be a mapping value -> probability, got "
                            f"{type(row).__name__}")
        tot = 0.0
        for v, p in row.items():
            if isinstance(p, bool) or not isinstance(p, numbers.Real):
                raise InputTypeError(f"P[{j}][{v!r}] must be a real number, got {p!r}")
            pf = float(p)
            if not math.isfinite(pf) or not 0.0 <= pf <= 1.0:
                raise InputError(f"P[{j}][{v!r}] must be a finite probability in [0, 1], "
                                 f"got {p!r}")
            tot += pf
        if tot > 1.0 + 1e-9:
            raise InputError(f"P[{j}]: probabilities sum to {tot:.12g} > 1 (a distribution "
                             "over the sensitive values)")
        for k, v in enumerate(distinct):
            M[j, k] = float(row.get(v, 0.0))
    mult = np.array([vals.count(v) for v in distinct], dtype=np.int64)
    meth = _mv_method(method, N, mult.tolist(),
                      check_int(max_states, "max_states", minimum=1), group)
    if meth == pw.METHOD_ENUMERATE:
        worlds = math.factorial(N)
        for m in mult:
            worlds //= math.factorial(int(m))
        if worlds > MAX_ENUMERATION_WORLDS:
            raise InputError(f"method='enumerate': {_group_desc(group)} has {worlds} distinct "
                             f"worlds (limit {MAX_ENUMERATION_WORLDS}); use method='auto'")
        st, post, _ = pw.mv_enumerate(kernel_array(M, np.float64), kernel_array(mult, np.int64))
        cols = post.T
    else:
        out, st, _, _ = pw.mv_posteriors_one(kernel_array(M.ravel(), np.float64),
                                             kernel_array(mult, np.int64), int(meth))
        st = int(st)
        cols = out.reshape(K, N)
    if st == pw.STATUS_UNDEFINED:
        raise InputError(f"posterior undefined for {_group_desc(group)}: every possible world "
                         "has probability 0 (no assignment of the multiset gives every tuple "
                         "a value with positive probability)")
    if st == pw.STATUS_UNDERFLOW:
        raise InputError(f"{_group_desc(group)}: the multi-valued posterior is numerically "
                         "unreliable with this method (underflow, or Ryser cancellation "
                         "above 1e10); try method='dp'")
    return {v: np.clip(cols[k].copy(), 0.0, 1.0) for k, v in enumerate(distinct)}


# ====================================================================== Δ bound
def delta_ceil(N: Any, r: Any, f_max: Any) -> Any:
    """Theorem 1's bound Δ_ceil in the pole-free form.

    Δ_ceil = (N - r) f (1 - f) / ((r - 1) f + (N - 1)(1 - f)),  f = f_max

    (equal to the paper's (N - r) f / (f (r - 1)/(1 - f) + N - 1) for f < 1, without its
    pole at f = 1). If x occurs **exactly once** in a group of N ≥ r tuples and every
    f_v ≥ f_max - Δ_ceil, then p(t_v : x) ≤ 1/r in the binary model (and the bound is
    tight). For N = 1 the value is -(1 - f) (the continuous extension); for N < r it is
    negative, i.e. never satisfied (except at f ∈ {0, 1}, where it is 0 — see
    :func:`delta_check`). Δ_ceil increases with N (Lemma 1).

    Exact (``Fraction``) when every argument is an int or Fraction; NumPy arrays broadcast
    (float); otherwise a float.

    Examples
    --------
    >>> delta_ceil(3, 2, Fraction(1, 10))           # Table 7: 0.0474
    Fraction(9, 190)

    """
    if any(isinstance(a, np.ndarray) for a in (N, r, f_max)):
        Na = real_array(N, "N")
        ra = real_array(r, "r")
        fa = real_array(f_max, "f_max")
        if not (np.isfinite(Na).all() and np.isfinite(ra).all() and np.isfinite(fa).all()) \
                or not ((Na >= 1).all() and (ra > 1).all() and ((fa >= 0) & (fa <= 1)).all()):
            raise InputError("delta_ceil: need N >= 1, r > 1 and f_max in [0, 1] (finite)")
        num = (Na - ra) * fa * (1 - fa)
        den = (ra - 1) * fa + (Na - 1) * (1 - fa)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(Na == 1, -(1 - fa), num / np.where(den == 0, 1, den))
        return out
    if isinstance(N, bool) or not isinstance(N, numbers.Integral):
        raise InputTypeError(f"N must be an integer (group size), got {type(N).__name__} {N!r}")
    if N < 1:
        raise InputError(f"N must be >= 1, got {N}")
    check_r(r)
    if isinstance(f_max, bool) or not isinstance(f_max, numbers.Real):
        raise InputTypeError(f"f_max must be a real number, got {type(f_max).__name__} {f_max!r}")
    exact = _is_exact(r) and _is_exact(f_max)
    if exact:
        f = Fraction(f_max)
        rr = Fraction(r)
    else:
        f = float(f_max)
        rr = float(r)
        if not math.isfinite(f):
            raise InputError(f"f_max must be finite, got {f_max!r}")
    if not 0 <= f <= 1:
        raise InputError(f"f_max must be in [0, 1], got {f_max!r}")
    if N == 1:
        return -(1 - f)
    num = (N - rr) * f * (1 - f)
    den = (rr - 1) * f + (N - 1) * (1 - f)
    return num / den


def min_group_size(delta: Any, r: Any, f_max: Any) -> Any:
    """Smallest group size N ≥ r with Δ ≤ Δ_ceil(N, r, f_max) (inequality 5 of the paper).

    N ≥ (f (r-1) Δ / (1 - f) - Δ + r f) / (f - Δ), here evaluated in the equivalent
    pole-free form (r f (1-f) + Δ (r-1) f - Δ (1-f)) / ((1-f)(f - Δ)) and checked against
    :func:`delta_ceil` (so rounding never returns a size that fails the condition).
    Returns ``math.inf`` when no size works (Δ ≥ f_max with 0 < f_max < 1, or Δ > 0 with
    f_max ∈ {0, 1}). Exact when the arguments are ints/Fractions.

    Examples
    --------
    >>> min_group_size(Fraction(63, 410), 3, Fraction(3, 10))
    6

    """
    check_r(r)
    for name, v in (("delta", delta), ("f_max", f_max)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise InputTypeError(f"{name} must be a real number, got {type(v).__name__} {v!r}")
        if not math.isfinite(float(v)):
            raise InputError(f"{name} must be finite, got {v!r}")
    if not 0 <= f_max <= 1:
        raise InputError(f"f_max must be in [0, 1], got {f_max!r}")
    if delta < 0:
        raise InputError(f"delta must be >= 0, got {delta!r}")
    exact = _is_exact(delta) and _is_exact(r) and _is_exact(f_max)
    conv = Fraction if exact else float
    d, rr, f = conv(delta), conv(r), conv(f_max)
    n0 = max(2, math.ceil(rr))
    if f in (0, 1):
        return n0 if d == 0 else math.inf
    if d >= f:
        return math.inf
    bound = (rr * f * (1 - f) + d * (rr - 1) * f - d * (1 - f)) / ((1 - f) * (f - d))
    if not exact and not math.isfinite(bound):
        return math.inf
    N = max(n0, math.ceil(bound))
    # guard against rounding in float mode: move to the smallest N that passes
    while N > n0 and d <= delta_ceil(N - 1, r if exact else float(r), f):
        N -= 1
    while not d <= delta_ceil(N, r if exact else float(r), f):
        N += 1
    return N


@dataclass(frozen=True, eq=False)
class DeltaCheck(Result):
    """Theorem 1's condition for one group and one value x (see :func:`delta_check`).

    ``value`` is Δ_max = f_max - min f (compared with ``delta_ceil``); ``holds`` whether
    the condition holds, ``certifies`` whether it proves p(t : x) ≤ 1/r.
    """

    N: int
    r: Any
    n_x: int
    f_max: Any
    delta_max: Any
    delta_ceil: Any
    holds: bool
    certifies: bool
    reason: str

    @property
    def value(self) -> Any:
        """Δ_max, the spread of the group's probabilities."""
        return self.delta_max

    @property
    def params(self) -> dict:
        """The parameters: r and n_x."""
        return {"r": json_safe(self.r), "n_x": self.n_x}

    @property
    def witness(self) -> None:
        """No witness: the check is about one group."""
        return None

    def to_dict(self) -> dict:
        """JSON-safe form (Fractions as strings)."""
        return json_safe({k: (str(v) if isinstance(v, Fraction) else v)
                          for k, v in self.__dict__.items()})

    def summary(self) -> str:
        """One line: the condition and what it certifies."""
        return (f"Δ_max = {float(self.delta_max):.4g} vs Δ_ceil = {float(self.delta_ceil):.4g} "
                f"(N = {self.N}, r = {float(self.r):g}, n_x = {self.n_x}): {self.reason}")


def delta_check(f: Sequence[Any], r: Any, *, n_x: int = 1, tol: float = 0.0) -> DeltaCheck:
    """Theorem 1's Δ condition for one group and one value x.

    ``holds``: N ≥ r and Δ_max = f_max - min f ≤ Δ_ceil(N, r, f_max). ``certifies``:
    additionally n_x = 1 and 0 < f_max < 1 — only then does the condition imply
    p(t : x) ≤ 1/r (binary model; brute force: false for n_x ≥ 2 and in the
    multi-valued model, and at f_max ∈ {0, 1} with Δ = 0 the posterior is undefined).
    Exact with Fractions; float comparisons allow ``tol`` absolute slack.
    """
    check_r(r)
    check_nonnegative(tol, "tol")
    exact = all(_is_exact(v) for v in f) and _is_exact(r) if not isinstance(f, np.ndarray) \
        else False
    fv = _check_f(f, exact=exact)
    N = len(fv)
    n = _check_n(n_x, N)
    fmax = max(fv)
    dmax = fmax - min(fv)
    dc = delta_ceil(N, r, fmax if exact else float(fmax))
    slack = 0 if exact else tol
    holds = bool(N >= r and dmax <= dc + slack)
    if not holds:
        reason = "N < r" if N < r else "Δ_max > Δ_ceil"
    elif n != 1:
        reason = (f"x occurs {n} times: Theorem 1 needs exactly one occurrence "
                  "(e.g. N = 3, f ≡ 1/5, two x's gives p = 2/3 > 1/2 with Δ = 0)")
    elif not 0 < fmax < 1:
        reason = "f_max is 0 or 1: the posterior is undefined or forced, no certificate"
    else:
        reason = "certified: p(t : x) <= 1/r for every tuple (binary model)"
    certifies = bool(holds and n == 1 and 0 < fmax < 1)
    if not exact:
        fmax, dmax, dc = float(fmax), float(dmax), float(dc)
    return DeltaCheck(N=N, r=r, n_x=n, f_max=fmax, delta_max=dmax, delta_ceil=dc,
                      holds=holds, certifies=certifies, reason=reason)


# ====================================================================== audit
DELTA_NONE = 0
DELTA_CERTIFIED = 1
DELTA_EXACT = 2
DELTA_STATUS = {DELTA_NONE: "no sensitive value", DELTA_CERTIFIED: "certified by the Δ bound",
                DELTA_EXACT: "exact posterior needed"}


@dataclass(frozen=True, eq=False)
class RobustnessWitness(Witness):
    """The worst tuple of an r-robustness audit: who is linked to what, and how surely.

    ``row`` is the input row (of the release's row view), ``group`` its group's label,
    ``attribute_set`` the known QI attributes and ``signature`` the tuple's values on them,
    ``value`` the sensitive value, ``posterior`` p(t : value), ``n_x`` the occurrences of
    the value in the group of ``group_size`` individuals.
    """

    row: int
    group: Any
    attribute_set: tuple
    signature: tuple
    value: Any
    posterior: float
    n_x: int
    group_size: int

    def summary(self) -> str:
        """One line naming the tuple, its signature and its posterior."""
        sig = ", ".join(f"{a}={v}" for a, v in zip(self.attribute_set, self.signature,
                                                   strict=False))
        return (f"row {self.row} in group {self.group!r}: knowing that people with {sig} have "
                f"{self.value!r} at the adversary's rate singles them out (p = "
                f"{self.posterior:.4g}; {self.n_x} of the group's {self.group_size} have "
                f"{self.value!r})")


@dataclass(frozen=True, eq=False)
class RobustnessAudit(Result):
    """Result of :func:`audit` (r-robustness of a release under background knowledge).

    Attributes
    ----------
    value : float
        Maximum posterior p(t : x) over tuples, attribute sets and sensitive values.
    robust : bool
        ``value <= 1/r`` (within ``tol``) and every posterior could be computed.
    witness : RobustnessWitness or None
        Where the maximum is reached (row, group, attribute set, signature, value,
        posterior, n_x, group size).
    n_rows : int
        Individuals audited (Σ weight for weighted rows).
    problematic_rows, problematic_sets, problematic_values, problematic_posteriors :
        numpy arrays, one entry per (tuple, attribute set, value) with p > 1/r (rows as
        input row numbers, sets as indices into ``attribute_sets``, values as labels via
        ``values``). A row of weight w stands for w tuples and appears w times.
    row_max : numpy.ndarray
        Per row audited, its maximum posterior over sets and sensitive values (0 when its
        group holds no sensitive value; NaN when every posterior was undefined).
    row_weight : numpy.ndarray or None
        Multiplicity of each row audited (weighted rows), else ``None``.
    input_row : numpy.ndarray or None
        Input row number of each row audited (entry i of ``row_max``), ``None`` when no
        input row was dropped (by ``nulls="drop"`` or for weight 0).
    group_max : numpy.ndarray
        Per group, the maximum posterior (same conventions); ``group_witness_row`` is its
        tuple's input row number (-1: none).
    delta_status : numpy.ndarray of int8
        Per group: 0 no sensitive value, 1 certified by the Δ bound (binary model, every
        sensitive value once and the condition holds for every attribute set), 2 the
        exact posterior was needed (and computed).
    delta_holds : numpy.ndarray of bool
        Per group: Theorem 1's condition holds for every sensitive value present and
        every attribute set (in the multi-valued model it does *not* certify anything).
    certified_violations : int
        Groups certified by the bound whose exact posterior exceeds 1/r (0 unless ties
        within ``tol``; the multi-valued counterexamples are not counted here because
        nothing is certified in that model).
    undefined : list of dict
        Posteriors that do not exist (E_n(f) = 0: the knowledge contradicts the release),
        with group, attribute set, value and reason; or groups skipped as too large.
    seconds : dict
        Seconds per phase.

    """

    value: float
    robust: bool
    complete: bool
    r: float
    threshold: float
    tol: float
    model: str
    witness: RobustnessWitness | None
    n_rows: int
    n_groups: int
    attribute_sets: tuple
    values: tuple
    sensitive_values: tuple
    problematic_rows: np.ndarray
    problematic_sets: np.ndarray
    problematic_values: np.ndarray
    problematic_posteriors: np.ndarray
    row_max: np.ndarray
    row_weight: np.ndarray | None
    group_max: np.ndarray
    group_witness_row: np.ndarray
    group_witness_set: np.ndarray
    group_witness_value: np.ndarray
    input_row: np.ndarray | None
    delta_status: np.ndarray
    delta_holds: np.ndarray
    certified_violations: int
    undefined: list
    knowledge: dict
    seconds: dict = field(compare=False)

    @property
    def params(self) -> dict:
        """The parameters of the audit."""
        return {"r": self.r, "tol": self.tol, "model": self.model,
                "attribute_sets": [list(a) for a in self.attribute_sets],
                "sensitive_values": list(self.sensitive_values), "knowledge": self.knowledge}

    @property
    def n_problematic(self) -> int:
        """Number of (tuple, attribute set, value) triples with p > 1/r."""
        return int(self.problematic_rows.shape[0])

    @property
    def n_problematic_rows(self) -> int:
        """Number of distinct tuples (individuals) with some p > 1/r."""
        rows = np.unique(self.problematic_rows)
        if self.row_weight is None:
            return int(rows.shape[0])
        if self.input_row is not None:
            rows = np.searchsorted(self.input_row, rows)
        return int(self.row_weight[rows].sum())

    @property
    def n_certified(self) -> int:
        """Groups certified r-robust by the Δ bound alone."""
        return int((self.delta_status == DELTA_CERTIFIED).sum())

    @property
    def n_exact(self) -> int:
        """Groups holding a sensitive value that the Δ bound does not certify."""
        return int((self.delta_status == DELTA_EXACT).sum())

    @property
    def n_no_sensitive(self) -> int:
        """Groups without any sensitive value (p = 0 for every sensitive value)."""
        return int((self.delta_status == DELTA_NONE).sum())

    def problematic_table(self) -> pa.Table:
        """Return the problematic (row, attribute set, value, posterior) as an Arrow table."""
        sets = [",".join(a) for a in self.attribute_sets]
        return pa.table({
            "row": pa.array(self.problematic_rows, pa.int64()),
            "attribute_set": pa.array([sets[i] for i in self.problematic_sets], pa.string()),
            "value": pa.array([self.values[i] for i in self.problematic_values]),
            "posterior": pa.array(self.problematic_posteriors, pa.float64()),
        })

    def to_dict(self, max_items: int = 100) -> dict:
        """JSON-safe summary (lists truncated to ``max_items``)."""
        order = np.argsort(-self.problematic_posteriors, kind="stable")[:max_items]
        sets = [list(a) for a in self.attribute_sets]
        worst = [{"row": int(self.problematic_rows[i]),
                  "attribute_set": sets[int(self.problematic_sets[i])],
                  "value": self.values[int(self.problematic_values[i])],
                  "posterior": float(self.problematic_posteriors[i])} for i in order]
        return json_safe({
            "model": self.model, "r": self.r, "threshold": self.threshold, "tol": self.tol,
            "value": self.value, "robust": self.robust, "complete": self.complete,
            "witness": self.witness, "params": self.params, "n_rows": self.n_rows,
            "n_groups": self.n_groups,
            "attribute_sets": sets, "sensitive_values": list(self.sensitive_values),
            "n_problematic": self.n_problematic,
            "n_problematic_rows": self.n_problematic_rows,
            "problematic": worst,
            "groups": {"certified_by_delta": self.n_certified,
                       "exact_posterior_needed": self.n_exact,
                       "no_sensitive_value": self.n_no_sensitive,
                       "delta_condition_holds": int(self.delta_holds.sum()),
                       "certified_violations": self.certified_violations,
                       "over_threshold": int(np.nansum(self.group_max > self.threshold
                                                       * (1 + self.tol)))},
            "n_undefined": len(self.undefined),
            "undefined": self.undefined[:max_items],
            "knowledge": self.knowledge,
            "seconds": self.seconds,
        })

    def summary(self, *, verbose: bool = False) -> str:
        """Summarise the audit in plain words: the verdict, who is exposed and how much.

        ``verbose`` adds the internal counts (problematic (tuple, set, value) triples, groups
        certified by the Δ bound or decided by the exact posterior).
        """
        verdict = ("PASS" if self.robust else "FAIL" if self.complete else "UNDECIDED")
        lines = [f"{verdict}: r-robustness at r = {self.r:g} — nobody may be linked to a "
                 f"sensitive value with probability above 1/r = {self.threshold:.4g} by "
                 f"statistics over the quasi-identifiers ({self.model} model)."]
        if self.n_problematic_rows:
            lines.append(f"  {self.n_problematic_rows:,} of {self.n_rows:,} people exceed it; "
                         f"the worst posterior is {self.value:.4g}.")
        else:
            lines.append(f"  The highest posterior is {self.value:.4g}.")
        if self.witness:
            lines.append(f"  Worst case: {self.witness.summary()}.")
        if verbose:
            lines.append(f"  problematic: {self.n_problematic} (tuple, set, value) triples on "
                         f"{self.n_problematic_rows} of {self.n_rows} rows")
            lines.append(f"  groups: {self.n_certified} certified by the Δ bound, "
                         f"{self.n_exact} needed the exact posterior, {self.n_no_sensitive} "
                         f"without a sensitive value (of {self.n_groups})")
        if self.undefined:
            lines.append(f"  undefined posteriors: {len(self.undefined)}")
        return "\n".join(lines)


#: the most (tuple, tested value) entries one group may need (8 bytes each, several arrays)
MAX_GROUP_ENTRIES = 1 << 27


def _check_group_cost(cost: np.ndarray, groups: np.ndarray, sizes: np.ndarray,
                      labels: Any) -> None:
    """Refuse, before allocating, a group whose posterior tables cannot fit in memory.

    A group's posteriors are computed for every tuple and every value tested in it; one group
    of 10⁵ tuples with 10⁵ values needs 10¹⁰ entries, and chunking cannot split a group.
    """
    if cost.size == 0 or int(cost.max()) <= MAX_GROUP_ENTRIES:
        return
    i = int(np.argmax(cost))
    g = int(groups[i])
    raise InputError(f"group {labels()[g]!r} has {int(sizes[g]):,} tuples and "
                     f"{int(cost[i]) // max(int(sizes[g]), 1):,} values to test: its posteriors "
                     f"need {int(cost[i]):,} entries (about {int(cost[i]) * 8 * 4 / 2**30:,.0f} "
                     "GiB); restrict sensitive_values= to the values that need protecting, or "
                     "split the group")


def audit(data: Any, *, qi: Sequence[str] | None = None, sensitive: str | None = None,
          group: str | Sequence[str] | None = None, r: float,
          knowledge: Knowledge | None = None, sensitive_values: Sequence[Any] | None = None,
          model: str = "binary", max_set_size: int | None = None,
          epsilon: float = 0.01, confidence: float = 0.9, min_support: int | None = None,
          tol: float = 1e-12, weight: str | None = None, nulls: str = "error",
          max_states: int = MAX_DP_STATES, on_large: str = "error",
          chunk_entries: int = 1 << 22,
          max_seconds: float | None = MAX_SECONDS) -> RobustnessAudit:
    """Audit a released table for r-robustness (Wong et al., Definition 3).

    For every tuple t, every sensitive value x and every attribute set A of the knowledge,
    compute the exact posterior p(t : x) (binary model: one batched prefix/suffix ESP
    kernel call per chunk and attribute set; multi-valued: DP / Ryser per group) and
    compare it with 1/r (p > 1/r is a breach; r-robust means ≤ 1/r). Also evaluates
    Theorem 1's Δ condition per group, which certifies a group in the binary model when
    every sensitive value occurs once — the report says which groups the bound certifies
    and which needed the exact posterior.

    Input shape
    -----------
    The adversary knows every individual's exact QI values and group, so the audit reads
    the release's row-level view (:class:`fastpriv.rows.RowView`): one row per individual
    (or distinct rows with a multiplicity, ``weight=``) with the exact QI values, the group
    and the true sensitive value — e.g. Anatomy's QI table joined with its sensitive
    table, or an original table plus the group ids an anonymizer produced. ``data`` is that
    table, or a :class:`~fastpriv.Release` built from it with
    ``Release.from_table(table, qi=..., group=..., sensitive=...)``.

    Parameters
    ----------
    data : table-like or Release
        The released table (see above): pyarrow/pandas/polars, Parquet/CSV path, ..., or a
        Release carrying a row view of the QI columns.
    qi : sequence of str, optional
        QI columns. Required when ``knowledge`` is None (it is derived from ``data`` with
        every attribute subset up to ``max_set_size``), except for a Release built with its
        QI columns, whose row view's are the default; with a knowledge object, only its
        attribute sets within ``qi`` are used (all when ``qi`` is None).
    sensitive : str
        Sensitive column (default for a Release: its sensitive column name).
    group : str or list of str
        Group-id column(s) (tables only).
    r : float
        Privacy parameter, r > 1; the threshold is 1/r.
    knowledge : Knowledge, optional
        The adversary's distributions. Default: :meth:`Knowledge.derive` of ``data`` (the
        true conditional frequencies — the worst case) with ``max_set_size``, ``epsilon``,
        ``confidence``, ``min_support``.
    sensitive_values : sequence, optional
        The values X_s that must not be linked (default: every value).
    model : {"binary", "multivalued"}
        Binary (default; the papers' Tables 4–5 and proofs) or the full multi-valued model.
    max_set_size, epsilon, confidence, min_support :
        Parameters of the derived knowledge (see :meth:`Knowledge.derive`).
    tol : float
        Relative slack in the comparisons with 1/r (p > (1/r)(1 + tol) is problematic),
        absorbing float rounding at exact ties (the Δ bound is tight).
    weight : str, optional
        Multiplicity column (tables only): each row stands for ``weight`` identical
        individuals; the audit equals the one of the expanded table (rows are reported
        by their index among the rows of positive weight).
    nulls : {"error", "drop", "value"}
        Null policy for the used columns (tables only).
    max_states, on_large :
        Multi-valued model: DP state limit; groups beyond it and beyond
        :data:`MAX_RYSER_TUPLES` tuples raise (``on_large="error"``) or are reported in
        ``undefined`` and make the audit incomplete (``"report"``).
    chunk_entries : int
        Memory bound: posteriors are computed for at most about this many (tuple, value)
        entries at a time.
    max_seconds : float or None
        Time bound (default :data:`fastpriv._budget.MAX_SECONDS`; None: none). The
        posteriors of a group of N tuples with n of x cost O(N · min(n, N − n)) — quadratic
        in its size, hours for groups of 10⁶ — so their work is estimated from the group
        sizes before any is done; beyond the bound an :class:`InputError` gives the
        estimate, and a long run within it shows its estimate on stderr.

    Returns
    -------
    RobustnessAudit

    """
    t_start = time.perf_counter()
    seconds: dict[str, float] = {}
    from .release import row_qi

    r, qi = _check_audit_args(r=r, tol=tol, model=model, on_large=on_large,
                              qi=row_qi(data, qi), knowledge=knowledge)
    max_states = check_int(max_states, "max_states", minimum=1)
    chunk_entries = check_int(chunk_entries, "chunk_entries", minimum=1)
    max_seconds = check_max_seconds(max_seconds)
    st = _prepare(data, qi=qi, sensitive=sensitive, group=group, knowledge=knowledge,
                  weight=weight, nulls=nulls)
    seconds["prepare"] = time.perf_counter() - t_start

    t0 = time.perf_counter()
    knowledge, sets = _audit_knowledge(st, knowledge, qi=qi, model=model,
                                       max_set_size=max_set_size, epsilon=epsilon,
                                       confidence=confidence, min_support=min_support)
    seconds["knowledge"] = time.perf_counter() - t0

    xs = value_codes(sensitive_values, st.values)
    threshold = 1.0 / float(r)
    thr_eff = threshold * (1.0 + float(tol))
    t0 = time.perf_counter()
    sig_by_set, mat_by_set = _signatures(st, knowledge, sets, xs, model)
    seconds["signatures"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    post = _Posteriors(st, sets, xs)
    post.plan(model=model, max_states=max_states, on_large=on_large,
              chunk_entries=chunk_entries)
    est = post.seconds(model)
    check_seconds(est, f"the posteriors of {int(post.work.sum()):,} (tuple, value) "
                  f"possible-world terms (the largest group holds "
                  f"{int(st.sizes.max(initial=0)):,} people)",
                  "audit fewer values (sensitive_values= / --sensitive-values), fewer "
                  "attribute sets (max_set_size= / --max-set-size), a release of smaller "
                  "groups, or raise max_seconds (--max-seconds; none waits)", max_seconds)
    with Estimate("r-robustness posteriors", est, len(post.chunk_bounds) - 1) as bar:
        post.run(sig_by_set, mat_by_set, model=model, r=float(r), thr_eff=thr_eff,
                 progress=bar)
    seconds["posteriors"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    post.contradictions(sig_by_set, mat_by_set, model=model)
    seconds["contradictions"] = time.perf_counter() - t0
    return _result(st, post, knowledge, sets, model=model, r=r, threshold=threshold,
                   thr_eff=thr_eff, tol=tol, seconds=seconds, t_start=t_start)


def _check_audit_args(*, r: Any, tol: Any, model: str, on_large: str, qi: Any,
                      knowledge: Any) -> tuple[Any, list[str] | None]:
    """Validate the scalar arguments of :func:`audit`; return r and qi as a list."""
    check_choice(model, "model", _MODELS)
    check_choice(on_large, "on_large", ("error", "report"))
    r = check_r(r)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1e-3:
        raise InputError(f"tol must be a small non-negative number, got {tol!r}")
    if knowledge is not None and not isinstance(knowledge, Knowledge):
        raise InputTypeError(f"knowledge must be a fastpriv.knowledge.Knowledge, got "
                             f"{type(knowledge).__name__}")
    if qi is not None:
        qi = [qi] if isinstance(qi, str) else list(qi)
        for c in qi:
            if not isinstance(c, str):
                raise InputTypeError(f"qi: column names must be strings, got {c!r}")
        if not qi:
            raise InputError("qi is empty")
    if knowledge is None and qi is None:
        raise InputError("qi= is required when knowledge is not given (the knowledge is "
                         "derived from the QI columns of data)")
    return r, qi


class _Prepared:
    """The release and its row view as the audit's kernels read them (one dtype each)."""

    def __init__(self, rel: Any) -> None:
        if rel.case != "svpi":
            raise InputError(f"r-robustness is defined for one value per individual; this "
                             f"release is {rel.case!r}")
        self.rel = rel
        self.view = rel.rows
        self.gcode = np.asarray(self.view.row_group, dtype=np.int32)
        self.R = int(self.gcode.shape[0])
        self.G = rel.n_groups
        self.values = rel.values
        self.V = len(self.values)
        self.indptr = kernel_array(rel.indptr, np.int64)
        self.codes = kernel_array(rel.codes, np.int32)
        self.counts = kernel_array(rel.counts, np.int64)
        goff, order = self.view.group_order
        self.goff = kernel_array(goff, np.int64)
        self.order = kernel_array(order, np.int64)
        self.sizes = np.diff(self.goff)
        self.entry_group = np.repeat(np.arange(self.G, dtype=np.int64), np.diff(self.indptr))

    def group_labels(self) -> list:
        return self.rel.group_labels


def _prepare(data: Any, *, qi: list[str] | None, sensitive: str | None, group: Any,
             knowledge: Knowledge | None, weight: str | None, nulls: str) -> _Prepared:
    """Step 1: the release with the row view of every column the audit reads."""
    from .release import release_with_rows

    cols = list(qi) if qi is not None else list(knowledge.columns)
    if not cols:
        raise InputError("the knowledge has no attribute set within qi")
    rel = release_with_rows(data, qi=cols, sensitive=sensitive, group=group, weight=weight,
                            nulls=nulls)
    return _Prepared(rel)


def _audit_knowledge(st: _Prepared, knowledge: Knowledge | None, *, qi: list[str] | None,
                     model: str, max_set_size: Any, epsilon: Any, confidence: Any,
                     min_support: Any) -> tuple[Knowledge, list[tuple]]:
    """Step 2: the adversary's knowledge and its attribute sets within ``qi``.

    Without a given knowledge, it is derived from the release's rows; a derived one given
    (e.g. from an engine's first pass) acts the same: with no attribute set left, the
    adversary knows the global rates.
    """
    derived = knowledge is None or knowledge.info.get("source") == "derived"
    if knowledge is None:
        knowledge = Knowledge.derive(st.rel, qi=qi, max_set_size=max_set_size,
                                     epsilon=epsilon, confidence=confidence,
                                     min_support=min_support)
    sets = knowledge.attribute_sets
    if qi is not None:
        sets = [A for A in sets if set(A) <= set(qi)]
    if not sets:
        if not derived or knowledge.fallback is None:
            raise InputError("the knowledge has no attribute set within qi")
        # no reliable signature at all: the adversary knows only the global rates, i.e. the
        # empty attribute set (posterior n_x / N); any other set would give at least that
        sets = [()]
    st.view.require(sorted({c for A in sets for c in A}), param="data")
    if model == "multivalued" and sets != [()]:
        knowledge.restrict(sets).check_multivalued()
    return knowledge, sets


def _signatures(st: _Prepared, knowledge: Knowledge, sets: list[tuple], xs: np.ndarray,
                model: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Step 3: every row's signature per attribute set and the probability matrices."""
    ccache: dict[str, np.ndarray] = {}
    sig_by_set, mat_by_set = [], []
    values = st.values
    for A in sets:
        if A == ():
            sig = np.full(st.R, -1, dtype=np.int64)
            M = np.array([[knowledge.fallback_for(v) for v in values]], dtype=np.float64)
        else:
            sig = knowledge.signature_index(st.view, A, column_codes=ccache)
            M = knowledge.probability_matrix(A, values)
        ns = M.shape[0] - 1
        sig = np.where(sig < 0, ns, sig).astype(np.int64)
        used = np.unique(sig)
        need = xs if model == "binary" else np.arange(st.V)
        sub = M[np.ix_(used, need)]
        if np.isnan(sub).any():
            i, j = np.argwhere(np.isnan(sub))[0]
            raise InputError(
                f"knowledge has no probability for "
                f"{knowledge.describe_missing(A, int(used[i]), values[int(need[j])])} and no "
                "fallback; give it, or build the knowledge with fallback= (e.g. the global "
                "rates)")
        sig_by_set.append(kernel_array(sig, np.int64))
        mat_by_set.append(kernel_array(M, np.float64))
    return sig_by_set, mat_by_set


class _Posteriors:
    """Step 4: the exact posteriors of every (tuple, tested value) segment.

    Computed chunk by chunk, reduced on the fly to per-segment, per-row and problematic
    entries.
    """

    def __init__(self, st: _Prepared, sets: list[tuple], xs: np.ndarray) -> None:
        self.st = st
        self.sets = sets
        self.xs = xs
        xs_mask = np.zeros(st.V, dtype=bool)
        xs_mask[xs] = True
        self.seg_entry = np.flatnonzero(xs_mask[st.codes])   # CSR positions of (group, x)
        self.seg_group = st.entry_group[self.seg_entry]
        self.seg_value = st.codes[self.seg_entry].astype(np.int64)
        self.seg_n = st.counts[self.seg_entry].astype(np.int64)
        self.k_per_group = np.bincount(self.seg_group, minlength=st.G)
        self.groups_with = np.flatnonzero(self.k_per_group > 0)
        nA, S, R = len(sets), self.seg_entry.shape[0], st.R
        self.seg_max = np.full((nA, S), np.nan)
        self.seg_arg_row = np.full((nA, S), -1, dtype=np.int64)
        self.seg_holds = np.zeros((nA, S), dtype=bool)
        self.seg_interior = np.zeros((nA, S), dtype=bool)
        self.seg_status = np.zeros((nA, S), dtype=np.int8)
        self.row_max = np.zeros(R, dtype=np.float64)
        self.row_any = np.zeros(R, dtype=bool)  # some defined posterior seen
        self.prob: list[list[np.ndarray]] = [[], [], [], []]   # rows, sets, values, p
        self.undefined: list[dict] = []
        self.skipped = np.zeros(st.G, dtype=bool)
        self.seg_start = np.zeros(st.G + 1, dtype=np.int64)
        self.seg_start[1:] = np.cumsum(self.k_per_group)
        self.mv_method = None
        self.chunk_bounds = [0]

    def plan(self, *, model: str, max_states: int, on_large: str, chunk_entries: int) -> None:
        """Choose the multi-valued method per group and cut the groups into chunks."""
        from ._kernels import possible_worlds as pw

        st = self.st
        if model == "multivalued":
            self.mv_method = np.full(st.G, -1, dtype=np.int64)
            for g in self.groups_with:
                states = 1
                for m in st.counts[st.indptr[g]:st.indptr[g + 1]]:
                    states *= int(m) + 1
                    if states > max_states:
                        break
                if states <= max_states:
                    self.mv_method[g] = pw.METHOD_DP
                elif st.sizes[g] <= MAX_RYSER_TUPLES:
                    self.mv_method[g] = pw.METHOD_RYSER
                elif on_large == "error":
                    raise InputError(
                        f"group {st.group_labels()[g]!r} has {int(st.sizes[g])} tuples and "
                        f"more than {max_states} multiset DP states: the exact multi-valued "
                        f"posterior (a permanent, #P-hard) is limited to {MAX_RYSER_TUPLES} "
                        "tuples (Ryser) or max_states DP states. Use model='binary', raise "
                        "max_states, or pass on_large='report' to skip such groups")
                else:
                    self.skipped[g] = True
                    self.undefined.append({"group": g, "attribute_set": None, "value": None,
                                           "reason": "group too large for the exact "
                                                     "multi-valued posterior (skipped)"})
        per_group = self.k_per_group if model == "binary" else np.diff(st.indptr)
        cost = (per_group * st.sizes)[self.groups_with]
        self.work = self._work(model, max_states)
        _check_group_cost(cost, self.groups_with, st.sizes, st.group_labels)
        acc = 0
        for i, c in enumerate(cost.tolist()):
            if acc and acc + c > chunk_entries:
                self.chunk_bounds.append(i)
                acc = 0
            acc += c
        self.chunk_bounds.append(self.groups_with.shape[0])

    def _work(self, model: str, max_states: int) -> np.ndarray:
        """Operations of the posteriors of each group, for every attribute set.

        Binary: :func:`fastpriv._budget.esp_work` per (group, tested value) segment.
        Multi-valued: the DP visits Π(m_k + 1) states with K values each, four passes
        (a group left to Ryser: 2^N · N terms).
        """
        st = self.st
        nA = max(len(self.sets), 1)
        if model == "binary":
            seg = esp_work(st.sizes[self.seg_group], self.seg_n)
            return nA * np.bincount(self.seg_group, weights=seg, minlength=st.G)
        work = np.zeros(st.G)
        for g in self.groups_with.tolist():
            if self.skipped[g]:
                continue
            m = st.counts[st.indptr[g]:st.indptr[g + 1]]
            states = float(np.prod(m.astype(np.float64) + 1.0))
            n = float(st.sizes[g])
            work[g] = 4.0 * states * m.size if states <= max_states else 2.0 ** n * n
        return nA * work

    def seconds(self, model: str) -> float:
        """Estimated seconds of :meth:`run` (:data:`fastpriv._budget.ESP_OP_SECONDS`)."""
        return float(self.work.sum()) * ESP_OP_SECONDS

    def run(self, sig_by_set: list, mat_by_set: list, *, model: str, r: float,
            thr_eff: float, progress: Any = None) -> None:
        """Compute every chunk (per multi-valued method) and attribute set."""
        from ._kernels import possible_worlds as pw

        for ci in range(len(self.chunk_bounds) - 1):
            if progress is not None:
                progress(ci, len(self.chunk_bounds) - 1)
            grp_all = self.groups_with[self.chunk_bounds[ci]:self.chunk_bounds[ci + 1]]
            if grp_all.size == 0:
                continue
            for meth in ([None] if model == "binary" else [pw.METHOD_DP, pw.METHOD_RYSER]):
                grp = grp_all if meth is None else grp_all[self.mv_method[grp_all] == meth]
                if grp.size:
                    self._chunk(grp, meth, sig_by_set, mat_by_set, r=r, thr_eff=thr_eff)

    def _chunk(self, grp: np.ndarray, meth: Any, sig_by_set: list, mat_by_set: list, *,
               r: float, thr_eff: float) -> None:
        from ._kernels import possible_worlds as pw
        from .rows import max_per_row

        st = self.st
        kg = self.k_per_group[grp]
        entry_rows, seg_off = pw.gather_segments(st.goff, st.order, kernel_array(grp, np.int64),
                                                 kernel_array(kg, np.int64))
        # global segment ids of this chunk (segments are grouped by group in CSR order)
        sid = _segment_ids(self.seg_start, grp, kg)
        sval = self.seg_value[sid]
        grp_seg = np.zeros(grp.size + 1, dtype=np.int64)
        grp_seg[1:] = np.cumsum(kg)
        grp_size = st.sizes[grp].astype(np.int64)
        chunk_rows, _ = pw.gather_segments(st.goff, st.order, kernel_array(grp, np.int64),
                                           kernel_array(np.ones(grp.size, np.int64), np.int64))
        seg_len = np.diff(seg_off)
        ro_rows = kernel_array(entry_rows, np.int64)
        ro_off = kernel_array(seg_off, np.int64)
        ro_val = kernel_array(sval, np.int64)
        src = None
        if meth is not None:
            # position of each segment's value inside its group's block (value-major)
            block = np.zeros(grp.size + 1, dtype=np.int64)
            block[1:] = np.cumsum(grp_size * np.diff(st.indptr)[grp])
            kidx = self.seg_entry[sid] - st.indptr[self.seg_group[sid]]
            src_start = block[:-1][np.repeat(np.arange(grp.size), kg)] + kidx * seg_len
            src = np.repeat(src_start - seg_off[:-1], seg_len) + np.arange(seg_off[-1])
        for a in range(len(self.sets)):
            f = pw.gather_f(sig_by_set[a], mat_by_set[a], ro_rows, ro_off, ro_val)
            if meth is None:
                p, status, _ = pw.binary_posteriors_csr(
                    ro_off, kernel_array(f, np.float64),
                    kernel_array(self.seg_n[sid], np.int64), int(pw.PREFIX_LIMIT), _nblocks())
                status = status.astype(np.int8)
            else:
                P, poff, mult, moff = pw.gather_blocks(
                    st.goff, st.order, kernel_array(grp, np.int64), st.indptr, st.codes,
                    st.counts, sig_by_set[a], mat_by_set[a])
                post, gst, _, _ = pw.mv_posteriors_csr(
                    kernel_array(P, np.float64), kernel_array(poff, np.int64),
                    kernel_array(mult, np.int64), kernel_array(moff, np.int64), int(meth))
                p = post[src]
                status = np.repeat(gst, kg).astype(np.int8)
                p[np.repeat(status != 0, seg_len)] = np.nan
            p = np.minimum(p, 1.0)
            smax, sarg, sfmax, sfmin, rmax, rseg = pw.reduce_segments(
                kernel_array(p, np.float64), kernel_array(f, np.float64), ro_off,
                kernel_array(grp_seg, np.int64), kernel_array(grp_size, np.int64))
            self.seg_max[a, sid] = smax
            self.seg_arg_row[a, sid] = entry_rows[sarg]
            self.seg_status[a, sid] = status
            # Δ condition per segment
            Ns = np.repeat(grp_size, kg).astype(np.float64)
            dc = delta_ceil(Ns, np.full(Ns.shape, r), sfmax)
            self.seg_holds[a, sid] = (Ns >= r) & (sfmax - sfmin <= dc)
            self.seg_interior[a, sid] = (sfmax > 0.0) & (sfmax < 1.0)
            rows_u, rmax_u = chunk_rows, rmax
            if st.view.weight is not None:      # a row once per unit: keep its units' max
                keep = max_per_row(chunk_rows, rmax)
                rows_u, rmax_u = chunk_rows[keep], rmax[keep]
            better = rmax_u > self.row_max[rows_u]
            self.row_max[rows_u[better]] = rmax_u[better]
            self.row_any[chunk_rows[rseg >= 0]] = True
            hit = np.flatnonzero(p > thr_eff)
            if hit.size:
                hseg = np.searchsorted(seg_off, hit, side="right") - 1
                for lst, arr in zip(self.prob, (entry_rows[hit],
                                                np.full(hit.size, a, dtype=np.int64),
                                                sval[hseg], p[hit]), strict=True):
                    lst.append(arr)

    def contradictions(self, sig_by_set: list, mat_by_set: list, *, model: str) -> None:
        """Step 5: posteriors that do not exist (E_n(f) = 0), named by group label."""
        from ._kernels import possible_worlds as pw

        st = self.st
        values = st.values
        for code, why in ((pw.STATUS_UNDEFINED, _STATUS_TEXT[1]),
                          (pw.STATUS_UNDERFLOW, _STATUS_TEXT[3])):
            for a, s in np.argwhere(self.seg_status == code)[:10000]:
                self.undefined.append({"group": int(self.seg_group[s]),
                                       "attribute_set": list(self.sets[a]),
                                       "value": values[int(self.seg_value[s])],
                                       "reason": why})
        if model == "binary":
            w = st.view.weight
            for a in range(len(self.sets)):
                rws, vls = pw.absent_certain(sig_by_set[a], mat_by_set[a],
                                             kernel_array(st.gcode, np.int32), st.indptr,
                                             st.codes, kernel_array(self.xs, np.int64))
                if w is not None:    # one entry per individual, as for the expanded table
                    rws, vls = np.repeat(rws, w[rws]), np.repeat(vls, w[rws])
                for i, x in zip(rws[:1000].tolist(), vls[:1000].tolist(), strict=True):
                    self.undefined.append({"group": int(st.gcode[i]),
                                           "attribute_set": list(self.sets[a]),
                                           "value": values[x], "row": int(i),
                                           "reason": "knowledge gives p(sig : x) = 1 but x "
                                                     "is absent from the group (E_0 = 0)"})
        if self.undefined:
            labels = st.group_labels()
            for u in self.undefined:
                u["group"] = labels[u["group"]]


def _group_reduction(st: _Prepared, post: _Posteriors) -> tuple:
    """Per group: the maximum posterior and where it is reached (row, set, value)."""
    S = post.seg_entry.shape[0]
    with np.errstate(invalid="ignore"):
        sm = np.where(np.isnan(post.seg_max), -1.0, post.seg_max)
    best_set = np.argmax(sm, axis=0) if S else np.zeros(0, dtype=np.int64)
    best = sm[best_set, np.arange(S)] if S else np.zeros(0)
    group_max = np.zeros(st.G, dtype=np.float64)
    gw_row = np.full(st.G, -1, dtype=np.int64)
    gw_set = np.full(st.G, -1, dtype=np.int64)
    gw_val = np.full(st.G, -1, dtype=np.int64)
    if S:
        order_s = np.lexsort((best, post.seg_group))
        sg = post.seg_group[order_s]
        top = order_s[np.flatnonzero(np.r_[sg[1:] != sg[:-1], True])]
        gsel = post.seg_group[top]
        group_max[gsel] = best[top]
        gw_set[gsel] = best_set[top]
        gw_row[gsel] = post.seg_arg_row[best_set[top], top]
        gw_val[gsel] = post.seg_value[top]
        group_max[group_max < 0] = np.nan        # every posterior of the group undefined
    group_max[post.skipped] = np.nan
    return group_max, gw_row, gw_set, gw_val


def _delta_status(st: _Prepared, post: _Posteriors, model: str) -> tuple:
    """Per group: whether Theorem 1's condition holds and whether it certifies the group."""
    G = st.G
    holds_g = np.ones(G, dtype=bool)
    once_g = np.ones(G, dtype=bool)
    interior_g = np.ones(G, dtype=bool)
    S = post.seg_entry.shape[0]
    if S:
        holds_g[post.seg_group[~post.seg_holds.all(axis=0)]] = False
        once_g[post.seg_group[post.seg_n != 1]] = False
        interior_g[post.seg_group[~post.seg_interior.all(axis=0)]] = False
        holds_g[post.skipped] = False
    status = np.full(G, DELTA_EXACT, dtype=np.int8)
    status[post.k_per_group == 0] = DELTA_NONE
    if model == "binary" and S:
        # Theorem 1 certifies: condition holds, every sensitive value once, 0 < f_max < 1
        cert = holds_g & once_g & interior_g & (post.k_per_group > 0)
        status[cert] = DELTA_CERTIFIED
    holds_g[post.k_per_group == 0] = True
    return holds_g, status


def _knowledge_info(knowledge: Knowledge, sets: list[tuple]) -> dict:
    kinfo = {"source": knowledge.info.get("source"), "attribute_sets": len(sets),
             "signatures": int(sum(knowledge.n_signatures(A) for A in sets if A))}
    for key in ("min_support", "epsilon", "confidence", "max_set_size"):
        if key in knowledge.info:
            kinfo[key] = knowledge.info[key]
    if knowledge.info.get("pruned"):
        kinfo["pruned_attribute_sets"] = len(knowledge.info["pruned"])
    return kinfo


def _result(st: _Prepared, post: _Posteriors, knowledge: Knowledge, sets: list[tuple], *,
            model: str, r: Any, threshold: float, thr_eff: float, tol: float,
            seconds: dict, t_start: float) -> RobustnessAudit:
    """Step 6: reduce to groups, decide, and name the worst tuple."""
    from ._kernels import possible_worlds as pw

    group_max, gw_row, gw_set, gw_val = _group_reduction(st, post)
    row_max = post.row_max
    row_max[~post.row_any & (post.k_per_group[st.gcode] > 0)] = np.nan
    row_max[post.skipped[st.gcode]] = np.nan
    holds_g, status = _delta_status(st, post, model)
    certified_violations = int(np.sum((status == DELTA_CERTIFIED)
                                      & (np.nan_to_num(group_max) > thr_eff)))
    finite = group_max[np.isfinite(group_max)]
    value = float(finite.max()) if finite.size else 0.0
    witness = None
    if finite.size and value > 0:
        g = int(np.nanargmax(np.where(np.isfinite(group_max), group_max, -1)))
        row, a, x = int(gw_row[g]), int(gw_set[g]), int(gw_val[g])
        e = np.flatnonzero((st.entry_group == g) & (st.codes == x))
        witness = RobustnessWitness(
            row=st.view.input_rows(row), group=st.rel.group_label(g), attribute_set=tuple(sets[a]),
            signature=tuple(st.view.label(c, row) for c in sets[a]), value=st.values[x],
            posterior=value, n_x=int(st.counts[e[0]]) if e.size else 0,
            group_size=int(st.sizes[g]))
    pr, ps_, pv, pp = (np.concatenate(lst) if lst else np.zeros(0, dtype=dt) for lst, dt in
                       zip(post.prob, (np.int64, np.int64, np.int64, np.float64),
                           strict=True))
    complete = not post.skipped.any() and not (post.seg_status == pw.STATUS_UNDERFLOW).any()
    seconds["total"] = time.perf_counter() - t_start
    return RobustnessAudit(
        value=value, robust=bool(complete and value <= thr_eff), complete=complete,
        r=float(r), threshold=threshold, tol=float(tol), model=model, witness=witness,
        n_rows=st.view.n_units, n_groups=st.G,
        attribute_sets=tuple(tuple(A) for A in sets), values=tuple(st.values),
        sensitive_values=tuple(st.values[i] for i in post.xs),
        problematic_rows=st.view.input_rows(pr),
        problematic_sets=ps_, problematic_values=pv, problematic_posteriors=pp,
        row_max=row_max, row_weight=st.view.weight, group_max=group_max,
        group_witness_row=st.view.input_rows(gw_row), group_witness_set=gw_set,
        group_witness_value=gw_val, input_row=st.view.input_row, delta_status=status,
        delta_holds=holds_g, certified_violations=certified_violations,
        undefined=post.undefined, knowledge=_knowledge_info(knowledge, sets), seconds=seconds)


def _segment_ids(seg_start_of_group: np.ndarray, grp: np.ndarray, kg: np.ndarray) -> np.ndarray:
    starts = seg_start_of_group[grp]
    total = int(kg.sum())
    base = np.repeat(starts - np.concatenate([[0], np.cumsum(kg)[:-1]]), kg)
    return base + np.arange(total)


def warmup() -> None:
    """Compute posteriors: batched ones through :func:`audit`, single groups too (warm-up).

    ``fastpriv warmup``'s workload of the model (the registry's ``warmup_workload``):
    binary and multi-valued models; one group's posterior by ESP and by enumeration.
    """
    f = np.array([0.5, 0.2, 0.7, 0.1, 0.4, 0.6])
    posterior_batch(f, [0, 3, 6], [1, 2])
    for method in ("esp", "enumerate"):
        posterior(list(f), 2, method=method)
    posterior_multivalued([{"x": 0.5, "y": 0.3}, {"x": 0.2, "y": 0.7}, {"x": 0.4, "y": 0.1}],
                          ["x", "y", "x"], method="enumerate")
    sigs = [f"s{j % 3}" for j in range(12)]
    table = pa.table({"sig": sigs, "g": [j // 4 for j in range(12)],
                      "s": ["x", "y", "x", "z"] * 3})
    know = Knowledge.from_dict({"sig": {f"s{j}": {"x": 0.2 + 0.2 * j, "y": 0.1, "z": 0.3}
                                        for j in range(3)}}, fallback=0.0)
    for model in ("binary", "multivalued"):
        audit(table, group="g", sensitive="s", r=2.0, knowledge=know, model=model)
