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
  never crashed on), timing.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from ._validation import check_choice, check_columns, kernel_array
from .errors import InputError, InputTypeError
from .knowledge import Knowledge

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


def _check_r(r: Any) -> Any:
    if isinstance(r, bool) or not isinstance(r, numbers.Real):
        raise InputTypeError(f"r must be a real number > 1, got {type(r).__name__} {r!r}")
    if not math.isfinite(float(r)) or not r > 1:
        raise InputError(f"r must be > 1, got {r!r}")
    return r


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
    try:
        a = np.asarray(f, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputTypeError(f"{name} must be a sequence of real numbers") from None
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
    meth = _mv_method(method, N, mult.tolist(), int(max_states), group)
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
        Na = np.asarray(N, dtype=np.float64)
        ra = np.asarray(r, dtype=np.float64)
        fa = np.asarray(f_max, dtype=np.float64)
        if (Na < 1).any() or (ra <= 1).any() or ((fa < 0) | (fa > 1)).any() \
                or not np.isfinite(fa).all():
            raise InputError("delta_ceil: need N >= 1, r > 1 and f_max in [0, 1]")
        num = (Na - ra) * fa * (1 - fa)
        den = (ra - 1) * fa + (Na - 1) * (1 - fa)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(Na == 1, -(1 - fa), num / np.where(den == 0, 1, den))
        return out
    if isinstance(N, bool) or not isinstance(N, numbers.Integral):
        raise InputTypeError(f"N must be an integer (group size), got {type(N).__name__} {N!r}")
    if N < 1:
        raise InputError(f"N must be >= 1, got {N}")
    _check_r(r)
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
    _check_r(r)
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


@dataclass(frozen=True)
class DeltaCheck:
    """Theorem 1's condition for one group and one value x (see :func:`delta_check`)."""

    N: int
    r: Any
    n_x: int
    f_max: Any
    delta_max: Any
    delta_ceil: Any
    holds: bool
    certifies: bool
    reason: str

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        from ._io import to_jsonable

        return to_jsonable({k: (str(v) if isinstance(v, Fraction) else v)
                            for k, v in self.__dict__.items()})


def delta_check(f: Sequence[Any], r: Any, *, n_x: int = 1, tol: float = 0.0) -> DeltaCheck:
    """Theorem 1's Δ condition for one group and one value x.

    ``holds``: N ≥ r and Δ_max = f_max - min f ≤ Δ_ceil(N, r, f_max). ``certifies``:
    additionally n_x = 1 and 0 < f_max < 1 — only then does the condition imply
    p(t : x) ≤ 1/r (binary model; brute force: false for n_x ≥ 2 and in the
    multi-valued model, and at f_max ∈ {0, 1} with Δ = 0 the posterior is undefined).
    Exact with Fractions; float comparisons allow ``tol`` absolute slack.
    """
    _check_r(r)
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
class RobustnessAudit:
    """Result of :func:`audit` (r-robustness of a release under background knowledge).

    Attributes
    ----------
    value : float
        Maximum posterior p(t : x) over tuples, attribute sets and sensitive values.
    robust : bool
        ``value <= 1/r`` (within ``tol``) and every posterior could be computed.
    witness : dict or None
        Where the maximum is reached: input ``row``, ``group`` (label), ``attribute_set``,
        ``signature`` (the tuple's values on it), ``value``, ``posterior``, ``n_x`` and
        ``group_size``.
    problematic_rows, problematic_sets, problematic_values, problematic_posteriors :
        numpy arrays, one entry per (tuple, attribute set, value) with p > 1/r (sets as
        indices into ``attribute_sets``, values as labels via ``values``).
    row_max : numpy.ndarray
        Per input row, its maximum posterior over sets and sensitive values (0 when its
        group holds no sensitive value; NaN when every posterior was undefined).
    group_max : numpy.ndarray
        Per group, the maximum posterior (same conventions).
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
    timing : dict
        Seconds per phase.

    """

    value: float
    robust: bool
    complete: bool
    r: float
    threshold: float
    tol: float
    model: str
    witness: dict | None
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
    group_max: np.ndarray
    group_witness_row: np.ndarray
    group_witness_set: np.ndarray
    group_witness_value: np.ndarray
    delta_status: np.ndarray
    delta_holds: np.ndarray
    certified_violations: int
    undefined: list
    knowledge: dict
    timing: dict

    @property
    def n_problematic(self) -> int:
        """Number of (tuple, attribute set, value) triples with p > 1/r."""
        return int(self.problematic_rows.shape[0])

    @property
    def n_problematic_rows(self) -> int:
        """Number of distinct tuples with some p > 1/r."""
        return int(np.unique(self.problematic_rows).shape[0])

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
        """JSON-friendly summary (lists truncated to ``max_items``)."""
        from ._io import to_jsonable

        order = np.argsort(-self.problematic_posteriors, kind="stable")[:max_items]
        sets = [list(a) for a in self.attribute_sets]
        worst = [{"row": int(self.problematic_rows[i]),
                  "attribute_set": sets[int(self.problematic_sets[i])],
                  "value": self.values[int(self.problematic_values[i])],
                  "posterior": float(self.problematic_posteriors[i])} for i in order]
        return to_jsonable({
            "model": self.model, "r": self.r, "threshold": self.threshold, "tol": self.tol,
            "value": self.value, "robust": self.robust, "complete": self.complete,
            "witness": self.witness, "n_rows": self.n_rows, "n_groups": self.n_groups,
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
            "timing": self.timing,
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
            w = self.witness
            sig = ", ".join(f"{a}={v}" for a, v in zip(w["attribute_set"], w["signature"],
                                                       strict=False))
            lines.append(f"  Worst case: row {w['row']} in group {w['group']!r}; knowing that "
                         f"people with {sig} have {w['value']!r} at the adversary's rate "
                         f"singles them out ({w['n_x']} of the group's {w['group_size']} "
                         f"have {w['value']!r}).")
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
          model: str = "binary", rows: Any = None, max_size: int | None = None,
          epsilon: float = 0.01, delta: float = 0.9, min_support: int | None = None,
          tol: float = 1e-12, nulls: str = "error", max_states: int = MAX_DP_STATES,
          on_large: str = "error", chunk_entries: int = 1 << 22) -> RobustnessAudit:
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
    the *auditor's* view of the release: one row per individual with the QI columns (exact,
    not generalized), the group-id column and the true sensitive value — e.g. Anatomy's
    QI table joined with its sensitive table, or an original table plus the group ids an
    anonymizer produced. Alternatively pass a :class:`~fastpriv.Release` built with
    ``Release.from_table`` and ``rows=`` the table with the QI columns in the same row
    order (then ``group`` is not needed).

    Parameters
    ----------
    data : table-like or Release
        The released table (see above): pyarrow/pandas/polars, Parquet/CSV path, ...
    qi : sequence of str, optional
        QI columns. Required when ``knowledge`` is None (it is derived from ``data`` with
        every attribute subset up to ``max_size``); with a knowledge object, only its
        attribute sets within ``qi`` are used (all when ``qi`` is None).
    sensitive : str
        Sensitive column (default for a Release: its sensitive column name).
    group : str or list of str
        Group-id column(s) (tables only).
    r : float
        Privacy parameter, r > 1; the threshold is 1/r.
    knowledge : Knowledge, optional
        The adversary's distributions. Default: :meth:`Knowledge.derive` of ``data`` (the
        true conditional frequencies — the worst case) with ``max_size``, ``epsilon``,
        ``delta``, ``min_support``.
    sensitive_values : sequence, optional
        The values X_s that must not be linked (default: every value).
    model : {"binary", "multivalued"}
        Binary (default; the papers' Tables 4–5 and proofs) or the full multi-valued model.
    rows : table-like, optional
        With a Release: the table with the QI columns, aligned with ``release.row_group``.
    max_size, epsilon, delta, min_support :
        Parameters of the derived knowledge (see :meth:`Knowledge.derive`).
    nulls : {"error", "drop", "value"}
        Null policy for the used columns (tables only).
    tol : float
        Relative slack in the comparisons with 1/r (p > (1/r)(1 + tol) is problematic),
        absorbing float rounding at exact ties (the Δ bound is tight).
    max_states, on_large :
        Multi-valued model: DP state limit; groups beyond it and beyond
        :data:`MAX_RYSER_TUPLES` tuples raise (``on_large="error"``) or are reported in
        ``undefined`` and make the audit incomplete (``"report"``).
    chunk_entries : int
        Memory bound: posteriors are computed for at most about this many (tuple, value)
        entries at a time.

    Returns
    -------
    RobustnessAudit

    """
    t_start = time.perf_counter()
    timing: dict[str, float] = {}
    from ._arrow import apply_null_policy, as_table, encode_column, encode_keys
    from ._kernels import possible_worlds as pw
    from ._kernels.counting import DENSE_CELLS, count_pairs, group_order
    from .release import Release

    check_choice(model, "model", _MODELS)
    check_choice(on_large, "on_large", ("error", "report"))
    r = _check_r(r)
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

    # ---------------------------------------------------------------- the release
    if isinstance(data, Release):
        rel = data
        if rel.case != "svpi":
            raise InputError(f"r-robustness is defined for one value per individual; this "
                             f"release is {rel.case!r}")
        if rel.row_group is None:
            raise InputError("this Release has no row -> group map (built from counts or a "
                             "stream); build it with Release.from_table, or pass the table")
        if rows is None:
            raise InputError("with a Release, pass rows= (the table with the QI columns, in "
                             "the order of the table the release was built from)")
        if group is not None:
            raise InputError("group= is only for tables; a Release already has its groups")
        sensitive = sensitive or rel.sensitive_name
        table = as_table(rows, param="rows")
        if table.num_rows != rel.row_group.shape[0]:
            raise InputError(f"rows has {table.num_rows} rows but the release was built from "
                             f"{rel.row_group.shape[0]}")
        gcode = np.asarray(rel.row_group, dtype=np.int32)
        G = rel.n_groups
        indptr, codes, counts = rel.indptr, rel.codes, rel.counts
        values = rel.values
        group_labels_fn = lambda: rel.group_labels  # noqa: E731
        needed = list(qi or []) + ([sensitive] if knowledge is None else [])
        check_columns(needed, table.column_names, "rows")
        table = table.select(list(dict.fromkeys(needed + (
            [c for A in knowledge.attribute_sets for c in A] if knowledge else []))))
        for c in table.column_names:
            if table.column(c).null_count:
                raise InputError(f"rows: column {c!r} has {table.column(c).null_count} nulls")
    else:
        if group is None:
            raise InputError("group= is required: the group (bucket) id of every row. For a "
                             "generalized table pass the group ids with the exact QI values "
                             "(the adversary links individuals through their exact QI)")
        if sensitive is None:
            raise InputError("sensitive= is required")
        if not isinstance(sensitive, str):
            raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
        gcols = [group] if isinstance(group, str) else list(group)
        table = as_table(data, param="data")
        kcols = [c for A in knowledge.attribute_sets for c in A] if knowledge else []
        want = list(dict.fromkeys(gcols + [sensitive] + list(qi or []) + kcols))
        check_columns([sensitive], table.column_names, "sensitive")
        check_columns(gcols, table.column_names, "group")
        if qi is not None:
            check_columns(qi, table.column_names, "qi")
        if sensitive in gcols or (qi and sensitive in qi):
            raise InputError(f"sensitive column {sensitive!r} is also a group/qi column")
        present = [c for c in want if c in table.column_names]
        table, _ = apply_null_policy(table.select(present), present, nulls)
        if table.num_rows == 0:
            raise InputError("data has no rows")
        gcode, gkeys = encode_keys([table.column(c) for c in gcols], names=gcols)
        gcode = np.asarray(gcode, dtype=np.int32)
        G = gkeys.num_rows
        venc = encode_column(table.column(sensitive), name=sensitive)
        values = venc.labels.to_pylist()
        empty = np.empty(0, dtype=np.int64)
        indptr, codes, counts = count_pairs(kernel_array(gcode, np.int32),
                                            kernel_array(venc.codes, np.int32),
                                            kernel_array(empty, np.int64), G, len(values),
                                            DENSE_CELLS)

        def group_labels_fn():
            from .release import _key_labels

            return _key_labels(gkeys)
    R = int(gcode.shape[0])
    V = len(values)
    # one dtype/layout/read-only-ness whichever path built them (one kernel signature)
    indptr = kernel_array(indptr, np.int64)
    codes = kernel_array(codes, np.int32)
    counts = kernel_array(counts, np.int64)
    goff, order = group_order(kernel_array(gcode, np.int32), G)
    goff = kernel_array(goff, np.int64)
    order = kernel_array(order, np.int64)
    sizes = np.diff(goff)
    entry_group = np.repeat(np.arange(G, dtype=np.int64), np.diff(indptr))
    timing["prepare"] = time.perf_counter() - t_start

    # ---------------------------------------------------------------- knowledge
    t0 = time.perf_counter()
    derived = knowledge is None
    if derived:
        knowledge = Knowledge.derive(table, qi=qi, sensitive=sensitive, max_size=max_size,
                                     epsilon=epsilon, delta=delta, min_support=min_support,
                                     nulls="error")
    sets = knowledge.attribute_sets
    if qi is not None:
        sets = [A for A in sets if set(A) <= set(qi)]
    if not sets:
        if not derived or knowledge.fallback is None:
            raise InputError("the knowledge has no attribute set within qi")
        # no reliable signature at all: the adversary knows only the global rates, i.e. the
        # empty attribute set (posterior n_x / N); any other set would give at least that
        sets = [()]
    check_columns(sorted({c for A in sets for c in A}), table.column_names, "data")
    if model == "multivalued" and sets != [()]:
        knowledge.restrict(sets).check_multivalued()
    timing["knowledge"] = time.perf_counter() - t0

    # ---------------------------------------------------------------- sensitive values
    if sensitive_values is None:
        xs = np.arange(V, dtype=np.int64)
    else:
        if isinstance(sensitive_values, (str, bytes)):
            sensitive_values = [sensitive_values]
        idx = {v: i for i, v in enumerate(values)}
        missing = [v for v in sensitive_values if v not in idx]
        if missing:
            raise InputError(f"sensitive_values: {missing[:5]} not among the sensitive values "
                             f"of the data ({', '.join(map(repr, values[:20]))}"
                             f"{' …' if V > 20 else ''})")
        xs = np.unique(np.array([idx[v] for v in sensitive_values], dtype=np.int64))
    xs_mask = np.zeros(V, dtype=bool)
    xs_mask[xs] = True
    threshold = 1.0 / float(r)
    thr_eff = threshold * (1.0 + float(tol))

    # ---------------------------------------------------------------- signatures
    t0 = time.perf_counter()
    ccache: dict[str, np.ndarray] = {}
    sig_by_set = []
    mat_by_set = []
    for A in sets:
        if A == ():
            sig = np.full(R, -1, dtype=np.int64)
            M = np.array([[knowledge.fallback_for(v) for v in values]], dtype=np.float64)
        else:
            sig = knowledge.signature_index(table, A, column_codes=ccache)
            M = knowledge.probability_matrix(A, values)
        ns = M.shape[0] - 1
        sig = np.where(sig < 0, ns, sig).astype(np.int64)
        used = np.unique(sig)
        need = xs if model == "binary" else np.arange(V)
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
    timing["signatures"] = time.perf_counter() - t0

    # ---------------------------------------------------------------- segments
    t0 = time.perf_counter()
    seg_mask = xs_mask[codes]
    seg_entry = np.flatnonzero(seg_mask)           # CSR positions of (group, x) segments
    seg_group_all = entry_group[seg_entry]
    seg_value_all = codes[seg_entry].astype(np.int64)
    seg_n_all = counts[seg_entry].astype(np.int64)
    k_per_group = np.bincount(seg_group_all, minlength=G)
    groups_with = np.flatnonzero(k_per_group > 0)
    nA = len(sets)
    S_all = seg_entry.shape[0]
    seg_max = np.full((nA, S_all), np.nan)
    seg_arg_row = np.full((nA, S_all), -1, dtype=np.int64)
    seg_holds = np.zeros((nA, S_all), dtype=bool)
    seg_interior = np.zeros((nA, S_all), dtype=bool)
    seg_status = np.zeros((nA, S_all), dtype=np.int8)
    row_max = np.zeros(R, dtype=np.float64)
    row_best_set = np.full(R, -1, dtype=np.int64)
    row_best_val = np.full(R, -1, dtype=np.int64)
    row_any = np.zeros(R, dtype=bool)  # some defined posterior seen
    prob_rows, prob_sets, prob_vals, prob_ps = [], [], [], []
    undefined: list[dict] = []
    skipped_groups = np.zeros(G, dtype=bool)
    seg_start_of_group = np.zeros(G + 1, dtype=np.int64)
    seg_start_of_group[1:] = np.cumsum(k_per_group)
    nblocks = _nblocks()
    limit = int(pw.PREFIX_LIMIT)

    # multi-valued: per-group method
    mv_method = None
    if model == "multivalued":
        mv_method = np.full(G, -1, dtype=np.int64)
        for g in groups_with:
            mult = counts[indptr[g]:indptr[g + 1]]
            states = 1
            for m in mult:
                states *= int(m) + 1
                if states > max_states:
                    break
            if states <= max_states:
                mv_method[g] = pw.METHOD_DP
            elif sizes[g] <= MAX_RYSER_TUPLES:
                mv_method[g] = pw.METHOD_RYSER
            else:
                if on_large == "error":
                    raise InputError(
                        f"group {group_labels_fn()[g]!r} has {int(sizes[g])} tuples and more "
                        f"than {max_states} multiset DP states: the exact multi-valued "
                        f"posterior (a permanent, #P-hard) is limited to {MAX_RYSER_TUPLES} "
                        "tuples (Ryser) or max_states DP states. Use model='binary', raise "
                        "max_states, or pass on_large='report' to skip such groups")
                skipped_groups[g] = True
                undefined.append({"group": g, "attribute_set": None, "value": None,
                                  "reason": "group too large for the exact multi-valued "
                                            "posterior (skipped)"})

    # chunks of groups bounded by entries
    cost = (k_per_group * sizes)[groups_with] if model == "binary" else \
        (np.diff(indptr) * sizes)[groups_with]
    _check_group_cost(cost, groups_with, sizes, group_labels_fn)
    chunk_bounds = [0]
    acc = 0
    for i, c in enumerate(cost.tolist()):
        if acc and acc + c > chunk_entries:
            chunk_bounds.append(i)
            acc = 0
        acc += c
    chunk_bounds.append(groups_with.shape[0])

    for ci in range(len(chunk_bounds) - 1):
        grp_all = groups_with[chunk_bounds[ci]:chunk_bounds[ci + 1]]
        if grp_all.size == 0:
            continue
        methods = [None] if model == "binary" else [pw.METHOD_DP, pw.METHOD_RYSER]
        for meth in methods:
            if meth is None:
                grp = grp_all
            else:
                grp = grp_all[mv_method[grp_all] == meth]
                if grp.size == 0:
                    continue
            kg = k_per_group[grp]
            entry_rows, seg_off = pw.gather_segments(goff, order, kernel_array(grp, np.int64),
                                                     kernel_array(kg, np.int64))
            # global segment ids of this chunk (segments are grouped by group in CSR order)
            sid = _segment_ids(seg_start_of_group, grp, kg)
            sval = seg_value_all[sid]
            sn = seg_n_all[sid]
            grp_seg = np.zeros(grp.size + 1, dtype=np.int64)
            grp_seg[1:] = np.cumsum(kg)
            grp_size = sizes[grp].astype(np.int64)
            chunk_rows, _ = pw.gather_segments(goff, order, kernel_array(grp, np.int64),
                                               kernel_array(np.ones(grp.size, np.int64),
                                                            np.int64))
            seg_len = np.diff(seg_off)
            ro_rows = kernel_array(entry_rows, np.int64)
            ro_off = kernel_array(seg_off, np.int64)
            ro_val = kernel_array(sval, np.int64)
            if meth is not None:
                # position of each segment's value inside its group's block (value-major)
                block = np.zeros(grp.size + 1, dtype=np.int64)
                block[1:] = np.cumsum(grp_size * np.diff(indptr)[grp])
                kidx = seg_entry[sid] - indptr[seg_group_all[sid]]
                src_start = block[:-1][np.repeat(np.arange(grp.size), kg)] + kidx * seg_len
                src = np.repeat(src_start - seg_off[:-1], seg_len) + np.arange(seg_off[-1])
            for a in range(nA):
                f = pw.gather_f(sig_by_set[a], mat_by_set[a], ro_rows, ro_off, ro_val)
                if meth is None:
                    p, st, _ = pw.binary_posteriors_csr(ro_off, kernel_array(f, np.float64),
                                                        kernel_array(sn, np.int64), limit,
                                                        nblocks)
                    st = st.astype(np.int8)
                else:
                    P, poff, mult, moff = pw.gather_blocks(
                        goff, order, kernel_array(grp, np.int64), indptr, codes, counts,
                        sig_by_set[a], mat_by_set[a])
                    post, gst, _, _ = pw.mv_posteriors_csr(
                        kernel_array(P, np.float64), kernel_array(poff, np.int64),
                        kernel_array(mult, np.int64), kernel_array(moff, np.int64), int(meth))
                    p = post[src]
                    st = np.repeat(gst, kg).astype(np.int8)
                    p[np.repeat(st != 0, seg_len)] = np.nan
                p = np.minimum(p, 1.0)
                smax, sarg, sfmax, sfmin, rmax, rseg = pw.reduce_segments(
                    kernel_array(p, np.float64), kernel_array(f, np.float64), ro_off,
                    kernel_array(grp_seg, np.int64), kernel_array(grp_size, np.int64))
                seg_max[a, sid] = smax
                seg_arg_row[a, sid] = entry_rows[sarg]
                seg_status[a, sid] = st
                # Δ condition per segment
                Ns = np.repeat(grp_size, kg).astype(np.float64)
                dc = delta_ceil(Ns, np.full(Ns.shape, float(r)), sfmax)
                seg_holds[a, sid] = (Ns >= float(r)) & (sfmax - sfmin <= dc)
                seg_interior[a, sid] = (sfmax > 0.0) & (sfmax < 1.0)
                # rows
                better = rmax > row_max[chunk_rows]
                upd = chunk_rows[better]
                row_max[upd] = rmax[better]
                row_best_set[upd] = a
                row_best_val[upd] = sval[rseg[better]]
                row_any[chunk_rows[rseg >= 0]] = True
                # problematic entries
                hit = np.flatnonzero(p > thr_eff)
                if hit.size:
                    hseg = np.searchsorted(seg_off, hit, side="right") - 1
                    prob_rows.append(entry_rows[hit])
                    prob_sets.append(np.full(hit.size, a, dtype=np.int64))
                    prob_vals.append(sval[hseg])
                    prob_ps.append(p[hit])
    timing["posteriors"] = time.perf_counter() - t0

    # ---------------------------------------------------------------- contradictions
    t0 = time.perf_counter()
    labels = None
    bad = np.argwhere(seg_status == pw.STATUS_UNDEFINED)
    for a, s in bad[:10000]:
        undefined.append({"group": int(seg_group_all[s]), "attribute_set": list(sets[a]),
                          "value": values[int(seg_value_all[s])],
                          "reason": _STATUS_TEXT[1]})
    bad3 = np.argwhere(seg_status == pw.STATUS_UNDERFLOW)
    for a, s in bad3[:10000]:
        undefined.append({"group": int(seg_group_all[s]), "attribute_set": list(sets[a]),
                          "value": values[int(seg_value_all[s])], "reason": _STATUS_TEXT[3]})
    if model == "binary":
        for a in range(nA):
            rws, vls = pw.absent_certain(sig_by_set[a], mat_by_set[a],
                                         kernel_array(gcode, np.int32), indptr, codes,
                                         kernel_array(xs, np.int64))
            for i, x in zip(rws[:1000].tolist(), vls[:1000].tolist(), strict=True):
                undefined.append({"group": int(gcode[i]), "attribute_set": list(sets[a]),
                                  "value": values[x], "row": int(i),
                                  "reason": "knowledge gives p(sig : x) = 1 but x is absent "
                                            "from the group (E_0 = 0)"})
    if undefined:
        labels = group_labels_fn()
        for u in undefined:
            u["group"] = labels[u["group"]]
    timing["contradictions"] = time.perf_counter() - t0

    # ---------------------------------------------------------------- reductions
    with np.errstate(invalid="ignore"):
        sm = np.where(np.isnan(seg_max), -1.0, seg_max)
    best_set_of_seg = np.argmax(sm, axis=0) if S_all else np.zeros(0, dtype=np.int64)
    best_of_seg = sm[best_set_of_seg, np.arange(S_all)] if S_all else np.zeros(0)
    group_max = np.zeros(G, dtype=np.float64)
    gw_row = np.full(G, -1, dtype=np.int64)
    gw_set = np.full(G, -1, dtype=np.int64)
    gw_val = np.full(G, -1, dtype=np.int64)
    if S_all:
        order_s = np.lexsort((best_of_seg, seg_group_all))
        last = np.flatnonzero(np.r_[seg_group_all[order_s][1:] != seg_group_all[order_s][:-1],
                                    True])
        top = order_s[last]
        gsel = seg_group_all[top]
        group_max[gsel] = best_of_seg[top]
        gw_set[gsel] = best_set_of_seg[top]
        gw_row[gsel] = seg_arg_row[best_set_of_seg[top], top]
        gw_val[gsel] = seg_value_all[top]
        group_max[group_max < 0] = np.nan        # every posterior of the group undefined
    row_max[~row_any & (k_per_group[gcode] > 0)] = np.nan
    row_max[skipped_groups[gcode]] = np.nan
    group_max[skipped_groups] = np.nan

    holds_g = np.ones(G, dtype=bool)
    once_g = np.ones(G, dtype=bool)
    interior_g = np.ones(G, dtype=bool)
    if S_all:
        holds_g[seg_group_all[~seg_holds.all(axis=0)]] = False
        once_g[seg_group_all[seg_n_all != 1]] = False
        interior_g[seg_group_all[~seg_interior.all(axis=0)]] = False
        holds_g[skipped_groups] = False
    status = np.full(G, DELTA_EXACT, dtype=np.int8)
    status[k_per_group == 0] = DELTA_NONE
    if model == "binary" and S_all:
        # Theorem 1 certifies: condition holds, every sensitive value once, 0 < f_max < 1
        cert = holds_g & once_g & interior_g & (k_per_group > 0)
        status[cert] = DELTA_CERTIFIED
    holds_g[k_per_group == 0] = True
    certified_violations = int(np.sum((status == DELTA_CERTIFIED)
                                      & (np.nan_to_num(group_max) > thr_eff)))

    finite = group_max[np.isfinite(group_max)]
    value = float(finite.max()) if finite.size else 0.0
    witness = None
    if finite.size and value > 0:
        g = int(np.nanargmax(np.where(np.isfinite(group_max), group_max, -1)))
        row = int(gw_row[g])
        a = int(gw_set[g])
        x = int(gw_val[g])
        labels = labels or group_labels_fn()
        sig_cols = list(sets[a])
        signature = [table.column(c)[row].as_py() for c in sig_cols]
        e = np.flatnonzero((entry_group == g) & (codes == x))
        witness = {"row": row, "group": labels[g], "attribute_set": sig_cols,
                   "signature": signature, "value": values[x], "posterior": value,
                   "n_x": int(counts[e[0]]) if e.size else 0, "group_size": int(sizes[g])}
    if prob_rows:
        pr = np.concatenate(prob_rows)
        ps_ = np.concatenate(prob_sets)
        pv = np.concatenate(prob_vals)
        pp = np.concatenate(prob_ps)
    else:
        pr = np.zeros(0, dtype=np.int64)
        ps_ = np.zeros(0, dtype=np.int64)
        pv = np.zeros(0, dtype=np.int64)
        pp = np.zeros(0, dtype=np.float64)
    complete = not skipped_groups.any() and not (seg_status == pw.STATUS_UNDERFLOW).any()
    robust = bool(complete and value <= thr_eff)
    kinfo = {"source": knowledge.info.get("source"), "attribute_sets": len(sets),
             "signatures": int(sum(knowledge.n_signatures(A) for A in sets if A))}
    for key in ("min_support", "epsilon", "delta", "max_size"):
        if key in knowledge.info:
            kinfo[key] = knowledge.info[key]
    if knowledge.info.get("pruned"):
        kinfo["pruned_attribute_sets"] = len(knowledge.info["pruned"])
    timing["total"] = time.perf_counter() - t_start
    return RobustnessAudit(
        value=value, robust=robust, complete=complete, r=float(r), threshold=threshold,
        tol=float(tol), model=model, witness=witness, n_rows=R, n_groups=G,
        attribute_sets=tuple(tuple(A) for A in sets), values=tuple(values),
        sensitive_values=tuple(values[i] for i in xs), problematic_rows=pr,
        problematic_sets=ps_, problematic_values=pv, problematic_posteriors=pp,
        row_max=row_max, group_max=group_max, group_witness_row=gw_row,
        group_witness_set=gw_set, group_witness_value=gw_val, delta_status=status,
        delta_holds=holds_g, certified_violations=certified_violations,
        undefined=undefined, knowledge=kinfo, timing=timing)


def _segment_ids(seg_start_of_group: np.ndarray, grp: np.ndarray, kg: np.ndarray) -> np.ndarray:
    starts = seg_start_of_group[grp]
    total = int(kg.sum())
    base = np.repeat(starts - np.concatenate([[0], np.cumsum(kg)[:-1]]), kg)
    return base + np.arange(total)
