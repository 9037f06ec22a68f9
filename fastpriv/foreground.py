"""Foreground-knowledge attack (Wong, Fu, Wang, Xu, Yu): mine a release's own patterns.

An adversary reads a published release (which individuals share a group, each group's
multiset of sensitive values, everyone's exact QI values) and *mines* from it, for QI
attribute sets A, the distributions p(s : x) — the probability that a tuple with signature
s holds x — that best explain the published counts (maximum likelihood, binary model). Used
as background knowledge (spec ``robustness.md``), those distributions raise some
individuals' posteriors p(t : x) above 1/r. fastpriv runs this attack as an **audit**:
"what would an adversary learn from this release's own utility?" (spec ``foreground.md``).

What is here
------------
* :func:`fit_global_distribution` — one system: the maximum-likelihood F = p(s_i : x) from
  groups ``[(signature code per tuple, n_x), …]`` with several starts, EM + safeguarded
  Newton, and a report of every local maximum / saddle found.
* :func:`mine` — for every attribute subset of the QI (Apriori order, pruning supersets of
  unreliable signatures) and every sensitive value or value set, the reliable signatures
  (Hoeffding: |S| ≥ ln(2/δ) / (2ε²)) and their mined distributions, **all systems solved in
  one parallel Numba kernel** (:mod:`fastpriv._kernels.foreground`). Returns the
  distributions as a :class:`~fastpriv.knowledge.Knowledge`.
* :func:`attack` — mining plus the posterior of every tuple under every mined distribution:
  per-tuple worst posterior with its witness, problematic tuples (p > 1/r), and, given the
  original table, the paper's measures (recall over sensitive tuples, false flags over
  non-sensitive tuples, average breach probability, relative error of the mined
  distributions against the original table's).

What the attack reads
---------------------
Only what is published: per row its QI values and group, per group the counts of each
sensitive value. A *joined* table (QI columns, group id and the true sensitive value per
row, e.g. :meth:`Anonymized.table`) is accepted for convenience, but **only its per-group
value counts are used** — the row-to-value link is never read (except, separately, to
score the attack when it is passed as ``original``). Anatomy's two published tables are
accepted as they are (``sensitive_table=``).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import as_table
from ._budget import MAX_SECONDS, check_max_seconds, check_seconds, esp_work
from ._validation import (
    check_columns,
    check_int,
    check_max_set_size,
    check_positive,
    check_probability,
    check_r,
    kernel_array,
    real_array,
)
from .errors import InputError, InputTypeError
from .knowledge import Knowledge, support_threshold
from .results import Result, Witness, fields_equal, json_safe

__all__ = [
    "fit_global_distribution",
    "GlobalDistribution",
    "mine",
    "MinedDistributions",
    "attack",
    "ForegroundAttack",
]

#: Systems with more variables than this use EM only (no dense Hessian); flagged.
NEWTON_MAX = 256
#: Seconds per operation of the solver (:func:`solve_work`), with
#: :data:`ITERATIONS_PER_START`: calibrated on 2 shared cores against one group of
#: 2,000 tuples (2 signature classes; estimate/actual 0.8), 20 groups of 1,000 (20
#: classes; 0.5), 100 groups of 1,000 (2 classes; 3.8) and 1,000 groups of 100 (60
#: classes; 3.2): iterations to convergence vary with the data, so the estimate is good to
#: a factor of about 4 either way — enough to tell minutes from hours.
SOLVE_OP_SECONDS = 3e-9
#: Iterations (EM, Newton, line search) per start, for the estimate.
ITERATIONS_PER_START = 25


def solve_work(P: Any, n_random: int) -> float:
    """Return the estimated operations of solving every system of ``P`` (a pack).

    One evaluation of the likelihood of a mixed group of N tuples with n of x costs
    :func:`fastpriv._budget.esp_work` (N, n) (a closed form O(K) when n = 1), its
    Hessian 2K + 1 more (K signature classes); each start runs about
    :data:`ITERATIONS_PER_START` iterations, and a system runs the two default starts
    and ``n_random`` random ones.
    """
    grp_n = np.asarray(P.grp_n, dtype=np.float64)
    grp_N = np.asarray(P.grp_N, dtype=np.float64)
    K = np.diff(np.asarray(P.cls_off)).astype(np.float64)
    per_eval = np.where(grp_n >= 2, esp_work(grp_N, grp_n), K)
    return float(((2.0 * K + 2.0) * per_eval).sum()) * ITERATIONS_PER_START * (n_random + 2)


def _flag_names(bits: int) -> tuple[str, ...]:
    from ._kernels.foreground import FLAG_NAMES

    return tuple(name for bit, name in FLAG_NAMES if bits & bit)


# ====================================================================== one system
@dataclass(frozen=True, eq=False)
class GlobalDistribution(Result):
    """Maximum-likelihood solution of one foreground system (one attribute set, one x).

    Attributes
    ----------
    f : numpy.ndarray
        p(s_i : x) per signature code (NaN for a code without tuples).
    log_likelihood, likelihood : float
        log L(f) = Σ_k log E_{n_k}(f) and L itself.
    iterations : int
        EM/Newton iterations over all starts.
    status : str
        ``"converged"`` (projected gradient below ``tol`` and second-order test passed),
        ``"max_iter"`` or ``"failed"``.
    flags : tuple of str
        ``multiple_local_maxima``, ``non_unique_maximum`` (another maximiser with the same
        likelihood, or a flat direction), ``singular_hessian``, ``saddle_escaped`` (a start
        stopped at a saddle; the solver moved off it), ``em_only``, ``numerical_trouble``.
    residual : float
        max_i |G(f)_i - f_i| for the papers' equations (4)-(6) f = G(f).
    projected_gradient : float
        max_i |clip(f_i + g_i / T_i) - f_i| (g the score, T_i tuples of signature i).
    unique : bool
        Only one stationary point was found by any start and the Hessian is not singular.
    unique_maximum : bool
        No other maximiser with the same likelihood was found and the Hessian is not
        singular at ``f``.
    local_maxima, saddles : tuple of (tuple of float, float)
        Distinct end points (f, log-likelihood) by kind, best first.
    n_starts : int

    """

    f: np.ndarray
    log_likelihood: float
    likelihood: float
    iterations: int
    status: str
    flags: tuple[str, ...]
    residual: float
    projected_gradient: float
    unique: bool
    unique_maximum: bool
    local_maxima: tuple
    saddles: tuple
    n_starts: int
    params: dict = field(default_factory=dict)

    @property
    def value(self) -> float:
        """The maximum log-likelihood log L(f)."""
        return self.log_likelihood

    @property
    def witness(self) -> None:
        """No witness: ``f`` itself is the answer."""
        return None

    def summary(self) -> str:
        """One line: the solver's verdict and the maximum."""
        fs = ", ".join("-" if math.isnan(v) else f"{v:.4g}" for v in self.f[:8])
        more = " …" if self.f.shape[0] > 8 else ""
        return (f"{self.status}: f = ({fs}{more}), log L = {self.log_likelihood:.6g}"
                f"{'' if self.unique else ' (not unique: ' + ', '.join(self.flags) + ')'}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"f": [None if math.isnan(v) else float(v) for v in self.f],
                "params": json_safe(self.params),
                "log_likelihood": self.log_likelihood, "likelihood": self.likelihood,
                "iterations": self.iterations, "status": self.status,
                "flags": list(self.flags), "residual": self.residual,
                "projected_gradient": self.projected_gradient, "unique": self.unique,
                "unique_maximum": self.unique_maximum,
                "local_maxima": [{"f": list(f), "log_likelihood": ll}
                                 for f, ll in self.local_maxima],
                "saddles": [{"f": list(f), "log_likelihood": ll} for f, ll in self.saddles],
                "n_starts": self.n_starts}


@dataclass(frozen=True, eq=False)
class _Packed:
    var_off: np.ndarray
    T: np.ndarray
    C0: np.ndarray
    C1: np.ndarray
    grp_off: np.ndarray
    grp_n: np.ndarray
    grp_N: np.ndarray
    grp_w: np.ndarray
    cls_off: np.ndarray
    cls_var: np.ndarray
    cls_mult: np.ndarray
    f0: np.ndarray
    const: np.ndarray

    def arrays(self) -> tuple:
        return (self.var_off, self.T, self.C0, self.C1, self.grp_off, self.grp_n, self.grp_N,
                self.grp_w, self.cls_off, self.cls_var, self.cls_mult, self.f0, self.const)

    @property
    def n_systems(self) -> int:
        return int(self.var_off.shape[0] - 1)


def _packed(var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult,
            f0, const) -> _Packed:
    return _Packed(kernel_array(var_off, np.int64), kernel_array(T, np.float64),
                   kernel_array(C0, np.float64), kernel_array(C1, np.float64),
                   kernel_array(grp_off, np.int64), kernel_array(grp_n, np.int64),
                   kernel_array(grp_N, np.int64), kernel_array(grp_w, np.float64),
                   kernel_array(cls_off, np.int64),
                   kernel_array(cls_var, np.int64), kernel_array(cls_mult, np.int64),
                   kernel_array(f0, np.float64), kernel_array(const, np.float64))


def _log_binom(N: int, n: int) -> float:
    return math.lgamma(N + 1) - math.lgamma(n + 1) - math.lgamma(N - n + 1)


def _xlogy(c: float, y: float) -> float:
    if c == 0:
        return 0.0
    return c * math.log(y) if y > 0 else -math.inf


def _pack_single(groups: list[tuple[list[int], int]], m: int, f0: float) -> _Packed:
    """Pack one system given as Python lists (signature -1 = fixed rate f0)."""
    T = np.zeros(m)
    C0 = np.zeros(m)
    C1 = np.zeros(m)
    merged: dict[tuple, int] = {}
    const = 0.0
    for sigs, n in groups:
        N = len(sigs)
        for v in sigs:
            if v >= 0:
                T[v] += 1
        nfix = sum(1 for v in sigs if v < 0)
        if n == 0 or n == N:
            for v in sigs:
                if v >= 0:
                    (C0 if n == 0 else C1)[v] += 1
            const += _xlogy(nfix, (1.0 - f0) if n == 0 else f0)
            continue
        if nfix == N:
            const += _log_binom(N, n) + _xlogy(n, f0) + _xlogy(N - n, 1.0 - f0)
            continue
        counts: dict[int, int] = {}
        for v in sigs:
            counts[v] = counts.get(v, 0) + 1
        key = (n, N, tuple(sorted(counts.items())))
        merged[key] = merged.get(key, 0) + 1
    grp_n: list[int] = []
    grp_N: list[int] = []
    grp_w: list[float] = []
    cls_off = [0]
    cls_var: list[int] = []
    cls_mult: list[int] = []
    for (n, N, classes), w in merged.items():
        for v, c in classes:
            cls_var.append(v)
            cls_mult.append(c)
        cls_off.append(len(cls_var))
        grp_n.append(n)
        grp_N.append(N)
        grp_w.append(float(w))
    return _packed(np.array([0, m]), T, C0, C1, np.array([0, len(grp_n)]),
                   np.array(grp_n, dtype=np.int64), np.array(grp_N, dtype=np.int64),
                   np.array(grp_w, dtype=np.float64),
                   np.array(cls_off, dtype=np.int64), np.array(cls_var, dtype=np.int64),
                   np.array(cls_mult, dtype=np.int64), np.array([f0]), np.array([const]))


