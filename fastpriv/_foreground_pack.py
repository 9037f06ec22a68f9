"""The foreground systems of a set of complete groups, packed so that parts merge exactly.

Every (attribute set, x) system of the foreground attack (spec ``foreground.md``; Wong et
al., Section 4) is a sum over groups: per-variable counts ``T``, ``C0``, ``C1`` of the pure
groups, the distinct mixed groups with their weights (how many groups have that profile),
and a constant log-likelihood. :func:`pack_part` packs the groups of one part
(:func:`fastpriv._kernels.foreground.build_systems`, then ``dedupe_groups``); parts of
disjoint groups merge (:func:`merge_parts`): counts add, the profiles of each system are
concatenated and merged again. The constant is kept as counts of tuples at the fixed rate
and an exact sum (:mod:`fastpriv._exact_sum`) of the terms log C(N, n), so that
:func:`constants` gives the same floats for any split of the groups — and the merged
systems are those of the whole release, packed in the same order (``dedupe_groups`` orders
profiles by content), so they solve to the same bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._exact_sum import exact_sum, to_float
from ._validation import kernel_array

__all__ = ["SystemsPart", "assemble_counts", "constants", "merge_parts", "pack_part"]


@dataclass(frozen=True, eq=False)
class SystemsPart:
    """The packed systems of a set of complete groups (see the module notes).

    ``var_off`` / ``T`` / ``C0`` / ``C1``: each system's variables and their counts;
    ``k0`` / ``k1``: per system, the tuples at the fixed rate f0 in pure groups without x
    / of x only (and the N − n / n of mixed groups without a variable); ``log_binom``: per
    system, Σ log C(N, n) over those mixed groups, exactly (units of 2**-1127);
    ``grp_*`` / ``cls_*``: the distinct mixed groups of each system with their weights.
    """

    var_off: np.ndarray
    T: np.ndarray
    C0: np.ndarray
    C1: np.ndarray
    k0: np.ndarray
    k1: np.ndarray
    log_binom: tuple
    grp_off: np.ndarray
    grp_n: np.ndarray
    grp_N: np.ndarray
    grp_w: np.ndarray
    cls_off: np.ndarray
    cls_var: np.ndarray
    cls_mult: np.ndarray

    @property
    def n_systems(self) -> int:
        """Number of systems packed."""
        return int(self.var_off.shape[0] - 1)

    def profiles(self) -> tuple:
        """``(grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult)``."""
        return (self.grp_off, self.grp_n, self.grp_N, self.grp_w, self.cls_off, self.cls_var,
                self.cls_mult)

    def merge(self, *others: SystemsPart) -> SystemsPart:
        """Merge with the packs of disjoint sets of groups (:func:`merge_parts`)."""
        return merge_parts(self, *others)

    def select(self, systems: np.ndarray) -> SystemsPart:
        """Return the pack of ``systems`` alone (in that order; offsets rebased)."""
        systems = np.asarray(systems, dtype=np.int64)
        var_idx, var_len = _ranges(self.var_off, systems)
        grp_idx, grp_len = _ranges(self.grp_off, systems)
        cls_idx, cls_len = _ranges(self.cls_off, grp_idx)
        return SystemsPart(
            _offsets(var_len), self.T[var_idx], self.C0[var_idx], self.C1[var_idx],
            self.k0[systems], self.k1[systems], tuple(self.log_binom[s] for s in systems),
            _offsets(grp_len), self.grp_n[grp_idx], self.grp_N[grp_idx], self.grp_w[grp_idx],
            _offsets(cls_len), self.cls_var[cls_idx], self.cls_mult[cls_idx])

    def counts(self) -> SystemsPart:
        """Return the pack without its mixed groups: what the driver keeps after a solve."""
        return SystemsPart(self.var_off, self.T, self.C0, self.C1, self.k0, self.k1,
                           self.log_binom, np.zeros(self.n_systems + 1, dtype=np.int64),
                           *self.no_groups())

    @staticmethod
    def no_groups() -> tuple:
        """``(grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult)`` of no mixed group."""
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), np.zeros(1, dtype=np.int64), empty, empty


def _offsets(sizes: np.ndarray) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=np.int64)
    off = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    return off


def _ranges(off: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the indices ``off[w]:off[w+1]`` for each w of ``which`` and their lengths."""
    off = np.asarray(off, dtype=np.int64)
    starts = off[which]
    lengths = off[which + 1] - starts
    firsts = np.repeat(starts - _offsets(lengths)[:-1], lengths)
    return firsts + np.arange(int(lengths.sum()), dtype=np.int64), lengths


def _dedupe(grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult) -> tuple:
    from ._kernels import foreground as kf

    ints = [kernel_array(a, np.int64) for a in (grp_off, grp_n, grp_N)]
    return kf.dedupe_groups(*ints, kernel_array(grp_w, np.float64),
                            kernel_array(cls_off, np.int64), kernel_array(cls_var, np.int64),
                            kernel_array(cls_mult, np.int64))


def pack_part(goff: np.ndarray, order: np.ndarray, var_rows: np.ndarray, gcount: np.ndarray,
              sys_a: np.ndarray, sys_x: np.ndarray, m_of_a: np.ndarray) -> SystemsPart:
    """Pack the systems ``(sys_a, sys_x)`` over the groups of one part.

    Arguments as :func:`fastpriv._kernels.foreground.build_systems` (the rows of group g
    are ``order[goff[g]:goff[g+1]]``; ``var_rows`` per attribute set and row; ``gcount``
    per x and group).
    """
    from ._kernels import foreground as kf

    built = kf.build_systems(kernel_array(goff, np.int64), kernel_array(order, np.int64),
                             kernel_array(var_rows, np.int32),
                             kernel_array(gcount.ravel(), np.int64),
                             kernel_array(sys_a, np.int64), kernel_array(sys_x, np.int64),
                             kernel_array(m_of_a, np.int64))
    (var_off, T, C0, C1, grp_off, grp_n, grp_N, cls_off, cls_var, cls_mult, k0, k1, vsys,
     lb) = built
    ded = _dedupe(grp_off, grp_n, grp_N, np.ones(grp_n.shape[0]), cls_off, cls_var, cls_mult)
    sums = tuple(exact_sum(lb[vsys[s]:vsys[s + 1]]) if vsys[s + 1] > vsys[s] else 0
                 for s in range(sys_a.shape[0]))
    return SystemsPart(var_off, T, C0, C1, k0, k1, sums, *ded)


def merge_parts(*parts: SystemsPart) -> SystemsPart:
    """Merge the packed systems of disjoint sets of groups (the same systems in each)."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    S = first.n_systems
    if any(not np.array_equal(p.var_off, first.var_off) for p in parts):
        raise ValueError("merge_parts: the packs are of different systems")
    T, C0, C1 = (sum(getattr(p, f) for p in parts) for f in ("T", "C0", "C1"))
    k0 = sum(p.k0 for p in parts)
    k1 = sum(p.k1 for p in parts)
    log_binom = tuple(sum(p.log_binom[s] for p in parts) for s in range(S))
    # the mixed groups of system s: every part's, in system order, then merged again
    pieces: list[tuple[SystemsPart, int, int]] = [
        (p, int(p.grp_off[s]), int(p.grp_off[s + 1])) for s in range(S) for p in parts]
    sizes = np.array([b - a for _, a, b in pieces], dtype=np.int64).reshape(S, len(parts))
    grp_off = np.zeros(S + 1, dtype=np.int64)
    np.cumsum(sizes.sum(axis=1), out=grp_off[1:])
    grp_n = np.concatenate([p.grp_n[a:b] for p, a, b in pieces])
    grp_N = np.concatenate([p.grp_N[a:b] for p, a, b in pieces])
    grp_w = np.concatenate([p.grp_w[a:b] for p, a, b in pieces])
    lens = np.concatenate([np.diff(p.cls_off[a:b + 1]) for p, a, b in pieces])
    cls_off = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=cls_off[1:])
    cls_var = np.concatenate([p.cls_var[p.cls_off[a]:p.cls_off[b]] for p, a, b in pieces])
    cls_mult = np.concatenate([p.cls_mult[p.cls_off[a]:p.cls_off[b]] for p, a, b in pieces])
    ded = _dedupe(grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult)
    return SystemsPart(first.var_off, T, C0, C1, k0, k1, log_binom, *ded)


def constants(part: SystemsPart, f0: np.ndarray) -> np.ndarray:
    """Return each system's constant log-likelihood (``f0``: its fixed rate).

    Σ log C(N, n) (rounded once from the exact sum) + k0 · log(1 − f0) + k1 · log f0, a
    count of zero contributing nothing (a fixed rate of 0 or 1 gives −inf only to the
    systems that have such tuples).
    """
    out = np.empty(part.n_systems, dtype=np.float64)
    for s in range(part.n_systems):
        f = float(f0[s])
        c = to_float(part.log_binom[s])
        if part.k0[s]:
            c += int(part.k0[s]) * (math.log1p(-f) if f < 1.0 else -math.inf)
        if part.k1[s]:
            c += int(part.k1[s]) * (math.log(f) if f > 0.0 else -math.inf)
        out[s] = c
    return out


def assemble_counts(var_off: np.ndarray, blocks: list[tuple[np.ndarray, SystemsPart]]
                    ) -> SystemsPart:
    """Put the counts of blocks of systems (``(system ids, pack)``) back in system order.

    ``var_off``: every system's variables in the whole pack. Every system in exactly one
    block (the packs of :meth:`SystemsPart.select`); the result holds the counts and
    constants of every system and no mixed group (:meth:`SystemsPart.counts`).
    """
    var_off = np.asarray(var_off, dtype=np.int64)
    S = var_off.shape[0] - 1
    V = int(var_off[S])
    T, C0, C1 = np.zeros(V), np.zeros(V), np.zeros(V)
    k0 = np.zeros(S, dtype=np.int64)
    k1 = np.zeros(S, dtype=np.int64)
    log_binom: list = [None] * S
    for systems, part in blocks:
        systems = np.asarray(systems, dtype=np.int64)
        idx, _ = _ranges(var_off, systems)
        T[idx], C0[idx], C1[idx] = part.T, part.C0, part.C1
        k0[systems], k1[systems] = part.k0, part.k1
        for i, s in enumerate(systems.tolist()):
            log_binom[s] = part.log_binom[i]
    if any(v is None for v in log_binom):
        raise ValueError("assemble_counts: a system is in no block")
    return SystemsPart(var_off, T, C0, C1, k0, k1, tuple(log_binom),
                       np.zeros(S + 1, dtype=np.int64), *SystemsPart.no_groups())