@dataclass(frozen=True, eq=False)
class _Solution:
    F: np.ndarray
    loglik: np.ndarray
    iterations: np.ndarray
    flags: np.ndarray
    residual: np.ndarray
    pgrad: np.ndarray
    n_maxima: np.ndarray
    second: np.ndarray
    n_endpoints: np.ndarray
    ep_F: np.ndarray
    ep_ll: np.ndarray
    ep_kind: np.ndarray
    ep_it: np.ndarray
    ep_off: np.ndarray
    epF_off: np.ndarray
    var_off: np.ndarray

    def endpoints(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(F rows, log-likelihoods, kinds) of every start of system s."""
        m = int(self.var_off[s + 1] - self.var_off[s])
        k = int(self.n_endpoints[s])
        e0 = int(self.ep_off[s])
        f0 = int(self.epF_off[s])
        return (self.ep_F[f0:f0 + k * max(m, 1)].reshape(k, max(m, 1))[:, :m],
                self.ep_ll[e0:e0 + k], self.ep_kind[e0:e0 + k])


def _slice(P: _Packed, s: int) -> _Packed:
    """System ``s`` of a pack as a pack of its own (offsets rebased)."""
    a, b = int(P.var_off[s]), int(P.var_off[s + 1])
    g0, g1 = int(P.grp_off[s]), int(P.grp_off[s + 1])
    c0, c1 = int(P.cls_off[g0]), int(P.cls_off[g1])
    return _packed(np.array([0, b - a]), P.T[a:b], P.C0[a:b], P.C1[a:b],
                   np.array([0, g1 - g0]), P.grp_n[g0:g1], P.grp_N[g0:g1], P.grp_w[g0:g1],
                   np.asarray(P.cls_off[g0:g1 + 1]) - c0, P.cls_var[c0:c1],
                   P.cls_mult[c0:c1], P.f0[s:s + 1], P.const[s:s + 1])


def _solve_one(P: _Packed, s: int, params: dict, sliced: _Packed | None = None) -> _Solution:
    """Solve system ``s`` packed on its own in one kernel call (the single-system path)."""
    Q = _slice(P, s) if sliced is None else sliced
    with _one_thread():
        return _solve(Q, np.zeros(2, dtype=np.int64), np.zeros(1), **params,
                      order=np.zeros(1, dtype=np.int64), nblocks=1,
                      sys_id=np.array([s], dtype=np.int64))


class _one_thread:  # noqa: N801 - used as a context manager
    """Run the parallel kernel on the calling thread only (numba's setting is per thread).

    One system cannot use more than one thread; waking the pool costs ~0.1-10 ms per
    call on a busy machine.
    """

    def __enter__(self) -> None:
        import numba

        self._n = numba.get_num_threads()
        numba.set_num_threads(1)

    def __exit__(self, *exc: Any) -> None:
        import numba

        numba.set_num_threads(self._n)


def _nblocks() -> int:
    import numba

    return int(numba.get_num_threads()) * 4


def _solve(P: _Packed, start_off: np.ndarray, start_vals: np.ndarray, *, n_random: int,
           seed: int, default_starts: bool, max_iter: int, em_warm: int, tol: float,
           newton_max: int, order: np.ndarray | None = None,
           nblocks: int | None = None, sys_id: np.ndarray | None = None) -> _Solution:
    """Run the batched solver kernel on the systems in ``order`` (default: all)."""
    from ._kernels import foreground as kf

    so = kernel_array(start_off, np.int64)
    sv = kernel_array(start_vals, np.float64)
    ds = int(bool(default_starts))
    ep_off, epF_off = kf.endpoint_layout(P.var_off, so, int(n_random), ds)
    if order is None:
        cost = np.diff(np.asarray(P.cls_off)[np.asarray(P.grp_off)]) + np.diff(
            np.asarray(P.var_off)) ** 2
        order = np.argsort(-cost, kind="stable")
    if nblocks is None:
        nblocks = _nblocks()
    if sys_id is None:
        sys_id = np.arange(P.n_systems, dtype=np.int64)
    out = kf.solve_systems(*P.arrays(), so, sv, int(n_random), int(seed), ds, int(max_iter),
                           int(em_warm), float(tol), int(newton_max),
                           kernel_array(order, np.int64), int(nblocks),
                           kernel_array(ep_off, np.int64), kernel_array(epF_off, np.int64),
                           kernel_array(sys_id, np.int64))
    return _Solution(*out, ep_off=ep_off, epF_off=epF_off, var_off=np.asarray(P.var_off))


def _check_groups(groups: Any, n_signatures: int, fixed_rate: Any) -> tuple[list, float]:
    if isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Sequence):
        raise InputTypeError("groups must be a list of (signature codes, n_x) pairs")
    if len(groups) == 0:
        raise InputError("groups is empty: the system needs at least one group")
    out = []
    any_fixed = False
    for k, g in enumerate(groups):
        if isinstance(g, Mapping):
            if "signatures" not in g or "n_x" not in g:
                raise InputError(f"groups[{k}]: a mapping needs keys 'signatures' and 'n_x'")
            sigs, n = g["signatures"], g["n_x"]
        else:
            try:
                sigs, n = g
            except (TypeError, ValueError):
                raise InputTypeError(f"groups[{k}] must be a (signature codes, n_x) pair, got "
                                f"{g!r}") from None
        if isinstance(sigs, (str, bytes)) or not isinstance(sigs, Sequence) and not \
                isinstance(sigs, np.ndarray):
            raise InputTypeError(f"groups[{k}]: signature codes must be a sequence of integers")
        codes = []
        for j, v in enumerate(list(sigs)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise InputTypeError(f"groups[{k}] signature {j} must be an integer code, "
                                     f"got {v!r}")
            v = int(v)
            if not -1 <= v < n_signatures:
                raise InputError(f"groups[{k}] signature {j} = {v} is outside 0..n_signatures-1 "
                                 f"(= {n_signatures - 1}); -1 marks a fixed-rate tuple")
            any_fixed |= v < 0
            codes.append(v)
        if not codes:
            raise InputError(f"groups[{k}] has no tuples")
        n = check_int(n, f"groups[{k}] n_x", minimum=0, maximum=len(codes))
        out.append((codes, n))
    if any_fixed:
        if fixed_rate is None:
            raise InputError("some tuples have signature -1 (fixed rate) but fixed_rate is None")
        f0 = check_probability(fixed_rate, "fixed_rate")
    else:
        f0 = 0.5 if fixed_rate is None else check_probability(fixed_rate, "fixed_rate")
    return out, f0


def _starts_array(starts: Any, m: int, n_systems: int = 1) -> tuple[np.ndarray, np.ndarray]:
    if starts is None:
        return np.zeros(n_systems + 1, dtype=np.int64), np.zeros(1)
    S = real_array(starts, "starts")
    if S.ndim == 1:
        S = S[None, :]
    if S.ndim != 2 or S.shape[1] != m:
        raise InputError(f"starts must be a sequence of points with {m} coordinates each, "
                         f"got shape {S.shape}")
    if not np.isfinite(S).all() or (S < 0).any() or (S > 1).any():
        raise InputError("starts must lie in [0, 1]")
    return np.array([0, S.size], dtype=np.int64), S.ravel().copy()


def fit_global_distribution(groups: Sequence[Any], n_signatures: int, *,
                            fixed_rate: float | None = None, starts: Any = None,
                            n_random: int = 8, seed: int = 0, default_starts: bool = True,
                            max_iter: int = 500, em_warm: int = 10,
                            solver_tol: float = 1e-10,
                            newton_max: int = NEWTON_MAX) -> GlobalDistribution:
    """Maximum-likelihood global distribution p(s_i : x) of one attribute set and value.

    Solves the papers' equations (4)-(6) f_i = Σ_k |L_k(s_i)| p_k(s_i : x; f) /
    Σ_k |L_k(s_i)| — the fixed points of the EM map of the likelihood
    L(f) = Π_k E_{n_k}(f|L_k) (Wong et al., Section 4.1; spec ``foreground.md``) — and
    returns the **global maximum** found, never a saddle.

    Parameters
    ----------
    groups : sequence of (sequence of int, int)
        One entry per group: the signature code of each tuple (0 .. n_signatures-1, or -1
        for a tuple whose probability is ``fixed_rate``) and n_x, the number of x in the
        group. Mappings ``{"signatures": [...], "n_x": k}`` are accepted too.
    n_signatures : int
        Number of unknowns m.
    fixed_rate : float, optional
        Probability of the ``-1`` tuples (in the attack: the global rate of x).
    starts : array-like (n_starts, m), optional
        Extra starting points.
    n_random : int
        Seeded uniformly random starts.
    seed : int
        Seed of the random starts.
    default_starts : bool
        Also start from the within-group frequencies n_k / N_k and from ``fixed_rate``
        (0.5 when there is none).
    max_iter, em_warm, solver_tol, newton_max :
        Iterations per start; EM steps before Newton at most (Newton starts earlier once
        the projected gradient is below 1e-3); projected-gradient tolerance; the largest m
        solved with Newton (larger: EM only, flagged).

    Returns
    -------
    GlobalDistribution

    Examples
    --------
    Example 2 of the paper (Tables 7/8):

    >>> g = fit_global_distribution([([0, 1], 1), ([0, 0], 1), ([1, 1], 0)], 2)
    >>> [round(float(v), 6) for v in g.f], round(g.likelihood, 6)   # (2/3, 0), 8/27
    ([0.666667, 0.0], 0.296296)

    """
    from ._kernels import foreground as kf

    m = check_int(n_signatures, "n_signatures", minimum=1)
    grp, f0 = _check_groups(groups, m, fixed_rate)
    n_random = check_int(n_random, "n_random", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    em_warm = check_int(em_warm, "em_warm", minimum=0)
    newton_max = check_int(newton_max, "newton_max", minimum=0)
    tol = float(check_positive(solver_tol, "solver_tol"))
    st_off, st_vals = _starts_array(starts, m)
    if not default_starts and n_random == 0 and starts is None:
        raise InputError("no starting point: give starts=, n_random > 0 or default_starts=True")
    P = _pack_single(grp, m, f0)
    with _one_thread():
        sol = _solve(P, st_off, st_vals, n_random=n_random, seed=seed,
                     default_starts=default_starts, max_iter=max_iter, em_warm=em_warm,
                     tol=tol, newton_max=newton_max, order=np.zeros(1, dtype=np.int64),
                     nblocks=1)
    F, ll, its, flags, resid, pg = (sol.F, sol.loglik[0], sol.iterations[0], sol.flags[0],
                                    sol.residual[0], sol.pgrad[0])
    epF, epll, epkind = sol.endpoints(0)
    f = np.array(F, dtype=np.float64)
    unused = np.asarray(P.T) == 0
    f[unused] = np.nan
    epF = epF.reshape(-1, m)
    maxima: list[tuple[tuple, float]] = []
    saddles: list[tuple[tuple, float]] = []
    for e in np.argsort(-epll, kind="stable"):
        kind = int(epkind[e])
        target = maxima if kind in (kf.KIND_MAX, kf.KIND_SINGULAR) else \
            saddles if kind == kf.KIND_SADDLE else None
        if target is None:
            continue
        pt = tuple(math.nan if u else float(v) for v, u in zip(epF[e], unused, strict=True))
        if all(max([abs(a - b) for a, b in zip(pt, q, strict=True) if a == a] or [0.0])
               > kf.SAME_POINT for q, _ in target):
            target.append((pt, float(epll[e])))
    names = _flag_names(int(flags))
    status = "converged" if "converged" in names else \
        "max_iter" if "max_iter" in names else "failed"
    unique_max = "non_unique_maximum" not in names and status == "converged"
    unique = unique_max and len(maxima) == 1 and not saddles
    return GlobalDistribution(
        f=f, log_likelihood=float(ll), likelihood=float(math.exp(ll)) if ll > -math.inf
        else 0.0, iterations=int(its), status=status, flags=names, residual=float(resid),
        projected_gradient=float(pg), unique=unique, unique_maximum=unique_max,
        local_maxima=tuple(maxima), saddles=tuple(saddles), n_starts=int(epll.shape[0]),
        params={"n_signatures": m, "fixed_rate": fixed_rate, "n_random": n_random,
                "seed": seed, "max_iter": max_iter, "solver_tol": tol})


# ====================================================================== reading a release
class _View:
    """What the adversary sees: the release's row view and per-group value counts.

    A thin adapter over :class:`fastpriv.rows.RowView` (rows: QI codes, group, multiplicity;
    ``order`` lists each row once per unit it stands for) and the release's CSR profile.
    """

    def __init__(self, rel: Any, rows: Any) -> None:
        self.rel = rel
        self.rows = rows
        self.n = rows.n_rows                    # rows held (distinct rows when weighted)
        self.n_units = rows.n_units             # individuals they stand for
        self.qi = rows.qi
        self.qi_codes = rows.qi_codes
        self.qi_labels = rows.qi_labels
        self.row_group = rows.row_group
        self.goff, self.order = rows.group_order
        self.group_labels = rel.groups
        self.values = rel.value_labels
        self.codes = rel.codes
        self.counts = rel.counts
        self.entry_group = rel.entry_group

    @property
    def G(self) -> int:
        return int(self.goff.shape[0] - 1)


def read_view(data: Any, *, qi: Sequence[str], sensitive: str, group: str,
               sensitive_table: Any, count: str, weight: str | None, nulls: str) -> _View:
    """Return the release with its row view.

    From a Release, a joined table, or Anatomy's QI table plus its sensitive (counts) table.
    """
    from .release import Release, release_with_rows
    from .rows import view_from_counts

    qi = list(_as_names(qi, "qi"))
    if isinstance(data, Release):
        if sensitive_table is not None:
            raise InputError("sensitive_table= is for Anatomy's QI table; a Release already "
                             "has its counts")
        if group is not None:
            raise InputError("group= is only for tables; a Release already has its groups")
        rel = release_with_rows(data, qi=qi, sensitive=sensitive)
        return _View(rel, rel.rows)
    if group is None:
        raise InputError("group= is required with a table: the group (bucket) id of every row")
    if not isinstance(group, str):
        raise InputTypeError(f"group must be a column name, got {type(group).__name__}")
    if sensitive is None:
        raise InputError("sensitive= is required with a table (the sensitive column)")
    if not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
    if group in qi:
        raise InputError(f"group column {group!r} is also a qi column")
    if sensitive in qi or sensitive == group:
        raise InputError(f"sensitive column {sensitive!r} is also a qi/group column")
    if sensitive_table is None:
        rel = release_with_rows(data, qi=qi, sensitive=sensitive, group=group, weight=weight,
                                nulls=nulls)
        return _View(rel, rel.rows)
    if weight is not None:
        raise InputError("weight= is for one table of rows; with sensitive_table= the counts "
                         "already are multiplicities")
    st = as_table(sensitive_table, param="sensitive_table")
    check_columns([group, sensitive, count], st.column_names, "sensitive_table")
    rel = Release.from_counts(st, group=group, sensitive=sensitive, count=count)
    return _View(rel, view_from_counts(data, rel, qi=qi, group=group, nulls=nulls))


def _as_names(cols: Any, param: str) -> tuple[str, ...]:
    if isinstance(cols, str):
        return (cols,)
    if not isinstance(cols, Sequence) or not cols:
        raise InputTypeError(f"{param} must be a non-empty list of column names")
    out = tuple(cols)
    for c in out:
        if not isinstance(c, str):
            raise InputTypeError(f"{param}: column names must be strings, got {c!r}")
    if len(set(out)) != len(out):
        raise InputError(f"{param} repeats a column: {out}")
    return out


def _set_label(members: Sequence[Any]) -> str:
    return "{" + ", ".join(str(v) for v in sorted(members, key=str)) + "}"


def _targets(sensitive_values: Any, labels: list) -> list[tuple[Any, list[int]]]:
    """[(label, value codes)] of the attacked values / value sets."""
    index = {v: i for i, v in enumerate(labels)}

    def code(v: Any, where: str) -> int:
        try:
            return index[v]
        except (KeyError, TypeError):
            shown = ", ".join(map(repr, labels[:20]))
            raise InputError(f"sensitive_values: {v!r} ({where}) is not a sensitive value of "
                             f"the release; values: {shown}") from None

    if sensitive_values is None:
        return [(v, [i]) for i, v in enumerate(labels)]
    items: list[tuple[Any, Any]]
    if isinstance(sensitive_values, Mapping):
        items = list(sensitive_values.items())
    elif isinstance(sensitive_values, (str, bytes)) or not isinstance(sensitive_values,
                                                                       (Sequence, set,
                                                                        frozenset)):
        raise InputTypeError("sensitive_values must be a list of values and/or value sets, or a "
                        "mapping label -> value set")
    else:
        items = [(None, e) for e in sensitive_values]
    out = []
    for lab, e in items:
        if isinstance(e, (set, frozenset, list, tuple)) and not isinstance(e, str):
            members = list(dict.fromkeys(e))
            if not members:
                raise InputError("sensitive_values: an empty value set")
            cs = sorted(code(v, "in a value set") for v in members)
            out.append((lab if lab is not None else
                        (members[0] if len(members) == 1 else _set_label(members)), cs))
        else:
            out.append((lab if lab is not None else e, [code(e, "value")]))
    if not out:
        raise InputError("sensitive_values is empty")
    names = [o[0] for o in out]
    if len(set(map(str, names))) != len(names):
        raise InputError(f"sensitive_values: two entries have the same label: {names}")
    return out


# ====================================================================== mining
def _mine_signatures(view: _View, J: int, max_set_size: int,
                     progress: Callable[[int, int], None] | None) -> tuple[list, list]:
    """Return the reliable signatures of every attribute subset of the QI.

    The shared Apriori miner, first attribute least significant in the keys.
    """
    from .rows import mine_reliable_signatures

    kept, pruned = [], []
    for A, rs in mine_reliable_signatures(view.rows, view.qi, J, max_set_size,
                                          progress=progress):
        if rs is None:
            pruned.append(A)
        else:
            kept.append(rs)
    return kept, pruned


def group_counts(view: _View, targets: list[tuple[Any, list[int]]]) -> np.ndarray:
    """(n_x, G) int64: occurrences of each attacked value (set) per group."""
    X = len(targets)
    out = np.zeros((X, view.G), dtype=np.int64)
    for t, (_, cs) in enumerate(targets):
        mask = np.isin(view.codes, np.asarray(cs, dtype=view.codes.dtype))
        out[t] = np.bincount(view.entry_group[mask], weights=view.counts[mask],
                             minlength=view.G).astype(np.int64)
    return out


@dataclass(frozen=True, eq=False)
class MinedDistributions(Result):
    """Distributions p(s : x) mined from a release (foreground knowledge), with diagnostics.

    One *system* per (attribute set, sensitive value or value set). Read the results with
    :meth:`table`, :meth:`knowledge`, :meth:`systems` or :meth:`distribution`.

    Attributes
    ----------
    attribute_sets : list of tuple of str
        Attribute sets with at least one reliable signature (Apriori order).
    pruned : list of tuple of str
        Attribute sets without any reliable signature (and their pruned supersets).
    values : list
        Attacked values / value-set labels (x).
    min_support : int
        Reliable sample size J = ⌈ln(2/δ) / (2ε²)⌉ (or the explicit ``min_support``).
    fixed_rates : numpy.ndarray
        Per x: the fixed probability of tuples whose signature is not reliable under the
        ``"global"`` rule (the release's rate of x), ``"uniform"`` (1/2) or a number; under
        ``"pooled"`` the release's rate of x, used as a starting point and as the
        fallback for signatures absent from the release.
    unreliable : str
        The rule used for tuples with an unreliable signature: ``"pooled"`` (one extra
        unknown per system, see :meth:`unreliable_rate`), ``"uniform"``, ``"global"`` or
        ``"fixed"`` (a number given by the caller).
    seconds : dict
        ``signatures`` (Apriori counting), ``build`` (packing), ``solve`` (batched kernel),
        ``total``.

    """

    attribute_sets: list
    pruned: list
    values: list
    value_members: list
    min_support: int
    epsilon: float
    confidence: float
    fixed_rates: np.ndarray
    unreliable: str
    seconds: dict = field(compare=False)
    _view: _View = field(repr=False, compare=False)
    _sets: list = field(repr=False, compare=False)
    _sys_a: np.ndarray = field(repr=False)
    _sys_x: np.ndarray = field(repr=False)
    _packed: _Packed | None = field(repr=False, compare=False)
    _sol: _Solution | None = field(repr=False, compare=False)
    _params: dict = field(repr=False)
    _gcount: np.ndarray = field(repr=False)

    def __eq__(self, other: object) -> bool:
        eq = super().__eq__(other)
        if eq is not True:
            return eq
        return fields_equal(self.systems(), other.systems())

    __hash__ = None

    @property
    def value(self) -> int:
        """The number of (attribute set, x) systems solved."""
        return self.n_systems

    @property
    def params(self) -> dict:
        """The mining parameters."""
        return {"min_support": self.min_support, "epsilon": self.epsilon,
                "confidence": self.confidence, "unreliable": self.unreliable,
                "values": [str(v) for v in self.values], **self._params}

    @property
    def witness(self) -> None:
        """No witness: the distributions are the answer (see :meth:`table`)."""
        return None

    def summary(self) -> str:
        """Say what was mined, from how many attribute sets."""
        return (f"mined {self.n_systems} distributions p(signature : x) over "
                f"{len(self.attribute_sets)} attribute sets ({len(self.pruned)} pruned) for "
                f"{len(self.values)} values; reliable sample J = {self.min_support}; "
                f"unreliable signatures: '{self.unreliable}'")

    @property
    def release_view(self) -> _View:
        """What the adversary read: the release's rows, groups and value counts."""
        return self._view

    def value_members_codes(self, x: int) -> np.ndarray:
        """Release value codes making up attacked x."""
        labs = self._view.values.to_pylist()
        return np.asarray([labs.index(v) for v in self.value_members[x]], dtype=np.int64)

    @property
    def n_systems(self) -> int:
        """Number of (attribute set, x) systems solved."""
        return int(self._sys_a.shape[0])

    def _system(self, a: int, x: int) -> int:
        hit = np.flatnonzero((self._sys_a == a) & (self._sys_x == x))
        return int(hit[0]) if hit.size else -1

    @property
    def pooled(self) -> bool:
        """Whether unreliable tuples share one mined unknown per system (``"pooled"``)."""
        return self.unreliable == "pooled"

    def _F(self, s: int) -> np.ndarray:
        """Mined f of the reliable signatures of system s (the pooled unknown excluded)."""
        P = self._packed
        m = int(self._sets[int(self._sys_a[s])].keys.shape[0])
        return self._sol.F[P.var_off[s]:P.var_off[s] + m]

    def _unreliable_rate(self, s: int) -> float:
        """Probability of the unreliable tuples of system s (NaN: pooled, none exist)."""
        x = int(self._sys_x[s])
        if not self.pooled:
            return float(self.fixed_rates[x])
        P = self._packed
        i = int(P.var_off[s + 1]) - 1
        return float(self._sol.F[i]) if P.T[i] > 0 else math.nan

    def unreliable_rate(self, attribute_set: Any, value: Any) -> float:
        """Probability given to the tuples of ``attribute_set`` whose signature is unreliable.

        Under ``unreliable="pooled"`` the maximum-likelihood pooled rate f_other, mined
        with the reliable f (NaN when every tuple's signature is reliable); otherwise the
        fixed rate of ``value``.
        """
        return self._unreliable_rate(self._system_of(attribute_set, value))

    def _system_of(self, attribute_set: Any, value: Any) -> int:
        A = _as_names(attribute_set, "attribute_set")
        try:
            a = [s.attributes for s in self._sets].index(A)
        except ValueError:
            raise InputError(f"attribute_set {A} has no reliable signature (mined sets: "
                             f"{self.attribute_sets[:10]})") from None
        labs = [str(v) for v in self.values]
        if str(value) not in labs:
            raise InputError(f"value {value!r} was not attacked; values: {self.values}")
        s = self._system(a, labs.index(str(value)))
        if s < 0:
            raise InputError(f"value {value!r} has no system (it occurs in no row, or in "
                             "every row)")
        return s

    def _unreliable_keys(self, a: int) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys, row counts) of the unreliable signatures of set a in the release."""
        st = self._sets[a]
        rows = np.flatnonzero(st.var_rows < 0)
        key = np.zeros(rows.size, dtype=np.int64)
        for i, attr in enumerate(st.attributes):
            key += self._view.qi_codes[attr][rows].astype(np.int64) * st.strides[i]
        uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        w = self._view.rows.weight
        if w is not None:
            cnt = np.bincount(inv.ravel(), weights=w[rows], minlength=uk.size)
        keep = ~np.isin(uk, st.keys)
        return uk[keep], cnt[keep].astype(np.int64)

    def _signature_labels(self, a: int, keys: np.ndarray | None = None) -> dict[str, list]:
        st = self._sets[a]
        rest = (st.keys if keys is None else keys).copy()
        out: dict[str, list] = {}
        codes = {}
        for i in range(len(st.attributes) - 1, -1, -1):
            codes[i] = rest // st.strides[i]
            rest = rest - codes[i] * st.strides[i]
        for i, attr in enumerate(st.attributes):
            out[attr] = self._view.qi_labels[attr].take(pa.array(codes[i])).to_pylist()
        return out

    def distribution(self, attribute_set: Any, value: Any) -> dict:
        """``{signature tuple: p}`` mined for one attribute set and one x (its label)."""
        A = _as_names(attribute_set, "attribute_set")
        s = self._system_of(A, value)
        a = int(self._sys_a[s])
        sig = self._signature_labels(a)
        F = self._F(s)
        return {tuple(sig[c][i] for c in A): float(F[i]) for i in range(F.shape[0])}

    def systems(self) -> list[dict[str, Any]]:
        """Describe every system.

        Per system: attribute set, x, signatures, log-likelihood, iterations, status,
        flags, residual of equations (4)-(6), number of distinct local maxima found.
        """
        out = []
        sol = self._sol
        for s in range(self.n_systems):
            a = int(self._sys_a[s])
            names = _flag_names(int(sol.flags[s]))
            out.append({"attribute_set": list(self._sets[a].attributes),
                        "value": self.values[int(self._sys_x[s])],
                        "n_signatures": int(self._sets[a].keys.shape[0]),
                        "log_likelihood": float(sol.loglik[s]),
                        "iterations": int(sol.iterations[s]),
                        "status": "converged" if "converged" in names else
                        ("max_iter" if "max_iter" in names else "failed"),
                        "flags": list(names), "residual": float(sol.residual[s]),
                        "n_local_maxima": int(sol.n_maxima[s]),
                        "unreliable_rate": _json_float(self._unreliable_rate(s))})
        return out

    def table(self) -> pa.Table:
        """Return every mined probability as a long table.

        Columns: ``attributes`` (comma-joined), one column per QI column (null where the
        column is not in the set), ``value``, ``probability``, ``support``.
        """
        cols: dict[str, list] = {"attributes": []}
        for c in self._view.qi:
            cols[c] = []
        cols.update({"value": [], "probability": [], "support": []})
        for s in range(self.n_systems):
            a = int(self._sys_a[s])
            st = self._sets[a]
            sig = self._signature_labels(a)
            F = self._F(s)
            for i in range(F.shape[0]):
                cols["attributes"].append(",".join(st.attributes))
                for c in self._view.qi:
                    cols[c].append(sig[c][i] if c in st.attributes else None)
                cols["value"].append(str(self.values[int(self._sys_x[s])]))
                cols["probability"].append(float(F[i]))
                cols["support"].append(int(st.support[i]))
        arrays = {"attributes": pa.array(cols["attributes"], pa.string())}
        for c in self._view.qi:
            arrays[c] = pa.array(cols[c], self._view.qi_labels[c].type)
        arrays["value"] = pa.array(cols["value"], pa.string())
        arrays["probability"] = pa.array(cols["probability"], pa.float64())
        arrays["support"] = pa.array(cols["support"], pa.int64())
        return pa.table(arrays)

    def knowledge(self) -> Knowledge:
        """Return the mined distributions as a :class:`~fastpriv.knowledge.Knowledge`.

        Value labels as attacked; fallback = :attr:`fixed_rates`. Under
        ``unreliable="pooled"`` every unreliable signature present in the release is listed
        with its set's pooled rate f_other, so an audit of the same release with this
        knowledge sees exactly the attack's probabilities. Ready for
        :func:`fastpriv.robustness.audit` or ART.
        """
        plain = all(len(m) == 1 and m[0] == v
                    for v, m in zip(self.values, self.value_members, strict=True))
        labels = list(self.values) if plain else [str(v) for v in self.values]
        ks = []
        for a, st in enumerate(self._sets):
            keys, support = st.keys, st.support
            if self.pooled:
                ukeys, ucount = self._unreliable_keys(a)
                keys = np.concatenate([keys, ukeys])
                support = np.concatenate([support, ucount])
            P = np.full((keys.shape[0], len(labels)), np.nan)
            m = st.keys.shape[0]
            any_sys = False
            for x in range(len(labels)):
                s = self._system(a, x)
                if s >= 0:
                    P[:m, x] = self._F(s)
                    P[m:, x] = self._unreliable_rate(s)
                    any_sys = True
            if not any_sys:
                continue
            sig = self._signature_labels(a, keys)
            ks.append(Knowledge.from_arrays(st.attributes, {c: sig[c] for c in st.attributes},
                                            labels, P, support=support))
        fb = {lab: float(r) for lab, r in zip(labels, self.fixed_rates, strict=False)}
        if not ks:
            raise InputError("no attribute set has a reliable signature: nothing was mined")
        return Knowledge.combine(*ks, fallback=fb)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (no per-signature table; see :meth:`table`)."""
        return json_safe({"attribute_sets": [list(a) for a in self.attribute_sets],
                "pruned": [list(a) for a in self.pruned], "values": [str(v) for v in
                                                                    self.values],
                "min_support": self.min_support, "epsilon": self.epsilon,
                "confidence": self.confidence, "n_systems": self.n_systems,
                "unreliable": self.unreliable,
                "fixed_rates": self.fixed_rates.tolist(), "seconds": self.seconds,
                "params": self.params, "systems": self.systems()})


def _json_float(v: float) -> float | None:
    return None if math.isnan(v) else float(v)


def _fixed_rates(unreliable: Any, totals: np.ndarray, n: int) -> tuple[np.ndarray, str]:
    """(rate per x, rule name) of the unreliable-signature rule (spec ``foreground.md``)."""
    rules = "'pooled', 'uniform', 'global' or a probability in (0, 1)"
    if isinstance(unreliable, str):
        if unreliable in ("pooled", "global"):
            return totals / n, unreliable
        if unreliable == "uniform":
            return np.full(totals.shape[0], 0.5), unreliable
        raise InputError(f"unreliable must be {rules}; got {unreliable!r}")
    if isinstance(unreliable, bool) or not isinstance(unreliable, numbers.Real) or \
            not 0.0 < float(unreliable) < 1.0:
        raise InputError(f"unreliable must be {rules}; got {unreliable!r}")
    return np.full(totals.shape[0], float(unreliable)), "fixed"


def mine(data: Any, *, qi: Sequence[str] | None = None, sensitive: str | None = None,
         group: str | None = None, sensitive_table: Any = None, count: str = "count",
         sensitive_values: Any = None, max_set_size: int | None = None,
         epsilon: float = 0.01, confidence: float = 0.9, min_support: int | None = None,
         weight: str | None = None, nulls: str = "error", n_random: int = 2, seed: int = 0,
         max_iter: int = 300, solver_tol: float = 1e-10, newton_max: int = NEWTON_MAX,
         unreliable: Any = "pooled",
         progress: Callable[[int, int], None] | None = None,
         max_seconds: float | None = MAX_SECONDS) -> MinedDistributions:
    """Mine the foreground knowledge of a release (Wong et al., Section 4, Algorithm 1).

    For every attribute set A ⊆ ``qi`` (Apriori order, |A| ≤ ``max_set_size``) the
    signatures with a reliable sample (≥ ⌈ln(2/δ)/(2ε²)⌉ tuples; Theorem 1 of the paper,
    Hoeffding) become unknowns f_i = p(s_i : x) for each attacked x; tuples with an
    unreliable signature share one more unknown f_other per system (``unreliable=
    "pooled"``, the default) or a fixed rate. Every (A, x) system is solved
    for its maximum-likelihood f in one batched parallel kernel (EM + safeguarded Newton,
    several starts; see :func:`fit_global_distribution`).

    Parameters
    ----------
    data : table-like or Release
        Either the joined table (QI columns, group id and sensitive value per row — only the
        per-group value counts are used), a Release carrying the row view of ``qi``
        (``Release.from_table(table, qi=..., group=..., sensitive=...)``) or, with
        ``sensitive_table``, Anatomy's QI table (QI columns and group id).
    qi : sequence of str, optional
        Quasi-identifier columns (exact values, as the adversary knows them); default, for a
        Release built with its QI columns, those of its row view.
    sensitive : str
        Sensitive column (of ``data``, or of ``sensitive_table``).
    group : str
        Group-id column (tables only).
    sensitive_table : table-like, optional
        Anatomy's sensitive table: (group id, value, count) rows.
    count : str
        Count column of ``sensitive_table``.
    sensitive_values : optional
        What x ranges over: ``None`` = every value separately; a list whose entries are
        values or collections of values (a collection is ONE value set x, e.g. the paper's
        low-education set); or a mapping label -> value set.
    max_set_size : int, optional
        Largest attribute set (default: all of ``qi``).
    epsilon, confidence : float
        Hoeffding parameters ε, δ (paper: 0.01 and 0.9, J = 3,993; see
        :func:`fastpriv.knowledge.reliable_support`).
    min_support : int, optional
        Explicit reliable sample size (overrides ``epsilon``/``confidence``; 1 keeps
        everything).
    weight : str, optional
        Multiplicity column of the joined table: each row stands for ``weight`` identical
        individuals (the result equals the expanded table's).
    nulls : {"error", "drop", "value"}
        Nulls in the used columns.
    n_random, seed, max_iter, solver_tol, newton_max :
        Solver settings (random starts per system besides the within-group-frequency and
        global-rate starts; iterations per start; projected-gradient tolerance; largest
        system solved by Newton).
    unreliable : {"pooled", "uniform", "global"} or float
        How tuples whose signature is not reliable enter each system (spec
        ``foreground.md``): ``"pooled"`` (default) — all unreliable tuples of an attribute
        set share one extra unknown f_other, the maximum-likelihood pooled rate, solved in
        the same system as the reliable f (a fixed rate that is wrong for those tuples
        biases every reliable f of their groups); ``"uniform"`` — fixed at 1/2, the
        paper's literal "uniform distribution will be assumed"; ``"global"`` — fixed at
        the release's rate of x; or a fixed number in (0, 1).
    progress : callable(done, total), optional
        Called after each attribute set is counted.
    max_seconds : float or None
        Time bound of the solve (default :data:`fastpriv._budget.MAX_SECONDS`; None:
        none). Every evaluation of a group's likelihood costs O(N · min(n, N − n)) for N
        tuples with n of x — quadratic in the group's size — and a system needs hundreds:
        the work is estimated from the packed systems before solving
        (:data:`SOLVE_OP_SECONDS`); beyond the bound an :class:`InputError` gives the
        estimate and the way out, and a long solve within it shows its estimate on stderr.

    """
    t0 = time.perf_counter()
    from .release import row_qi

    max_seconds = check_max_seconds(max_seconds)

    qi = row_qi(data, qi)
    if qi is None:
        raise InputError("qi: give the quasi-identifier columns (or a Release built with "
                         "them: Release.from_table(t, qi=..., group=..., sensitive=...))")
    view = read_view(data, qi=qi, sensitive=sensitive, group=group,
                      sensitive_table=sensitive_table, count=count, weight=weight, nulls=nulls)
    setup, gcount = plan_mining(
        view, sensitive_values=sensitive_values, max_set_size=max_set_size, epsilon=epsilon,
        confidence=confidence, min_support=min_support, unreliable=unreliable,
        n_random=n_random, seed=seed, max_iter=max_iter, solver_tol=solver_tol,
        newton_max=newton_max, progress=progress)
    part = None
    if setup.sys_a.size:
        part = pack_groups(view, [st.var_rows for st in setup.sets], gcount, setup.sys_a,
                            setup.sys_x, setup.n_signatures, pooled=setup.pooled)
    return solve_mining(view, setup, gcount, part, max_seconds=max_seconds,
                        seconds={"read": setup.started - t0})


@dataclass(frozen=True, eq=False)
class MiningPlan:
    """What mining decides before any group is packed: values, signatures, systems.

    Made from the whole release (:func:`mine`) or, in a fold, from its distinct (QI,
    sensitive) cells (:mod:`fastpriv.foreground_fold`): the attacked values ``targets``
    ((label, value codes)), the reliable sample ``J``, the fixed rates ``f0`` per value and
    their ``rule``, the reliable signatures ``sets`` and ``pruned`` sets, the systems
    ``(sys_a, sys_x)`` and the solver ``params``.
    """

    targets: list
    J: int
    epsilon: float
    confidence: float
    f0: np.ndarray
    rule: str
    sets: list
    pruned: list
    sys_a: np.ndarray
    sys_x: np.ndarray
    params: dict
    started: float
    seconds: dict

    @property
    def pooled(self) -> bool:
        """Whether unreliable tuples share one unknown per system."""
        return self.rule == "pooled"

    @property
    def n_signatures(self) -> np.ndarray:
        """Reliable signatures of each attribute set."""
        return np.array([st.keys.shape[0] for st in self.sets], dtype=np.int64)


def plan_mining(view: _View, *, sensitive_values: Any = None, max_set_size: int | None = None,
                epsilon: float = 0.01, confidence: float = 0.9, min_support: int | None = None,
                unreliable: Any = "pooled", n_random: int = 2, seed: int = 0,
                max_iter: int = 300, solver_tol: float = 1e-10, newton_max: int = NEWTON_MAX,
                progress: Callable[[int, int], None] | None = None
                ) -> tuple[MiningPlan, np.ndarray]:
    """Decide the mining of ``view`` (Apriori over the QI, Algorithm 1's first half).

    Returns the :class:`MiningPlan` and the (n_x, G) counts of each attacked value per
    group. Only value totals and signature supports are read, so the plan of a release's
    distinct (QI, sensitive) cells (one group) is the plan of the release.
    """
    t1 = time.perf_counter()
    J = support_threshold(min_support, epsilon, confidence)
    ms = check_max_set_size(max_set_size, len(view.qi))
    params = dict(n_random=check_int(n_random, "n_random", minimum=0),
                  seed=check_int(seed, "seed", minimum=0), default_starts=True,
                  max_iter=check_int(max_iter, "max_iter", minimum=1), em_warm=10,
                  tol=float(check_positive(solver_tol, "solver_tol")),
                  newton_max=check_int(newton_max, "newton_max", minimum=0))
    targets = _targets(sensitive_values, view.values.to_pylist())
    gcount = group_counts(view, targets)
    totals = gcount.sum(axis=1)
    f0, rule = _fixed_rates(unreliable, totals, view.n_units)
    sets, pruned = _mine_signatures(view, J, ms, progress)
    sys_a, sys_x = _systems(len(sets), totals, view.n_units)
    return MiningPlan(targets=targets, J=J, epsilon=float(epsilon),
                      confidence=float(confidence), f0=f0, rule=rule, sets=sets,
                      pruned=pruned, sys_a=sys_a, sys_x=sys_x, params=params, started=t1,
                      seconds={"signatures": time.perf_counter() - t1}), gcount


def solve_mining(view: _View, plan: MiningPlan, gcount: np.ndarray, part: Any, *,
                 max_seconds: float | None = MAX_SECONDS,
                 seconds: dict | None = None) -> MinedDistributions:
    """Solve the packed systems ``part`` of ``plan`` here; return the mined distributions.

    ``part``: every group's :class:`~fastpriv._foreground_pack.SystemsPart` (merged), or
    None without systems. The work is estimated first (:data:`SOLVE_OP_SECONDS`); beyond
    ``max_seconds`` an :class:`InputError` says so.
    """
    t3 = time.perf_counter()
    P = sol = None
    if part is not None:
        P = _packed_systems(part, plan.f0[plan.sys_x])
        with _bounded_solve(solve_work(P, plan.params["n_random"]),
                            int(np.max(P.grp_N, initial=0)), P.n_systems, max_seconds):
            sol = _solve(P, np.zeros(plan.sys_a.size + 1, dtype=np.int64), np.zeros(1),
                         **plan.params)
    return _mined(view, plan, gcount, P, sol, seconds, t3)


def solve_mining_in_blocks(view: _View, plan: MiningPlan, gcount: np.ndarray, counts: Any,
                           work: float, max_group: int,
                           solve_blocks: Callable[[], list[tuple[np.ndarray, Any]]], *,
                           max_seconds: float | None = MAX_SECONDS,
                           seconds: dict | None = None) -> MinedDistributions:
    """Solve the systems where their groups live; return the mined distributions.

    ``counts``: every system's counts and constants without its mixed groups
    (``SystemsPart.counts``); ``work`` and ``max_group``: :func:`solve_work` of the merged
    systems and their largest group, checked against ``max_seconds`` as in
    :func:`solve_mining` before ``solve_blocks()`` runs :func:`solve_block` on blocks of
    systems and returns ``[(system ids, solution)]``. The systems are independent (each
    seeded by its own index), so the joined solution equals :func:`solve_mining`'s.
    """
    t3 = time.perf_counter()
    P = _packed_systems(counts, plan.f0[plan.sys_x])
    with _bounded_solve(work, max_group, P.n_systems, max_seconds):
        sol = join_solutions(P.var_off, solve_blocks())
    return _mined(view, plan, gcount, P, sol, seconds, t3)


def solve_block(part: Any, systems: np.ndarray, f0: np.ndarray, params: dict) -> _Solution:
    """Solve the systems ``systems`` (their ids in the whole plan) packed in ``part`` alone.

    ``f0``: the fixed rate of each of them; ``params``: the plan's solver settings.
    """
    P = _packed_systems(part, f0)
    return _solve(P, np.zeros(P.n_systems + 1, dtype=np.int64), np.zeros(1), **params,
                  sys_id=np.asarray(systems, dtype=np.int64))


def join_solutions(var_off: np.ndarray, blocks: list[tuple[np.ndarray, _Solution]]
                   ) -> _Solution:
    """Put the solutions of blocks of systems (``(system ids, solution)``) in system order."""
    var_off = np.asarray(var_off, dtype=np.int64)
    S = var_off.shape[0] - 1
    where: dict[int, tuple[_Solution, int]] = {}
    for systems, sol in blocks:
        for i, s in enumerate(np.asarray(systems).tolist()):
            where[s] = (sol, i)
    if sorted(where) != list(range(S)):
        raise ValueError("join_solutions: every system must be solved once")
    per = [where[s] for s in range(S)]

    def take(name: str, off: str | None) -> np.ndarray:
        if off is None:
            return np.array([getattr(sol, name)[i] for sol, i in per])
        return np.concatenate([getattr(sol, name)[getattr(sol, off)[i]:getattr(sol, off)[i + 1]]
                               for sol, i in per])

    def offsets(off: str) -> np.ndarray:
        sizes = [int(getattr(sol, off)[i + 1] - getattr(sol, off)[i]) for sol, i in per]
        return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)

    return _Solution(take("F", "var_off"), *(take(f, None) for f in (
        "loglik", "iterations", "flags", "residual", "pgrad", "n_maxima", "second",
        "n_endpoints")), take("ep_F", "epF_off"), take("ep_ll", "ep_off"),
        take("ep_kind", "ep_off"), take("ep_it", "ep_off"), ep_off=offsets("ep_off"),
        epF_off=offsets("epF_off"), var_off=var_off)


class _bounded_solve:  # noqa: N801 - used as a context manager
    """Refuse a solve estimated beyond ``max_seconds``; show a long one's estimate."""

    def __init__(self, work: float, max_group: int, n_systems: int,
                 max_seconds: float | None) -> None:
        from ._progress import Estimate

        est = work * SOLVE_OP_SECONDS
        what = (f"solving {n_systems:,} foreground systems (groups of up to "
                f"{max_group:,} tuples)")
        check_seconds(est, what, "attack fewer values (sensitive_values= / "
                      "--sensitive-values), smaller attribute sets (max_set_size= / "
                      "--max-set-size), a release of smaller groups, or raise max_seconds "
                      "(--max-seconds; none waits)", max_seconds)
        self._shown = Estimate(what, est)

    def __enter__(self) -> None:
        self._shown.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._shown.__exit__(*exc)


def _mined(view: _View, plan: MiningPlan, gcount: np.ndarray, P: _Packed | None,
           sol: _Solution | None, seconds: dict | None, t3: float) -> MinedDistributions:
    took = {**(seconds or {}), **plan.seconds, "build": t3 - plan.started
            - plan.seconds["signatures"], "solve": time.perf_counter() - t3}
    took["total"] = sum(took.values())
    targets = plan.targets
    return MinedDistributions(
        attribute_sets=[s.attributes for s in plan.sets], pruned=plan.pruned,
        values=[t[0] for t in targets],
        value_members=[[view.values[c].as_py() for c in t[1]] for t in targets],
        min_support=plan.J, epsilon=plan.epsilon, confidence=plan.confidence,
        fixed_rates=plan.f0, unreliable=plan.rule, seconds=took,
        _view=view, _sets=plan.sets, _sys_a=plan.sys_a, _sys_x=plan.sys_x, _packed=P,
        _sol=sol, _params=plan.params, _gcount=gcount)


def _systems(n_sets: int, totals: np.ndarray, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the (attribute set, x) systems to solve: x neither absent nor everywhere."""
    sys_a, sys_x = [], []
    for a in range(n_sets):
        for x in range(totals.shape[0]):
            if 0 < totals[x] < n_units:
                sys_a.append(a)
                sys_x.append(x)
    return np.asarray(sys_a, dtype=np.int64), np.asarray(sys_x, dtype=np.int64)


def _var_rows(view: _View, per_set: list[np.ndarray], m_of_a: np.ndarray, *,
              pooled: bool) -> np.ndarray:
    """Every unit's variable per attribute set, concatenated (``build_systems``' var_rows).

    ``per_set`` holds each set's variable per row (-1 unreliable); weighted rows are
    expanded here (units of a row share its signature), since the kernel reads one entry
    per unit. Pooled: the unreliable tuples of set a are one more variable, index m_a.
    """
    units = view.rows.unit_rows
    if units is not None:
        per_set = [v[units] for v in per_set]
    if pooled:
        return np.concatenate([np.where(v >= 0, v, m).astype(np.int32)
                               for v, m in zip(per_set, m_of_a.tolist(), strict=True)])
    return np.concatenate(per_set)


def pack_groups(view: _View, per_set: list[np.ndarray], gcount: np.ndarray,
                 sys_a: np.ndarray, sys_x: np.ndarray, n_signatures: np.ndarray, *,
                 pooled: bool) -> Any:
    """Pack every system over the view's groups (a ``SystemsPart``).

    ``per_set``: each attribute set's variable per row; ``n_signatures``: its number of
    reliable signatures.
    """
    from ._foreground_pack import pack_part

    m = np.asarray(n_signatures, dtype=np.int64)
    return pack_part(view.goff, view.rows.unit_order, _var_rows(view, per_set, m, pooled=pooled),
                     gcount, sys_a, sys_x, m + 1 if pooled else m)


def _packed_systems(part: Any, f0_sys: np.ndarray) -> _Packed:
    """Return the solver's pack of merged systems (``f0_sys``: each system's fixed rate)."""
    from ._foreground_pack import constants

    return _packed(part.var_off, part.T, part.C0, part.C1, *part.profiles(), f0_sys,
                   constants(part, f0_sys))


# ====================================================================== attack
@dataclass(frozen=True, eq=False)
class AttackWitness(Witness):
    """The most exposed tuple of a foreground attack.

    ``row`` (input row), ``group`` (its label), ``posterior`` (its worst p(t : x)),
    ``attribute_set`` and ``value`` (the mined set and x realising it; ``None`` for the
    random-worlds posterior n_x / N), ``problematic`` (p > 1/r).
    """

    row: int
    group: Any
    posterior: float
    attribute_set: tuple | None
    value: Any
    problematic: bool

    def summary(self) -> str:
        """One line naming the tuple and how it is exposed."""
        return (f"row {self.row} in group {self.group!r}: {self.value!r} with probability "
                f"{self.posterior:.4g} by {exposure(self.attribute_set)}")


def exposure(attribute_set: Sequence[str] | None) -> str:
    """Name what exposes a tuple in a witness's summary.

    The mined patterns on ``attribute_set``, or (None) the group's counts alone (the
    random-worlds posterior n_x / N).
    """
    return (f"patterns on {', '.join(attribute_set)}" if attribute_set
            else "the group's counts alone")


@dataclass(frozen=True, eq=False)
class ForegroundAttack(Result):
    """Result of :func:`attack`: every tuple's worst posterior under the mined knowledge.

    Attributes
    ----------
    r, threshold : float
        The privacy parameter and 1/r; a tuple is problematic when p > 1/r (relative slack
        ``tol`` for float rounding at exact ties).
    posterior : numpy.ndarray
        Per row attacked, max over attribute sets A and attacked x of p(t : x) (binary
        model, mined f; 0 for a tuple whose group holds no attacked value). Rows dropped
        by ``nulls="drop"`` or for weight 0 are not attacked; :attr:`input_row` gives each
        entry's input row number, the number every ``row`` of a witness, :meth:`tuples`
        and :meth:`explain` uses.
    witness_set, witness_value : numpy.ndarray
        Index of the attribute set / x realising it (-1: no mined set — random-worlds
        posterior n_x/N, or a value present in every row).
    problematic : numpy.ndarray of bool
    mined : MinedDistributions
    measures : dict or None
        With ``original``: ``n_sensitive``, ``n_non_sensitive``, ``recall`` (problematic
        among sensitive tuples), ``false_flag_rate`` (problematic among non-sensitive
        tuples), ``avg_breach_probability`` (mean worst posterior over sensitive tuples),
        ``own_value_recall`` and ``avg_own_value_posterior`` (using only p(t : x) for the
        tuple's true x), ``avg_relative_error`` / ``avg_absolute_error`` of the mined f
        against the original table's #(s ∧ x)/#s over the reliable signatures (relative
        error over entries whose true value is > 0; ``n_zero_truth`` entries are excluded
        from it; spec ``foreground.md``: the paper's "average relative error" has the
        magnitude of the absolute one), ``unreliable`` (the rule used).
    row_weight : numpy.ndarray or None
        Multiplicity of each row (weighted rows), else ``None``.
    seconds : dict
        ``mining`` (everything in :func:`mine`), ``posteriors``, ``total``.

    """

    r: float
    threshold: float
    tol: float
    posterior: np.ndarray
    witness_set: np.ndarray
    witness_value: np.ndarray
    problematic: np.ndarray
    mined: MinedDistributions
    measures: dict | None
    row_weight: np.ndarray | None
    seconds: dict = field(compare=False)
    n_undefined: int = 0

    @property
    def n_problematic(self) -> int:
        """Number of tuples (individuals) with p > 1/r."""
        if self.row_weight is None:
            return int(self.problematic.sum())
        return int(self.row_weight[self.problematic].sum())

    @property
    def input_row(self) -> np.ndarray:
        """Input row number of each row attacked (entry i of :attr:`posterior`)."""
        return self.mined._view.rows.input_rows(np.arange(self.posterior.shape[0],
                                                          dtype=np.int64))

    @property
    def n_rows(self) -> int:
        """Number of tuples (individuals) attacked."""
        return int(self.posterior.shape[0] if self.row_weight is None
                   else self.row_weight.sum())

    @property
    def value(self) -> int:
        """The number of problematic tuples."""
        return self.n_problematic

    @property
    def params(self) -> dict:
        """The parameters of the attack."""
        md = self.mined
        return {"r": self.r, "tol": self.tol, "min_support": md.min_support,
                "epsilon": md.epsilon, "confidence": md.confidence,
                "unreliable": md.unreliable, "values": [str(v) for v in md.values]}

    @property
    def witness(self) -> AttackWitness | None:
        """The tuple with the highest posterior (``None`` when nothing is exposed)."""
        if not self.posterior.size or not self.posterior.max() > 0:
            return None
        v = self.mined._view
        row = int(v.rows.ranked(self.posterior)[0])     # ties: the one content rule
        a, x = int(self.witness_set[row]), int(self.witness_value[row])
        return AttackWitness(row=v.rows.input_rows(row), group=v.group_labels.column(0)[
            int(v.row_group[row])].as_py(), posterior=float(self.posterior[row]),
            attribute_set=tuple(self.mined.attribute_sets[a]) if a >= 0 else None,
            value=self.mined.values[x] if x >= 0 else None,
            problematic=bool(self.problematic[row]))

    def tuples(self) -> pa.Table:
        """Return a table with one row per tuple.

        Columns: ``row``, ``group``, ``posterior``, ``attribute_set``, ``value``,
        ``problematic``.
        """
        v = self.mined._view
        sets = [",".join(a) for a in self.mined.attribute_sets]
        vals = [str(x) for x in self.mined.values]
        ws = self.witness_set
        wv = self.witness_value
        return pa.table({
            "row": pa.array(v.rows.input_rows(np.arange(v.n, dtype=np.int64))),
            "group": v.group_labels.column(0).take(pa.array(v.row_group)),
            "posterior": pa.array(self.posterior),
            "attribute_set": pa.array([sets[i] if i >= 0 else None for i in ws.tolist()],
                                      pa.string()),
            "value": pa.array([vals[i] if i >= 0 else None for i in wv.tolist()],
                              pa.string()),
            "problematic": pa.array(self.problematic)})

    def explain(self, row: int) -> dict[str, Any]:
        """Explain why tuple ``row`` (an input row number) is (or is not) breached.

        Gives its group, the witness attribute set and x, and for each tuple of the group
        its signature, mined f and posterior.
        """
        v = self.mined._view
        return self._explain_held(v.rows.held_row(row, param="row"))

    def _explain_held(self, row: int) -> dict[str, Any]:
        """:meth:`explain` for held row ``row`` (rows are reported by input number)."""
        from ._kernels import possible_worlds as pw

        v = self.mined._view
        g = int(v.row_group[row])
        rows = v.order[v.goff[g]:v.goff[g + 1]]
        a = int(self.witness_set[row])
        x = int(self.witness_value[row])
        out: dict[str, Any] = {"row": v.rows.input_rows(row),
                               "group": v.group_labels.column(0)[g].as_py(),
                               "posterior": float(self.posterior[row]),
                               "problematic": bool(self.problematic[row])}
        if x < 0:
            out["attribute_set"] = None
            return out
        md = self.mined
        n_x = int(md._gcount[x, g])
        out["value"] = md.values[x]
        out["n_x"] = n_x
        if a < 0:
            out["attribute_set"] = None
            out["note"] = "no reliable signature: random-worlds posterior n_x / N"
            return out
        st = md._sets[a]
        s = md._system(a, x)
        F = md._F(s)
        sig = md._signature_labels(a)
        f0 = md._unreliable_rate(s)
        fs = []
        members = []
        for rr in rows.tolist():
            var = int(st.var_rows[rr])
            fs.append(float(F[var]) if var >= 0 else f0)
            members.append({"row": v.rows.input_rows(rr),
                            "signature": (tuple(sig[c][var] for c in st.attributes)
                                          if var >= 0 else None),
                            "f": fs[-1], "reliable": var >= 0})
        fa = kernel_array(np.asarray(fs), np.float64)
        p, _, _ = pw.binary_posteriors_csr(kernel_array(np.array([0, len(fs)]), np.int64), fa,
                                           kernel_array(np.array([n_x]), np.int64),
                                           int(pw.PREFIX_LIMIT), _nblocks())
        for mbr, pv in zip(members, p.tolist(), strict=False):
            mbr["posterior"] = pv
        out["attribute_set"] = list(st.attributes)
        out["tuples"] = members
        return out

    def worst(self, k: int = 10) -> list[dict[str, Any]]:
        """Return the k tuples (people) with the highest posterior, with their witnesses.

        Ties are taken in content order (:attr:`fastpriv.rows.RowView.content_order`: QI
        values, group, sensitive value, then row number), so the list names the same people
        whatever the input's row order, in memory or on an engine's row counts. With
        weighted rows, a row stands for ``weight`` identical people with one posterior: it
        is listed once, ``people`` saying how many of the k it stands for, so the list
        names the same k people as the expanded table's.
        """
        k = check_int(k, "k", minimum=0)
        order = self.mined._view.rows.ranked(self.posterior)
        if self.row_weight is None:
            return [self._explain_held(int(i)) for i in order[:k]]
        out: list[dict[str, Any]] = []
        left = k
        for i in order:
            if left <= 0:
                break
            people = min(int(self.row_weight[i]), left)
            if people:
                out.append({**self._explain_held(int(i)), "people": people})
                left -= people
        return out

    def to_dict(self, max_items: int = 10) -> dict[str, Any]:
        """JSON-safe summary."""
        return json_safe({
            "r": self.r, "threshold": self.threshold, "tol": self.tol,
            "value": self.value, "params": self.params, "witness": self.witness,
            "n_rows": self.n_rows, "n_problematic": self.n_problematic,
            "max_posterior": float(self.posterior.max()) if self.posterior.size else None,
            "n_undefined": self.n_undefined,
            "measures": self.measures, "seconds": self.seconds,
            "mined": self.mined.to_dict(), "worst": self.worst(max_items)})

    def summary(self, *, verbose: bool = False) -> str:
        """Return a few plain lines: the verdict, who is breached, how the patterns were mined.

        ``verbose`` adds the solver's terms (systems solved, the reliable sample size J).
        """
        md = self.mined
        n = self.n_rows
        verdict = "FAIL" if self.n_problematic else "PASS"
        lines = [f"{verdict}: foreground attack at r = {self.r:g} — patterns mined from the "
                 f"release itself link {self.n_problematic:,} of {n:,} people "
                 f"(problematic tuples) to a sensitive value with probability above "
                 f"1/r = {self.threshold:.4g}.",
                 f"  Patterns mined over {len(md.attribute_sets)} sets of quasi-identifiers; "
                 f"people with rare quasi-identifier values were estimated by the "
                 f"'{md.unreliable}' rule."]
        if verbose:
            lines.append(f"  mined {md.n_systems} systems (J = {md.min_support}) in "
                         f"{self.seconds['mining']:.3f} s; posteriors "
                         f"{self.seconds['posteriors']:.3f} s")
        if self.measures:
            m = self.measures
            lines.append(f"  Against the original table: {m['n_sensitive']:,} sensitive people, "
                         f"recall {m['recall']:.4f}, false flags {m['false_flag_rate']:.4f}, "
                         f"average breach probability {m['avg_breach_probability']:.4f}; "
                         f"mined distributions: mean absolute error "
                         f"{m['avg_absolute_error']:.4f}, mean relative error "
                         f"{m['avg_relative_error']:.4f}")
        return "\n".join(lines)


def attack(data: Any, *, qi: Sequence[str] | None = None, sensitive: str | None = None,
           group: str | None = None, r: float, sensitive_table: Any = None,
           count: str = "count", sensitive_values: Any = None,
           max_set_size: int | None = None, epsilon: float = 0.01, confidence: float = 0.9,
           min_support: int | None = None, original: Any = None, weight: str | None = None,
           nulls: str = "error", tol: float = 1e-12, n_random: int = 2, seed: int = 0,
           max_iter: int = 300, solver_tol: float = 1e-10, unreliable: Any = "pooled",
           progress: Callable[[int, int], None] | None = None,
           max_seconds: float | None = MAX_SECONDS) -> ForegroundAttack:
    """Foreground-knowledge attack on a release (Wong et al., Sections 3-5).

    Mines p(s : x) from the release itself (:func:`mine`), then computes for every tuple t,
    attribute set A and attacked x the binary-model posterior
    p(t : x) = f_t E_{n-1}(f_{-t}) / E_n(f) with the mined f of its group (spec
    ``robustness.md``; one batched ESP kernel call per x), and keeps each tuple's worst
    value with the (A, x) realising it. A tuple is problematic when p > 1/r.

    Parameters
    ----------
    data : table-like or Release
        The joined table, a Release carrying the row view of ``qi``, or, with
        ``sensitive_table``, the QI table (see :func:`mine`). **Only the per-group value
        counts of the sensitive column are used**; the link between a row and its value is
        never read by the attack.
    qi : sequence of str, optional
        Quasi-identifier columns (default, for a Release built with them: its row view's).
    sensitive : str
        Sensitive column (default for a Release: its sensitive column).
    group : str
        Group-id column (tables only).
    r : float
        Privacy parameter (> 1); threshold 1/r.
    sensitive_table : table-like, optional
        Anatomy's sensitive table (group id, value, count).
    count : str
        Count column of ``sensitive_table``.
    sensitive_values : optional
        Values and/or value sets to attack (see :func:`mine`).
    max_set_size : int, optional
        Largest attribute set.
    epsilon, confidence, min_support, weight, nulls : optional
        As in :func:`mine`.
    n_random, seed, max_iter, solver_tol, unreliable : optional
        As in :func:`mine`.
    original : table-like, optional
        The original table, row-aligned with the release (same rows, same order, same QI
        values; a joined release table qualifies): either the input's rows, or only the
        rows kept after ``nulls="drop"``. Enables the paper's measures, computed from its
        ``sensitive`` column (not with ``weight``).
    tol : float
        Relative slack: problematic iff p > (1/r)(1 + tol).
    progress : callable(done, total), optional
        Progress over attribute sets.
    max_seconds : float or None
        Time bound of the mining's solve, as in :func:`mine`.

    Returns
    -------
    ForegroundAttack

    """
    r, tol = check_attack(r, tol)
    if original is not None and weight is not None:
        raise InputError("original= is row-aligned with one row per individual; it cannot "
                         "be combined with weight=")
    t0 = time.perf_counter()
    md = mine(data, qi=qi, sensitive=sensitive, group=group,
              sensitive_table=sensitive_table, count=count, sensitive_values=sensitive_values,
              max_set_size=max_set_size, epsilon=epsilon, confidence=confidence,
              min_support=min_support, weight=weight, nulls=nulls, n_random=n_random,
              seed=seed, max_iter=max_iter, solver_tol=solver_tol, unreliable=unreliable,
              progress=progress, max_seconds=max_seconds)
    t1 = time.perf_counter()
    v = md._view
    if original is not None and v.rows.weight is not None:
        raise InputError("original= is row-aligned with one row per individual; this "
                         "release's rows are weighted")
    true_code = None if original is None else _original_codes(original, v,
                                                                 v.rel.sensitive_name)
    worst, wset, wval, own, n_undef = posteriors(md, true_code)
    thr = 1.0 / r
    problematic = worst > thr * (1.0 + tol)
    t2 = time.perf_counter()
    measures = None
    if original is not None:
        measures = _measures(md, worst, problematic, own, true_code, thr, tol)
    return ForegroundAttack(r=r, threshold=thr, tol=tol, posterior=worst, witness_set=wset,
                            witness_value=wval, problematic=problematic, mined=md,
                            measures=measures, row_weight=v.rows.weight,
                            seconds={"mining": t1 - t0, "posteriors": t2 - t1,
                                     "total": time.perf_counter() - t0},
                            n_undefined=n_undef)


def check_attack(r: Any, tol: Any) -> tuple[float, float]:
    """Return ``(r, tol)`` of an attack as floats, or raise :class:`InputError` naming them."""
    r = float(check_r(r))
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise InputError(f"tol must be a number >= 0, got {tol!r}") from None
    if not tol >= 0:
        raise InputError(f"tol must be >= 0, got {tol!r}")
    return r, tol


def posteriors(md: MinedDistributions, true_code: np.ndarray | None) -> tuple:
    """Every row's worst posterior over attribute sets and attacked x, with the (A, x).

    Returns ``(worst, set index, value index, own-value posterior or None, undefined)``;
    a group's posteriors read only its rows and the mined distributions.
    """
    from .rows import max_per_row

    v = md._view
    n = v.n
    worst = np.zeros(n, dtype=np.float64)
    wset = np.full(n, -1, dtype=np.int64)
    wval = np.full(n, -1, dtype=np.int64)
    own = None if true_code is None else np.zeros(n, dtype=np.float64)
    n_undef = 0
    sizes = np.diff(v.goff)
    for x in range(len(md.values)):
        gx = md._gcount[x]
        segs = np.flatnonzero(gx > 0)
        if segs.size == 0:
            continue
        lens = sizes[segs]
        seg_off = np.zeros(segs.size + 1, dtype=np.int64)
        np.cumsum(lens, out=seg_off[1:])
        pos = np.arange(seg_off[-1], dtype=np.int64) - np.repeat(seg_off[:-1] - v.goff[segs],
                                                                  lens)
        entry = v.order[pos]
        xs = [s for s in range(md.n_systems) if md._sys_x[s] == x]
        if not xs:          # x in every row, or no mined set: random worlds n_x / N
            best = np.repeat(gx[segs] / lens, lens)
            barg = None
        else:
            best, barg, undef = _best_over_systems(md, xs, entry, seg_off, gx[segs])
            n_undef += undef
        if v.rows.weight is not None:           # a row once per unit: keep its units' max
            keep = max_per_row(entry, best)
            entry, best = entry[keep], best[keep]
            barg = None if barg is None else barg[keep]
        upd = best > worst[entry]
        worst[entry[upd]] = best[upd]
        wset[entry[upd]] = -1 if barg is None else md._sys_a[barg[upd]]
        wval[entry[upd]] = x
        if own is not None:
            _own_update(own, entry, best, true_code, md.value_members_codes(x))
    return worst, wset, wval, own, n_undef


def for_parts(md: MinedDistributions) -> MinedDistributions:
    """Return the mined distributions without the release: what a part's posteriors read.

    The solution, each system's variable offsets and counts ``T`` (for the pooled rate),
    the reliable signatures without the rows' variables; no view, no group counts.
    """
    from dataclasses import replace

    P = md._packed
    if P is not None:
        empty_i = np.zeros(0, dtype=np.int64)
        P = _packed(P.var_off, P.T, P.C0, P.C1, np.zeros(P.n_systems + 1, dtype=np.int64),
                    empty_i, empty_i, np.zeros(0), np.zeros(1, dtype=np.int64), empty_i,
                    empty_i, P.f0, P.const)
    sets = [replace(st, var_rows=np.zeros(0, dtype=np.int32)) for st in md._sets]
    return replace(md, _view=None, _sets=sets, _packed=P, _gcount=None)


def part_posteriors(md: MinedDistributions, view: _View, variables: list[np.ndarray],
                    gcount: np.ndarray) -> tuple:
    """:func:`posteriors` of the rows of ``view`` (complete groups) under ``md``'s distributions.

    ``variables``: each attribute set's reliable-signature index per row of ``view`` (-1:
    unreliable); ``gcount``: the (n_x, G) counts of each attacked value per group of
    ``view``.
    """
    from dataclasses import replace

    sets = [replace(st, var_rows=v) for st, v in zip(md._sets, variables, strict=True)]
    return posteriors(replace(md, _view=view, _sets=sets, _gcount=gcount), None)


def _best_over_systems(md: MinedDistributions, xs: list[int], entry: np.ndarray,
                       seg_off: np.ndarray, n_x: np.ndarray) -> tuple:
    """Per entry: the largest posterior over the systems ``xs`` of one x, and which."""
    from ._kernels import possible_worlds as pw

    E = entry.shape[0]
    chunk = max(1, (1 << 23) // max(E, 1))
    best = np.full(E, -1.0)
    barg = np.full(E, -1, dtype=np.int64)
    n_undef = 0
    for c0 in range(0, len(xs), chunk):
        block = xs[c0:c0 + chunk]
        f = np.empty(len(block) * E)
        for b, s in enumerate(block):
            var = md._sets[int(md._sys_a[s])].var_rows[entry]
            F = md._F(s)
            f[b * E:(b + 1) * E] = np.where(var >= 0, F[np.maximum(var, 0)],
                                            md._unreliable_rate(s))
        off = (seg_off[None, :-1] + (np.arange(len(block)) * E)[:, None]).ravel()
        off = np.append(off, len(block) * E)
        p, _, _ = pw.binary_posteriors_csr(kernel_array(off, np.int64),
                                           kernel_array(np.clip(f, 0.0, 1.0), np.float64),
                                           kernel_array(np.tile(n_x, len(block)), np.int64),
                                           int(pw.PREFIX_LIMIT), _nblocks())
        p = p.reshape(len(block), E)
        bad = np.isnan(p)
        if bad.any():
            n_undef += int(bad.sum())
            p = np.where(bad, -1.0, p)
        k = np.argmax(p, axis=0)
        pk = p[k, np.arange(E)]
        upd = pk > best
        best[upd] = pk[upd]
        barg[upd] = np.asarray(block, dtype=np.int64)[k[upd]]
    return best, barg, n_undef


def _own_update(own: np.ndarray, entry: np.ndarray, p: np.ndarray, true_code: np.ndarray,
                members: np.ndarray) -> None:
    mine_ = np.isin(true_code[entry], members)
    e = entry[mine_]
    own[e] = np.maximum(own[e], p[mine_])


def _original_codes(original: Any, view: _View, sensitive: str) -> np.ndarray:
    """Release value code of every original row (-1: a value absent from the release)."""
    import pyarrow.compute as pc

    from ._arrow import as_table, canonical_labels

    t = as_table(original, param="original")
    check_columns([sensitive], t.column_names, "original")
    kept = view.rows.input_row
    if kept is not None and t.num_rows == view.rows.n_input_rows:
        t = t.take(pa.array(kept))          # aligned with the input: keep the rows audited
    if t.num_rows != view.n:
        raise InputError(f"original has {t.num_rows} rows but the release has {view.n}: the "
                         "rows must be aligned (same rows, same order)")
    for c in view.qi:
        if c in t.column_names:
            a = canonical_labels(t.column(c).combine_chunks())
            b = canonical_labels(view.rows.column(c))
            try:
                same = a.equals(b) or a.cast(b.type).equals(b)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                same = False
            if not same:
                raise InputError(f"original is not row-aligned with the release: column {c!r} "
                                 "differs")
    col = canonical_labels(t.column(sensitive).combine_chunks())
    vals = canonical_labels(view.values)
    try:
        idx = pc.index_in(col, value_set=vals)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        idx = pc.index_in(col.cast(vals.type), value_set=vals)
    return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _measures(md: MinedDistributions, worst: np.ndarray, problematic: np.ndarray,
              own: np.ndarray, true_code: np.ndarray, thr: float, tol: float) -> dict:
    members = [md.value_members_codes(x) for x in range(len(md.values))]
    allm = np.unique(np.concatenate(members)) if members else np.zeros(0, np.int64)
    sens = np.isin(true_code, allm)
    ns = int(sens.sum())
    nn = int((~sens).sum())
    out: dict[str, Any] = {
        "unreliable": md.unreliable, "n_sensitive": ns, "n_non_sensitive": nn,
        "recall": float(problematic[sens].mean()) if ns else math.nan,
        "false_flag_rate": float(problematic[~sens].mean()) if nn else math.nan,
        "avg_breach_probability": float(worst[sens].mean()) if ns else math.nan,
        "own_value_recall": float((own[sens] > thr * (1 + tol)).mean()) if ns else math.nan,
        "avg_own_value_posterior": float(own[sens].mean()) if ns else math.nan,
    }
    rel, ab, nz = [], [], 0
    for s in range(md.n_systems):
        a = int(md._sys_a[s])
        x = int(md._sys_x[s])
        st = md._sets[a]
        var = st.var_rows
        ok = var >= 0
        hit = ok & np.isin(true_code, members[x])
        m = st.keys.shape[0]
        true = np.bincount(var[hit], minlength=m) / st.support
        F = md._F(s)
        ab.append(np.abs(F - true))
        pos = true > 0
        nz += int((~pos).sum())
        rel.append(np.abs(F[pos] - true[pos]) / true[pos])
    out["avg_relative_error"] = float(np.concatenate(rel).mean()) if rel and sum(
        len(v) for v in rel) else math.nan
    out["avg_absolute_error"] = float(np.concatenate(ab).mean()) if ab else math.nan
    out["n_zero_truth"] = nz
    out["n_distribution_entries"] = int(sum(len(v) for v in ab))
    return out


def warmup() -> None:
    """Mine and attack (batched EM/Newton solvers) a small joined table (warm-up).

    ``fastpriv warmup``'s workload of the model (the registry's ``warmup_workload``).
    """
    rng = np.random.default_rng(0)
    n = 60
    table = pa.table({"q0": rng.integers(0, 3, n), "q1": rng.integers(0, 2, n),
                      "gid": np.repeat(np.arange(n // 4), 4),
                      "s": rng.choice(list("abcd"), n)})
    attack(table, qi=["q0", "q1"], sensitive="s", group="gid", r=2.0, min_support=3,
           n_random=1, original=table)
