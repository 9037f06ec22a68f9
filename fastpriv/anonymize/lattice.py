"""Lattice search over full-domain generalizations, for any monotone criterion.

A *node* of the generalization lattice picks one level per QI attribute (its hierarchy's
level 0 = exact value … top = usually ``*``); the node's release groups the rows by their
generalized QI tuple. Nodes are ordered componentwise, and a higher node's groups are unions
of a lower node's groups, so for a monotone criterion (Martin et al., Theorem 14 for
(c,k)-safety; k-anonymity, ℓ-diversity, t-closeness; SVPI skyline points) satisfaction is
upward-closed. :meth:`GeneralizationLattice.search` finds every *minimal* satisfying node
(no satisfying node below it) and the best of them by a utility measure, while checking as
few nodes as it can:

* **Predictive tagging** (Incognito / Flash): when a node satisfies, all its successors
  do; when it fails, all its predecessors fail. Neither needs checking.
* **Binary search along paths** (Flash): nodes are visited bottom-up; from each untagged
  node a path is extended upwards through untagged nodes, and that chain is binary-searched
  for its lowest satisfying node. Every check tags a whole cone of the lattice.

The result equals exhaustive checking of every node (a property test verifies it for each
criterion). A criterion declaring ``monotone = False`` (population uniqueness, a user's
non-monotone predicate) — or a suppression budget with a criterion for which suppression is
not monotone — is checked at every node, except for ``objective="optimal"`` under a measure
with an exact node-only lower bound (``height``, ``precision``, ``entropy``, ``loss``,
``nm_precision``, ``nm_entropy``): the **bounded** search visits the nodes by that bound
(then height, lexicographic) and checks them until the bound exceeds the best satisfying
node's score, so no node that could beat it goes unchecked (ARX's Flash prunes with the same
bounds). The bound is the measure with nothing suppressed (:meth:`_node_scores`, computed
for every node from per-level tables without grouping any); where it is the score itself
(node-only measures, or no suppression) the first satisfying node is the optimum. Its
``minimal`` then lists the minimal nodes among the satisfying nodes it checked only.

Each check is cheap: the table is compressed once to its distinct (QI codes, sensitive
value) combinations with counts. For the built-in group-local criteria (k-anonymity,
ℓ-diversity, t-closeness, (c,k)-safety against negated atoms, (α,k)-anonymity and their
conjunctions) a node's classes are **rolled up** from the smallest already-materialized
node below it — the cells at the bottom, or a failing node checked earlier (only failing
nodes can lie below a node still to check), kept in a cache bounded to 256 MiB (up to
1 GiB on large tables: 32 times the bottom node's bytes), least recently used evicted
first — by mapping each row's codes up the hierarchies and merging
equal tuples (Numba kernels in :mod:`fastpriv._kernels.lattice`; pure k-anonymity counts
class sizes only, and its whole check — gather tables, merge, criterion — is one kernel
call). A materialized node stores the codes of consecutive attributes packed into one
mixed-radix code per group (tables of at most min(8192, rows/16) entries; attributes at
their top level dropped), so a merge gathers once per group — four times per row instead
of nine on a 9-QI table — and ranks the keys by direct addressing into a persistent buffer
(no fill per check) or by a hash table sized to the classes found.
A check **fails fast**: under k-anonymity with a budget of b suppressed
individuals a node with more than n/k + b classes cannot pass and the merge stops there,
and the criterion scan stops once the suppressed individuals exceed the budget. Under pure
k-anonymity the bottom node's classes are sorted along one attribute's hierarchy, so at a
node whose level of it is below the top no class spans two *blocks* of equal code (roll-ups
keep the order, so cached nodes keep the blocks): the merge completes the classes block by
block and stops once they suppress more than the budget — unless the node compresses well
enough to be cached as a source, then it finishes — and a roll-up of ≥ 262,144 rows can be
split between two threads at a block boundary (``n_jobs``). The counts
of each check also give the discernibility and average class size of the minimal nodes,
which are scored without recounting. Tagging is O(what it changes): the lattice is held
as a grid of shape ``heights``, and a node's successors (predecessors) are one box slice
of it; the minimal nodes come from a prefix-OR of the satisfying set along every axis.
Other criteria are checked on the node's :class:`~fastpriv.release.Release`, regrouped
from the cells (a Numba kernel, no Arrow round trip).

``search(..., objective="optimal")`` also answers ARX's question — the single
loss-optimal node among *all* satisfying nodes (with suppression a higher node can cost
less) — and ``on_check`` receives a :class:`SearchProgress` (nodes checked, nodes tagged,
elapsed seconds) after every check.

:meth:`GeneralizationLattice.chain_search` is the binary search along one chain of the
lattice that Martin et al. §3.4 mention: O(log height) checks, minimal *on the chain*
(the result says whether it is also minimal in the lattice).

Suppression (optional): with ``suppression=f``, a node also satisfies a group-local
criterion when the rows of its failing groups number at most ⌊f·n⌋; those rows are removed
(group id −1). Suppression keeps monotonicity for k-anonymity and distinct ℓ-diversity (a
passing group stays passing when merged); for the other local criteria the search is
exhaustive. The risk criteria on class sizes (average risk, records at risk, population
uniqueness: ARX's risk-based models) take a budget as ARX does: after the classes failing
the group-local parts, the smallest classes left are suppressed until the criterion holds
on the classes kept — suppressed records are out of the risk — by ARX's binary search over
how many (``RiskBasedCriterion.enforce``), in ARX's order: by size, equal sizes by the
class's loss under ``utility="loss"``, then by first row. The node satisfies when the
records suppressed fit the budget. Average risk stays monotone so (Flash); records at risk
and population uniqueness do not. ARX also leaves a class generalized to ``*`` in every QI
out of the risk; fastpriv counts it (with hierarchies whose only ``*`` is their top level
this differs at the top node alone).

Utility measures (quality models; every one is minimized; ties → lower height, then
lexicographic). n rows, d QI attributes, node levels l_A, H_A = height_A − 1, classes g of
n_g rows, S suppressed rows (classes failing the criterion), K kept classes:

* ``"discernibility"`` (default) Σ_kept n_g² + S·n — ARX's ``MetricSDNMDiscernability``
  (Bayardo & Agrawal 2005).
* ``"avg_group_size"`` (n − S)/K — fastpriv's own (kept rows per kept class); *not* ARX's
  AECS, which is ``"aecs"``.
* ``"aecs"`` n / (K + [S > 0]) — ARX's ``MetricSDAECS`` (LeFevre et al. 2006; the
  suppressed rows form one more class).
* ``"height"`` Σ_A l_A — ARX's ``MetricMDHeight`` (sum).
* ``"precision"`` Sweeney's Prec = 1 − (1/d) Σ_A l_A/H_A, maximized (scored as −Prec):
  ARX's *monotonic* ``MetricMDPrecision`` orders nodes the same way (it is 1 − Prec).
* ``"nm_precision"`` (1/d) Σ_A ((n − S)·l_A/H_A + S)/n — ARX's ``MetricMDNMPrecision``
  (``Metric.createPrecisionMetric()``; a suppressed cell costs 1; l_A/H_A = 0 when H_A = 0).
* ``"loss"`` Iyengar's generalization loss as ARX's ``MetricMDNMLoss``
  (``Metric.createLossMetric()``, ARX's default model, gs-factor 0.5): per attribute
  x_A = Σ_kept n_g·share_A(g) + S, where share_A(g) is the number of rows of the attribute's
  hierarchy (every leaf, also values absent from the data) under the class's generalized
  value divided by the number of hierarchy rows D_A (ARX's ``DomainShareMaterialized``); a
  suppressed cell costs 1. Normalized v_A = max(0, (x_A − n/D_A)/(n − n/D_A)) (0 when
  D_A = 1), rounded down to 10 decimals as ARX does, aggregated by ARX's geometric mean
  Π_A (1 + v_A)^(1/d) − 1.
* ``"entropy"`` non-uniform entropy as ARX's ``MetricMDNUEntropy`` /
  ``MetricMDNUEntropyPrecomputed`` (``Metric.createPrecomputedEntropyMetric(t, true)``,
  Gionis & Tassa 2009): Σ_A Σ_rows −log2(c_A(v)/c_A(gen v)), c_A counting the table's rows
  with the original value v (level 0) and with its generalized value at l_A; each attribute's
  sum rounded down to 10 decimals and summed. Suppressed cells cost what generalization
  alone costs them (ARX's monotonic variant ignores suppression), so it depends on the node
  only.
* ``"nm_entropy"`` ARX's ``MetricMDNUNMEntropy`` (``Metric.createEntropyMetric()``): the
  entropy plus, per attribute, Σ_c −s_c·log2(s_c/S) over the generalized values c of the
  suppressed rows (s_c of them).
* a callable ``f(node, release) -> float`` to minimize.

Monotonicity (what ``objective="optimal"`` may prune): ``height``, ``precision`` and
``entropy`` depend on the node only and never decrease upwards; without suppression every
built-in measure never decreases upwards (classes only merge), so the best minimal node is
the optimum, and ``loss``, ``nm_precision`` and ``nm_entropy`` depend on the node alone too:
they are scored from per-level tables, without regrouping the node. With suppression a
higher node may suppress fewer rows and cost less for ``discernibility``,
``avg_group_size``, ``aecs``, ``loss``, ``nm_precision`` and ``nm_entropy``: the optimal
search scores satisfying nodes and prunes only with exact lower
bounds — node-only bounds (suppression ignored: ``loss`` with every row at its share,
``nm_precision`` at S = 0, ``nm_entropy`` = ``entropy``) visited best-first, and for
``discernibility`` / ``aecs`` the up-set of a node X (Σ_g n_g·max(n_g, k) ≤ DM(Y);
n / #classes(X) ≤ AECS(Y) for every Y ⪰ X).

Suppression convention (ARX's): at most ⌊f·n⌋ rows of the whole table may be suppressed,
and the rows suppressed are exactly those of the classes failing the criterion's group-local
parts (for k-anonymity, classes smaller than k) and those its risk parts suppress.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import encode_column
from .._cells import compress
from .._validation import check_choice, exact_bincount, kernel_array
from ..errors import InputError, InputTypeError
from ..hierarchies import BoundHierarchy, resolve_hierarchies
from ..predicates import Criterion, KAnonymity, LocalCriterion, as_criterion, criteria_from
from ..release import SVPI, Release
from ..results import Result, Witness, json_safe
from ._input import (
    expand_arrow,
    expand_rows,
    prepare_weighted_input,
    require_sensitive,
    sensitive_column,
)
from ._result import Anonymized, GeneralizedAttribute, LatticeAnonymized

__all__ = ["GeneralizationLattice", "LatticeSearch", "ChainSearch", "SearchProgress",
           "NodeCheck", "LatticeWitness",
           "lattice_search",
           "minimal_ck_safe", "minimal_grid", "UTILITIES", "ARX_MODELS"]

UTILITIES = ("discernibility", "avg_group_size", "height", "precision", "loss", "entropy",
             "nm_entropy", "nm_precision", "aecs")

#: the ARX quality model each measure reproduces (None: fastpriv's own)
ARX_MODELS = {"discernibility": "MetricSDNMDiscernability", "avg_group_size": None,
              "height": "MetricMDHeight", "precision": "MetricMDPrecision (as 1 - Prec)",
              "loss": "MetricMDNMLoss", "entropy": "MetricMDNUEntropyPrecomputed",
              "nm_entropy": "MetricMDNUNMEntropy", "nm_precision": "MetricMDNMPrecision",
              "aecs": "MetricSDAECS"}
_NODE_ONLY = ("height", "precision", "entropy")     # the node's levels decide the score
_NODE_BOUND = ("loss", "nm_precision", "nm_entropy")  # exact node-only lower bounds
_ARX_FACTOR = 1e10   # ARX rounds a dimension's loss down to 10 decimals (Metric.round)
_ARX_SCALE = 10 ** 10  # the same, as an integer (the loss is floored in exact integers)


def _arx_round(x: float) -> float:
    """ARX's ``Metric.round``: ⌊x·10¹⁰⌋/10¹⁰."""
    return math.floor(x * _ARX_FACTOR) / _ARX_FACTOR


def _geo_factor(v: float, d: int) -> float:
    """One attribute's factor (v + 1)^(1/d) of ARX's geometric mean."""
    return (v + 1.0) ** (1.0 / d)


def _geometric(vals: Sequence[float]) -> float:
    """ARX's ``ILMultiDimensionalGeometricMean`` (weights 1): Π (v + 1)^(1/d) − 1."""
    r = 1.0
    for v in vals:
        r *= _geo_factor(v, len(vals))
    return r - 1.0


def _entropy_term(v: float) -> float:
    """One attribute's entropy cost from its (≤ 0) log-sum ``v``, rounded down as ARX does."""
    return 0.0 if v == 0.0 else _arx_round(-v)


def _nm_precision_term(n: float, sup: int, v: float, d: int) -> float:
    """One attribute's term ((n − S)·l/H + S)/n / d of ARX's ``MetricMDNMPrecision``."""
    return (((n - sup) * v + sup) / n) / d


_DENSE_LIMIT = 1 << 22
UNKNOWN, SAT, UNSAT = 0, 1, -1


def _fmt_node(node: Sequence[int] | None) -> str:
    return "none" if node is None else "(" + ",".join(map(str, node)) + ")"


def _suppression_parts(crit: Criterion) -> tuple[list, list] | None:
    """Split ``crit`` into its group-local parts and its class-size (risk) parts.

    ``None`` when some part is neither: a suppression budget does not apply to it.
    """
    from ..predicates import AllOf

    parts = list(crit.parts) if isinstance(crit, AllOf) else [crit]
    local = [p for p in parts if getattr(p, "local", False) and hasattr(p, "group_ok")]
    sample = [p for p in parts if getattr(p, "sample_based", False)]
    if len(local) + len(sample) != len(parts):
        return None
    return local, sample


def _size_parts(crit: Criterion) -> tuple[list, list] | None:
    """``crit``'s k-anonymity parts and risk parts when it reads the class sizes alone."""
    split = _suppression_parts(crit)
    if split is None or not all(isinstance(p, KAnonymity) for p in split[0]):
        return None
    return split


@dataclass(frozen=True, eq=False)
class NodeCheck(Result):
    """Outcome of checking one node.

    ``value`` is ``ok`` (whether the node satisfies the criterion, with at most the
    suppression budget's individuals in failing groups suppressed).
    """

    node: tuple[int, ...]
    ok: bool
    n_groups: int
    n_suppressed: int
    params: dict = field(default_factory=dict)

    @property
    def value(self) -> bool:
        """Whether the node satisfies."""
        return self.ok

    @property
    def witness(self) -> None:
        """No witness (a node check answers yes or no)."""
        return None

    def summary(self) -> str:
        """One line: the node, its outcome, its groups and suppressed individuals."""
        return (f"node {_fmt_node(self.node)}: {'satisfies' if self.ok else 'fails'} "
                f"({self.n_groups} groups, {self.n_suppressed} suppressed)")


@dataclass(frozen=True, eq=False)
class LatticeWitness(Witness):
    """The best node of a lattice search: its levels per QI attribute and its score."""

    node: tuple[int, ...]
    levels: dict
    score: float
    utility: str

    def summary(self) -> str:
        """One line: the node, its levels and its utility score."""
        lv = ", ".join(f"{a}={v}" for a, v in self.levels.items())
        return f"best node {_fmt_node(self.node)} ({lv}), {self.utility} {self.score:g}"


@dataclass(frozen=True, eq=False)
class LatticeSearch(Result):
    """All minimal satisfying nodes of a lattice, the best one, and the search's cost.

    ``value`` is the number of minimal satisfying nodes; ``witness`` the best node
    (:class:`LatticeWitness`, ``None`` when no node satisfies).

    Attributes
    ----------
    qi : tuple of str
    heights : tuple of int
        Number of levels of each QI attribute's hierarchy.
    criterion : str
    minimal : tuple of node tuples
        Every minimal satisfying node (by height, then lexicographic); with
        ``strategy="bounded"`` the minimal ones among the satisfying nodes it checked.
    best : tuple or None
        The minimal node optimizing ``utility`` (``None`` if no node satisfies).
    utility : str
    scores : dict
        Utility value of each minimal node (``"bounded"``: of each satisfying node checked;
        ``objective="optimal"`` under suppression by ``loss``, ``nm_precision`` or
        ``nm_entropy``: of each satisfying node whose bound could beat the optimum).
    n_nodes, n_checked : int
        Lattice size and number of nodes actually evaluated.
    n_satisfying : int
        Number of satisfying nodes (checked or inferred; ``"bounded"``: found).
    checked : tuple of node tuples
        The evaluated nodes, in order.
    strategy : str
        ``"flash"`` (predictive tagging + binary search), ``"exhaustive"``, or
        ``"bounded"`` (a non-monotone criterion's optimum: nodes checked by lower bound
        until none left can beat the best; module docstring).
    suppression : float
    seconds : dict
        Seconds per phase: ``total``; ``bookkeeping`` (tagging, progress callbacks); for
        built-in local criteria ``rollup`` (merging classes), ``count`` ((class, value)
        profiles), ``criterion`` and ``materialize`` (caching failing nodes); for the other
        criteria ``regroup`` (a node's classes from the cells) and ``criterion`` (deciding
        it: population models included); ``bounds`` (the lower bound of every node,
        ``"bounded"``), ``minimal`` (the minimal nodes of the satisfying set), ``score``
        (scoring nodes) and ``optimum`` (``objective="optimal"``: the satisfying nodes
        above the minimal ones). Phases that took no time are left out.
    anonymized : Anonymized or None
        The release at ``best`` (materialized unless ``materialize=False``).
    objective : str
        ``"minimal"`` (``best`` = best minimal node) or ``"optimal"`` (``best`` = best
        satisfying node; it is added to ``scores``).
    n_scored : int
        Satisfying non-minimal nodes evaluated for ``objective="optimal"``.
    n_rows_rolled_up : int
        Rows of materialized nodes scanned by the roll-ups (0 without roll-ups).
    params : dict
        ``qi``, ``criterion``, ``utility``, ``suppression``, ``strategy``, ``objective``.

    """

    qi: tuple[str, ...]
    heights: tuple[int, ...]
    criterion: str
    minimal: tuple[tuple[int, ...], ...]
    best: tuple[int, ...] | None
    utility: str
    scores: dict
    n_nodes: int
    n_checked: int
    n_satisfying: int
    checked: tuple[tuple[int, ...], ...]
    strategy: str
    suppression: float
    seconds: dict
    anonymized: Anonymized | None = field(default=None, compare=False, repr=False)
    satisfying: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    objective: str = "minimal"
    n_scored: int = 0
    n_rows_rolled_up: int = 0
    params: dict = field(default_factory=dict)

    @property
    def value(self) -> int:
        """The number of minimal satisfying nodes."""
        return len(self.minimal)

    @property
    def witness(self) -> LatticeWitness | None:
        """The best node, its levels and score (``None`` when no node satisfies)."""
        if self.best is None:
            return None
        return LatticeWitness(node=self.best,
                              levels=dict(zip(self.qi, self.best, strict=True)),
                              score=float(self.scores[self.best]), utility=self.utility)

    @property
    def optimum(self) -> dict[str, Any] | None:
        """Which optimum ``best`` is: measure, its ARX model, objective, value, node.

        ``objective`` ``"minimal"`` = the best minimal satisfying node, ``"optimal"`` = the
        best of *all* satisfying nodes (ARX's global optimum). ``value`` is the score the
        search minimized (``precision``: −Prec). ``None`` when no node satisfies.
        """
        if self.best is None:
            return None
        return {"measure": self.utility, "arx_model": ARX_MODELS.get(self.utility),
                "objective": self.objective, "value": float(self.scores[self.best]),
                "node": list(self.best), "suppression": self.suppression,
                "criterion": self.criterion}

    @property
    def phases(self) -> dict:
        """The per-phase part of ``seconds`` (without ``total``)."""
        return {k: v for k, v in self.seconds.items() if k != "total"}

    def _need(self) -> Anonymized:
        if self.anonymized is None:
            if self.best is None:
                raise InputError(f"no node of the lattice satisfies {self.criterion} (not even "
                                 "the top node); nothing to release")
            raise InputError("the release was not materialized (materialize=False)")
        return self.anonymized

    @property
    def release(self) -> Release:
        """The release at the best node."""
        return self._need().release

    @property
    def group_ids(self) -> np.ndarray:
        """Group id of each input row at the best node (−1 = suppressed)."""
        return self._need().group_ids

    def table(self, original: Any = None, **kw: Any) -> pa.Table:
        """Return the publishable table at the best node (see :meth:`Anonymized.table`)."""
        return self._need().table(original, **kw)

    def write(self, path: Any, original: Any = None, **kw: Any) -> str:
        """Write the best node's table atomically (see :meth:`Anonymized.write`)."""
        return self._need().write(path, original, **kw)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the release and the per-node arrays)."""
        w = self.witness
        return json_safe({
            "value": self.value, "params": self.params, "qi": list(self.qi),
            "heights": list(self.heights), "criterion": self.criterion,
            "minimal": [list(n) for n in self.minimal],
            "best": None if self.best is None else list(self.best),
            "witness": None if w is None else w.to_dict(), "utility": self.utility,
            "scores": {",".join(map(str, n)): v for n, v in self.scores.items()},
            "n_nodes": self.n_nodes, "n_checked": self.n_checked,
            "n_satisfying": self.n_satisfying, "strategy": self.strategy,
            "suppression": self.suppression, "seconds": dict(self.seconds),
            "objective": self.objective, "n_scored": self.n_scored,
            "optimum": self.optimum, "n_rows_rolled_up": self.n_rows_rolled_up})

    def summary(self) -> str:
        """Two lines: the minimal nodes found (or the nodes checked) and the best one."""
        found = (f"{self.n_satisfying} satisfying node(s) of {self.criterion} found among "
                 f"{self.n_nodes} ({self.n_checked} checked: every node whose bound could "
                 f"beat the best" if self.strategy == "bounded" else
                 f"{self.value} minimal node(s) satisfying {self.criterion} among "
                 f"{self.n_nodes} ({self.n_checked} checked")
        head = (f"lattice search ({self.strategy}): {found}, suppression "
                f"{self.suppression:g}), {self.seconds.get('total', 0.0):.3g} s")
        w = self.witness
        if w is None:
            return head + "\nno node satisfies"
        model = ARX_MODELS.get(self.utility)
        which = ("optimal among all satisfying nodes" if self.objective == "optimal"
                 else "best of the minimal nodes")
        return (head + "\n" + w.summary() + f" — {which} by {self.utility}"
                + (f" (ARX {model})" if model else "") + f" = {w.score!r}")


@dataclass(frozen=True, eq=False)
class ChainSearch(Result):
    """Binary search along one chain of the lattice (Martin et al. §3.4).

    ``value`` is the number of nodes checked by the binary search; ``witness`` the found
    node (:class:`LatticeWitness` scored by its height; ``None`` when even the chain's top
    fails).

    Attributes
    ----------
    chain : tuple of node tuples
    node : tuple or None
        The lowest satisfying node on the chain (``None``: even the chain's top fails).
    n_checked : int
        Nodes evaluated by the binary search (⌈log2(len(chain)+1)⌉ at most).
    minimal_in_lattice : bool or None
        Whether ``node`` is also ⪯-minimal in the whole lattice (its direct predecessors
        were checked: ``n_checked_predecessors`` more checks).
    seconds : dict
        ``{"total": seconds}``.
    params : dict
        ``qi``, ``criterion``, ``check_minimal``.

    """

    chain: tuple[tuple[int, ...], ...]
    node: tuple[int, ...] | None
    criterion: str
    n_checked: int
    minimal_in_lattice: bool | None
    n_checked_predecessors: int
    seconds: dict
    anonymized: Anonymized | None = field(default=None, compare=False, repr=False)
    qi: tuple[str, ...] = ()
    params: dict = field(default_factory=dict)

    @property
    def value(self) -> int:
        """Nodes checked by the binary search."""
        return self.n_checked

    @property
    def witness(self) -> LatticeWitness | None:
        """The found node (scored by its height), or ``None``."""
        if self.node is None:
            return None
        return LatticeWitness(node=self.node, levels=dict(zip(self.qi, self.node, strict=True)),
                              score=float(sum(self.node)), utility="height")

    @property
    def release(self) -> Release:
        """The release at the found node."""
        if self.anonymized is None:
            raise InputError(f"no node of the chain satisfies {self.criterion}")
        return self.anonymized.release

    @property
    def group_ids(self) -> np.ndarray:
        """Group id of each input row at the found node."""
        if self.anonymized is None:
            raise InputError(f"no node of the chain satisfies {self.criterion}")
        return self.anonymized.group_ids

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return json_safe({"value": self.value, "params": self.params,
                          "chain": [list(n) for n in self.chain],
                          "node": None if self.node is None else list(self.node),
                          "criterion": self.criterion, "n_checked": self.n_checked,
                          "minimal_in_lattice": self.minimal_in_lattice,
                          "n_checked_predecessors": self.n_checked_predecessors,
                          "seconds": dict(self.seconds)})

    def summary(self) -> str:
        """One line: the node found on the chain and whether it is lattice-minimal."""
        if self.node is None:
            return (f"chain search: no node of the chain ({len(self.chain)} nodes) satisfies "
                    f"{self.criterion} ({self.n_checked} checked)")
        mini = {True: "minimal in the lattice", False: "not minimal in the lattice",
                None: "lattice minimality not checked"}[self.minimal_in_lattice]
        return (f"chain search: lowest satisfying node {_fmt_node(self.node)} on a chain of "
                f"{len(self.chain)} ({self.n_checked} checked), {mini}")


_CACHE_BYTES = 1 << 28   # cache bound of materialized nodes for small tables ...
_CACHE_SCALE = 4         # ... scaled up to this factor for large ones (32 × the bottom's bytes)
_PHASES = ("rollup", "count", "criterion", "materialize")
_FUSED = True       # pure k-anonymity checks in one fused kernel (decide_sizes)
_KEEP_RATIO = 0.3   # a failing node is cached when it has at most this share of its source's rows
_SLOT_LIMIT = 1 << 23     # largest key space ranked by direct addressing (32 MiB buffer)


@dataclass(frozen=True, eq=False)
class SearchProgress(Result):
    """State of a running search, passed to ``on_check`` after every node check.

    ``value`` is the number of nodes checked so far.

    Attributes
    ----------
    n_checked : int
        Nodes evaluated so far.
    n_tagged : int
        Nodes whose status is known (checked or inferred by predictive tagging).
    n_nodes : int
    seconds : float
        Elapsed time since the search started.
    node : tuple
        The node just checked.
    ok : bool
        Whether it satisfied.

    """

    n_checked: int
    n_tagged: int
    n_nodes: int
    seconds: float
    node: tuple[int, ...]
    ok: bool
    params: dict = field(default_factory=dict)

    @property
    def value(self) -> int:
        """Nodes checked so far."""
        return self.n_checked

    @property
    def witness(self) -> None:
        """No witness (a progress report)."""
        return None

    def summary(self) -> str:
        """One line: nodes checked and tagged, elapsed seconds."""
        return (f"{self.n_checked} checked, {self.n_tagged}/{self.n_nodes} nodes tagged, "
                f"{self.seconds:.1f} s")


_PACK_LIMIT = 8192   # largest packed code of an attribute group (its table stays in L1/L2)
_PACK_ROWS = 16      # ... and at most rows/16 (building the tables costs less than the rows)
_SPLIT_ROWS = 1 << 18    # roll-ups of at least this many rows run on two threads


def _pack_groups(cards: list[int], m: int) -> list[list[int]]:
    """Group consecutive attributes into packed codes (product of cardinalities ≤ 8192).

    The product also stays ≤ m/16 (building the tables costs less than the rows);
    attributes with one code are left out.
    """
    limit = min(_PACK_LIMIT, max(1, m // _PACK_ROWS))
    groups: list[list[int]] = []
    prod = limit + 1
    for a, c in enumerate(cards):
        if c <= 1:
            continue
        if prod * c <= limit:
            groups[-1].append(a)
            prod *= c
        else:
            groups.append([a])
            prod = c
    return groups or [[0]]


class _Materialized:
    """The distinct rows of one node: packed codes at its levels, sensitive codes, individuals.

    The codes of consecutive attributes are packed into one mixed-radix code per group
    (``gattr[gptr[g]:gptr[g+1]]``, radices ``scard``, product ≤ min(8192, rows/16);
    attributes with one code are left out), so a roll-up gathers once per group.
    """

    __slots__ = ("levels", "q", "gptr", "gattr", "scard", "s", "w", "nbytes", "last",
                 "bounds", "part")

    def __init__(self, levels: np.ndarray, q: np.ndarray | None, scard: np.ndarray,
                 s: np.ndarray | None, w: np.ndarray,
                 groups: list[list[int]] | None = None) -> None:
        from .._kernels.lattice import pack_codes

        if groups is None:
            groups = _pack_groups(scard.tolist(), int(w.shape[0]))
        self.gptr = kernel_array(np.cumsum([0] + [len(g) for g in groups]), np.int64)
        self.gattr = kernel_array([a for g in groups for a in g], np.int64)
        self.scard = kernel_array(scard, np.int64)
        self.levels, self.s, self.w = levels, s, w
        # rows sorted by the partition attribute's hierarchy path: level -> row boundaries
        # of its blocks of equal code (see _RollUp.blocks)
        self.bounds: dict[int, np.ndarray] = {}
        self.part = -1
        self.q = np.empty((0, 0), np.int32)
        if q is not None:
            self.set_codes(pack_codes(kernel_array(q, np.int32), self.gptr, self.gattr,
                                      self.scard))
        self.last = 0

    def set_codes(self, q: np.ndarray) -> None:
        """Set the packed codes ``(groups, rows)``."""
        self.q = q
        self.nbytes = q.nbytes + self.w.nbytes + (0 if self.s is None else self.s.nbytes)

    @property
    def m(self) -> int:
        return int(self.w.shape[0])


class _RollUp:
    """Node checks of a built-in local criterion by roll-up from materialized nodes.

    A node's classes are merged from the smallest cached node below it (the table's cells
    at the bottom node, always cached); failing nodes are cached (only they are sources
    for later checks: the successors of a satisfying node are tagged, never checked)
    while the cache stays under ``cache_bytes``, least recently used evicted first. Pure
    k-anonymity needs only class sizes, so its rows are classes without sensitive values.
    """

    def __init__(self, lat: GeneralizationLattice, crit: Criterion, budget: int,
                 cache_bytes: int | None = None, threads: int = 1) -> None:
        from .._kernels import lattice as kernels
        from ..predicates import kernel_spec

        self.kern = kernels    # bound once: no import statement per check
        self.lat, self.budget = lat, budget
        self.cache_bytes = _CACHE_BYTES if cache_bytes is None else cache_bytes
        self.spec = kernel_spec(crit, lat.values, lat._q)  # type: ignore[arg-type]
        self.sizes_only = bool(np.all(np.asarray(self.spec.kinds) == 0))
        self.k = int(np.asarray(self.spec.iparams)[:, 0].max()) if self.sizes_only else 0
        # kept classes hold ≥ k individuals, suppressed ones ≥ 1: at most n/k + b classes
        self.max_groups = lat.n_rows // self.k + budget if self.sizes_only else lat.n_rows + 1
        self.maps, self.offs, consistent = lat._level_tables()
        d = len(lat.heights)
        hmax = max(lat.heights)
        self.attrs = np.arange(d)
        self.off_tab = np.zeros((d, hmax, hmax), dtype=np.int64)
        self.card_tab = np.ones((d, hmax), dtype=np.int64)
        for a, h in enumerate(lat.hierarchies):
            for i in range(h.height):
                self.card_tab[a, i] = h.cardinality(i)
                for j in range(i, h.height):
                    self.off_tab[a, i, j] = self.offs[a][i][j]
        self.bottoms: list[_Materialized] = []
        self.threads = threads
        if self.sizes_only:
            q, w = lat._qi_classes_table()
            # one sorted copy of the bottom per partition attribute (two on large tables
            # searched on two threads, so most nodes find blocks to split)
            for a in self._part_attrs(q.shape[1]):
                # sorted once per lattice (and packing), shared by its searches
                key = (a, _PACK_LIMIT, _PACK_ROWS)
                if key not in lat._sorted_bottoms:
                    lat._sorted_bottoms[key] = self._partition(q, w, a)
                self.bottoms.append(lat._sorted_bottoms[key])
            if not self.bottoms:
                self.bottoms.append(_Materialized(np.zeros(d, np.int64), q,
                                                  self.card_tab[:, 0], None, w))
            bottom = self.bottoms[0]
        else:
            bottom = _Materialized(np.zeros(d, np.int64), lat._cells_level0(),
                                   self.card_tab[:, 0], lat._cs, lat._cw)
        self.cache = [bottom]
        if cache_bytes is None:
            scale = min(float(_CACHE_SCALE), max(1.0, 32.0 * bottom.nbytes / (1 << 28)))
            self.cache_bytes = int(_CACHE_BYTES * scale)
        self.slot2: np.ndarray | None = None
        # direct-addressing work buffer of the roll-up kernel (−1 between calls)
        self.slot = np.full(min(_SLOT_LIMIT, 32 * bottom.m + 65536), -1, dtype=np.int32)
        self._index()
        self.rows_scanned = 0
        self.keep_ratio = _KEEP_RATIO
        self.use_cache = consistent
        self.used = 0
        self.tick = 0
        self.seconds = dict.fromkeys(_PHASES, 0.0)
        self.stats: dict[tuple[int, ...], tuple[int, int, int]] = {}

    def _part_attrs(self, m: int) -> list[int]:
        """Return the partition attributes of the bottom node.

        The one (two for ≥ ``_SPLIT_ROWS`` rows and two threads) with the most codes (mean
        log2 cardinality over its levels); none for one-level hierarchies.
        """
        heights = self.lat.heights
        logs = [float(np.mean([math.log2(max(int(self.card_tab[a, lev]), 1))
                               for lev in range(h)])) for a, h in enumerate(heights)]
        cand = [a for a in np.argsort(logs, kind="stable")[::-1].tolist()
                if heights[a] >= 2 and logs[a] > 0]
        return cand[:2 if m >= _SPLIT_ROWS and self.threads > 1 else 1] if m > 0 else []

    def _partition(self, q: np.ndarray, w: np.ndarray, a: int) -> _Materialized:
        """Sort the bottom classes along attribute ``a``'s hierarchy; record its blocks.

        Rows are sorted by their code of ``a`` at every level from the top down (smaller
        blocks first within each parent, so the rarest values, most likely suppressed,
        come early). At any node whose level of ``a`` is ``L`` below the top, no class spans
        two blocks of equal level-``L`` code: :func:`~fastpriv._kernels.lattice.rollup`
        completes the classes block by block and fails fast once the suppressed
        individuals exceed the budget, and a large roll-up is split between two threads
        at a block boundary. A node rolled up from a sorted source is sorted too (classes
        are numbered in scan order), so cached nodes keep the blocks.
        """
        h = self.lat.heights[a]
        codes = [self.maps[self.off_tab[a, 0, lev] + q[a].astype(np.int64)].astype(np.int64)
                 for lev in range(h - 1)]
        keys = []
        for lev in range(h - 1):
            size = np.bincount(codes[lev], minlength=int(self.card_tab[a, lev]))
            keys += [codes[lev], size[codes[lev]]]
        order = np.lexsort(keys)
        d = len(self.lat.heights)
        mat = _Materialized(np.zeros(d, np.int64), q[:, order], self.card_tab[:, 0], None,
                            kernel_array(w[order], np.int64))
        m = mat.m
        for lev in range(h - 1):
            c = codes[lev][order]
            cut = np.flatnonzero(c[1:] != c[:-1]) + 1
            mat.bounds[lev] = kernel_array(np.concatenate(([0], cut, [m])), np.int64)
        mat.part = a
        return mat

    def blocks(self, src: _Materialized, nd: np.ndarray) -> np.ndarray:
        """Row boundaries of ``src`` that no class of node ``nd`` spans (``[0, m]`` at worst)."""
        b = src.bounds.get(int(nd[src.part])) if src.part >= 0 else None
        if b is None:
            b = kernel_array([0, src.m], np.int64)
        return b

    @staticmethod
    def _cut(bnd: np.ndarray) -> int:
        """Index of the block boundary nearest the middle row (0: no inner boundary)."""
        if bnd.shape[0] < 3:
            return 0
        inner = bnd[1:-1]
        return 1 + int(np.argmin(np.abs(inner - bnd[-1] // 2)))

    def _bottom_for(self, nd: np.ndarray) -> _Materialized:
        """Return the sorted copy of the bottom whose blocks split ``nd`` most evenly."""
        best, score = self.bottoms[0], -1.0
        for b in self.bottoms:
            bnd = self.blocks(b, nd)
            c = self._cut(bnd)
            sc = 0.0 if c == 0 else 1.0 - abs(2 * int(bnd[c]) - b.m) / b.m
            if sc > score:
                best, score = b, sc
        return best

    def _source(self, nd: np.ndarray) -> _Materialized:
        """Pick the cached node below ``nd`` with the fewest rows (the bottom is entry 0)."""
        i = self.kern.pick_source(self.levels, self.rows, len(self.cache), nd)
        if i == 0 and len(self.bottoms) > 1:
            return self._bottom_for(nd)
        return self.cache[i]

    def _index(self) -> None:
        """Rebuild the (levels, rows) arrays of the cache (after an eviction)."""
        cap = max(64, 2 * len(self.cache))
        self.levels = np.zeros((cap, len(self.lat.heights)), dtype=np.int64)
        self.rows = np.zeros(cap, dtype=np.int64)
        for i, m in enumerate(self.cache):
            self.levels[i], self.rows[i] = m.levels, m.m

    def _append(self, mat: _Materialized) -> None:
        n = len(self.cache)
        self.cache.append(mat)
        if n >= self.rows.shape[0]:
            self._index()
        else:
            self.levels[n], self.rows[n] = mat.levels, mat.m

    def classes(self, node: tuple[int, ...], max_groups: int | None = None) -> tuple:
        """Roll ``node`` up from the best cached node below it.

        Returns (source, class of each source row, sizes, first rows, number of classes —
        −2 past ``max_groups`` —, level-to-level offsets).
        """
        from .._kernels.generalize import regroup, weighted_first
        from .._kernels.lattice import joint_tables, rollup

        t0 = time.perf_counter()
        nd = np.asarray(node, dtype=np.int64)
        src = self._source(nd)
        self.tick += 1
        src.last = self.tick
        self.rows_scanned += src.m
        # writable, as decide_sizes builds them inside a kernel: one specialization each
        offs = np.ascontiguousarray(self.off_tab[self.attrs, src.levels, nd], dtype=np.int64)
        cards = np.ascontiguousarray(self.card_tab[self.attrs, nd], dtype=np.int64)
        tab, toff, gcard = joint_tables(src.gptr, src.gattr, src.scard, self.maps, offs, cards)
        limit = src.m if max_groups is None else min(max_groups, src.m)
        slot = self.slot[:min(self.slot.shape[0], 32 * src.m + 65536)]
        bnd = self.blocks(src, nd)
        group, sizes, first, ng, before = rollup(src.q, tab, toff, gcard, src.w, limit, slot,
                                                 not self.sizes_only, bnd, np.int64(0),
                                                 np.int64(0), 0.0)
        if ng == -1:  # key space beyond 62 bits: rank by sorting the tuples
            group, ng = regroup(src.q, tab, toff, gcard, 0)
            sizes, first = weighted_first(kernel_array(group, np.int32), src.w, int(ng))
            bnd, before = None, None
        self.seconds["rollup"] += time.perf_counter() - t0
        return src, group, sizes, first, int(ng), offs, (bnd, before)

    def check(self, node: tuple[int, ...], budget: int | None = None, *,
              bound: bool = False) -> tuple[NodeCheck, tuple[int, int, int, int]]:
        """Decide ``node``, stopping early past ``budget``.

        Also returns (suppressed individuals, kept classes, Σ n_g² over kept classes,
        bound): ``bound`` = Σ_g n_g·max(n_g, k) over all classes when asked (see
        :meth:`loss_and_bound`), else −1.
        """
        if _FUSED and self.sizes_only and budget is None and not bound:
            return self._check_sizes(node)
        from .._kernels.counting import DENSE_CELLS, count_pairs
        from .._kernels.lattice import profile_stats, size_stats

        src, group, sizes, first, ng, offs, blk = self.classes(
            node, self.max_groups if budget is None else None)
        budget = self.budget if budget is None else budget
        if ng == -2:  # more classes than can pass: failed before the end of the scan
            return NodeCheck(node, False, self.max_groups + 1, 0), (0, 0, 0, -1)
        t0 = time.perf_counter()
        csr = None
        if not self.sizes_only:
            csr = count_pairs(kernel_array(group, np.int32), src.s, src.w, ng,
                              len(self.lat.values), DENSE_CELLS)
        t1 = time.perf_counter()
        self.seconds["count"] += t1 - t0
        sz = np.ascontiguousarray(sizes, dtype=np.int64)   # writable, as in decide_sizes
        if self.sizes_only:
            sup, exceeded, kept, sq = size_stats(sz, self.k, budget)
        else:
            sp = self.spec
            sup, exceeded, kept, sq = profile_stats(
                kernel_array(csr[0], np.int64), kernel_array(csr[1], np.int32),
                kernel_array(csr[2], np.int64), sz, sp.kinds, sp.iparams, sp.fparams, sp.q,
                sp.qrank, sp.inv_q, budget)
        t2 = time.perf_counter()
        self.seconds["criterion"] += t2 - t1
        ok = not exceeded and (budget == 0 or kept > 0)
        if (bound or not ok) and self.use_cache:
            self._keep(node, src, sizes, first, ng, offs, csr, blk)
        self.seconds["materialize"] += time.perf_counter() - t2
        b = int(np.sum(sizes * np.maximum(sizes, min(self.k, self.lat.n_rows)))) if bound else -1
        res = NodeCheck(node, ok, ng, int(sup) if ok and budget > 0 else 0)
        return res, (int(sup), int(kept), int(sq), b)

    def _check_sizes(self, node: tuple[int, ...]) -> tuple[NodeCheck, tuple[int, int, int, int]]:
        """:meth:`check` of pure k-anonymity under the search's budget: one fused kernel."""
        t0 = time.perf_counter()
        nd = np.asarray(node, dtype=np.int64)
        src = self._source(nd)
        self.tick += 1
        src.last = self.tick
        self.rows_scanned += src.m
        bnd = self.blocks(src, nd)
        cut = self._cut(bnd) if src.m >= _SPLIT_ROWS and self.threads > 1 else 0
        if cut:
            sizes, first, ng, sup, exceeded, kept, sq, offs, before = self._decide_split(
                src, nd, bnd, cut)
        else:
            sizes, first, ng, sup, exceeded, kept, sq, offs, before = self.kern.decide_sizes(
                src.q, src.gptr, src.gattr, src.scard, src.levels, self.maps, self.off_tab,
                self.card_tab, nd, src.w, self.max_groups, self.slot, self.k, self.budget,
                bnd, float(self.keep_ratio))
        t1 = time.perf_counter()
        self.seconds["rollup"] += t1 - t0
        if ng == -1:  # key space beyond 62 bits: the general path sorts the tuples
            self.rows_scanned -= src.m
            return self.check(node, self.budget)
        if ng == -2:  # more classes than can pass: failed before the end of the scan
            return NodeCheck(node, False, self.max_groups + 1, 0), (0, 0, 0, -1)
        if ng == -3:  # the blocks scanned so far suppress more than the budget
            return NodeCheck(node, False, 0, 0), (0, 0, 0, -1)
        budget = self.budget
        ok = not exceeded and (budget == 0 or kept > 0)
        if not ok and self.use_cache:
            self._keep(node, src, sizes, first, ng, offs, None, (bnd, before))
        self.seconds["materialize"] += time.perf_counter() - t1
        res = NodeCheck(node, ok, ng, int(sup) if ok and budget > 0 else 0)
        return res, (int(sup), int(kept), int(sq), -1)

    def _decide_split(self, src: _Materialized, nd: np.ndarray, bnd: np.ndarray,
                      cut: int) -> tuple:
        """:func:`~fastpriv._kernels.lattice.decide_sizes` of a large roll-up on two threads.

        Blocks hold disjoint classes, so chunks of consecutive blocks are rolled up on their
        own and the results concatenated. A first chunk of about an eighth of the rows (the
        smallest blocks) runs alone: a node failing fast there costs no thread hand-off;
        otherwise the rest runs as two chunks split at ``cut``, the block boundary nearest
        the middle row (each chunk with its own work buffer, failing fast against the
        budget and class count left after the first chunk — exact, as a chunk's suppressed
        individuals and classes bound the node's from below).
        """
        from .._kernels.lattice import decide_sizes
        from .._threads import run_chunks

        if self.slot2 is None:
            self.slot2 = np.full(self.slot.shape[0], -1, dtype=np.int32)
        p = bnd.shape[0] - 1
        probe = 1 + int(np.argmin(np.abs(bnd[1:cut] - bnd[-1] // 8))) if cut > 1 else 0
        keep = float(self.keep_ratio)

        def run(lo: int, hi: int, slot: np.ndarray, budget: int, max_groups: int) -> tuple:
            return decide_sizes(src.q, src.gptr, src.gattr, src.scard, src.levels, self.maps,
                                self.off_tab, self.card_tab, nd, src.w, max_groups, slot,
                                self.k, np.int64(budget), bnd[lo:hi + 1], keep)

        res = []
        left, groups = self.budget, self.max_groups
        if probe:
            r = run(0, probe, self.slot, left, groups)
            res.append(r)
            if r[2] < 0:
                return self._merge(res, [0, probe])
            left -= int(r[3])
            groups -= int(r[2])
        slots = (self.slot, self.slot2)
        spans = ((probe, cut), (cut, p))
        res += run_chunks(lambda i: run(*spans[i], slots[i], left, max(groups, 0)), 2,
                          threads=2)
        return self._merge(res, [0, probe, cut, p] if probe else [0, cut, p])

    def _merge(self, res: list, at: list[int]) -> tuple:
        """Concatenate :func:`decide_sizes` results of consecutive chunks of blocks.

        ``at`` are the chunks' first block indices (and the last block's end).
        """
        ngs = [int(r[2]) for r in res]
        if any(g < 0 for g in ngs):
            ng = -1 if -1 in ngs else (-2 if -2 in ngs else -3)
            return res[0][0], res[0][1], ng, 0, False, 0, 0, res[0][7], res[0][8]
        total = sum(ngs)
        if total > self.max_groups:
            return res[0][0], res[0][1], -2, 0, False, 0, 0, res[0][7], res[0][8]
        sup = sum(int(r[3]) for r in res)
        exceeded = any(bool(r[4]) for r in res) or sup > self.budget
        offsets = np.cumsum([0] + ngs[:-1])
        before = np.concatenate([r[8][:-1] + o for r, o in zip(res, offsets, strict=True)]
                                + [np.array([total], dtype=np.int64)])
        assert before.shape[0] == at[-1] + 1
        return (np.concatenate([r[0] for r in res]), np.concatenate([r[1] for r in res]),
                total, sup, exceeded, sum(int(r[5]) for r in res),
                sum(int(r[6]) for r in res), res[0][7], before)

    def _keep(self, node: tuple[int, ...], src: _Materialized, sizes: np.ndarray,
              first: np.ndarray, ng: int, offs: np.ndarray, csr: Any,
              blk: tuple[np.ndarray | None, np.ndarray | None]) -> None:
        rows = ng if csr is None else int(csr[1].shape[0])
        if rows > self.keep_ratio * src.m:
            return
        nd = np.asarray(node, np.int64)
        scard = self.card_tab[self.attrs, nd]
        groups = _pack_groups(scard.tolist(), rows)
        need = rows * (4 * len(groups) + 8 + (0 if csr is None else 4))
        if need > self.cache_bytes:
            return
        if self.used + need > self.cache_bytes:
            for old in sorted(self.cache[1:], key=lambda m: m.last):
                self.cache.remove(old)
                self.used -= old.nbytes
                if self.used + need <= self.cache_bytes:
                    break
            self._index()
        rows = kernel_array(first, np.int64)
        if csr is None:
            mat = _Materialized(nd, None, scard, None, kernel_array(sizes, np.int64), groups)
        else:
            rows = kernel_array(rows[np.repeat(np.arange(ng), np.diff(csr[0]))], np.int64)
            mat = _Materialized(nd, None, scard, kernel_array(csr[1], np.int32),
                                kernel_array(csr[2], np.int64), groups)
        mat.set_codes(self.kern.repack_rows(src.q, src.gptr, src.gattr, src.scard, self.maps, offs,
                                  rows, mat.gptr, mat.gattr, mat.scard))
        bnd, before = blk
        if csr is None and bnd is not None and src.part >= 0:
            # the blocks of every level at or above this node's: classes before each
            mat.part = src.part
            lev0, top = int(nd[src.part]), self.lat.heights[src.part] - 1
            for lev in range(lev0, top):
                if src.bounds.get(lev) is None:
                    break
                pos = np.searchsorted(bnd, src.bounds[lev])
                mat.bounds[lev] = kernel_array(before[pos], np.int64)
        mat.last = self.tick
        self._append(mat)
        self.used += mat.nbytes

    def class_sizes(self, node: tuple[int, ...]) -> np.ndarray:
        """People per class of ``node`` (a sizes-only engine), rolled up; ``node`` is cached.

        For criteria on the class sizes alone that no roll-up kernel decides (the risk
        criteria): any checked node may lie below a node still to check, so each is kept as
        a source while the cache allows.
        """
        src, _, sizes, first, ng, offs, blk = self.classes(node)
        t0 = time.perf_counter()
        if self.use_cache:
            self._keep(node, src, sizes, first, ng, offs, None, blk)
        self.seconds["materialize"] += time.perf_counter() - t0
        return np.asarray(sizes, dtype=np.int64)

    def loss_and_bound(self, node: tuple[int, ...]) -> tuple[int, int]:
        """Return the discernibility of ``node`` and a lower bound for every node above it.

        Failing classes are suppressed. Above ``node`` each individual ends up suppressed
        (cost n) or in a class at least as large as its class here (and ≥ k under
        k-anonymity), so Σ_g n_g·max(n_g, min(k, n)) over this node's classes bounds the
        discernibility of them all. Both exact integers.
        """
        _, (sup, _, sq, b) = self.check(node, budget=self.lat.n_rows, bound=True)
        return sq + sup * self.lat.n_rows, b


def minimal_grid(sat: np.ndarray, closed: bool = False) -> np.ndarray:
    """Return the satisfying grid entries with no satisfying entry strictly below them.

    ``sat`` is a boolean grid of the lattice's shape. ``below[x]`` = some satisfying
    ``y ≤ x`` (prefix-OR along every axis); a satisfying ``x`` is minimal iff
    ``below[x − e_a]`` is false for every ``a`` with ``x_a > 0`` (every ``y ≤ x, y ≠ x`` lies
    below one of those). ``closed``: the set is upward-closed (Flash's), so ``below`` is the
    set itself.
    """
    below = sat
    if not closed:
        below = sat.copy()
        for ax in range(below.ndim):
            np.logical_or.accumulate(below, axis=ax, out=below)
    strictly = np.zeros_like(sat)
    for ax in range(below.ndim):
        dst = [slice(None)] * below.ndim
        src = [slice(None)] * below.ndim
        dst[ax], src[ax] = slice(1, None), slice(None, -1)
        strictly[tuple(dst)] |= below[tuple(src)]
    return sat & ~strictly


class GeneralizationLattice:
    """The full-domain generalization lattice of a table (encoded once, checked many times).

    Parameters
    ----------
    table : table-like
        One row per individual (SVPI): pyarrow Table, Parquet/CSV path, pandas/polars.
    qi : list of str
        Quasi-identifier columns, each with a hierarchy.
    sensitive : str or None
        Sensitive column; ``None`` when every column that matters is a QI (ARX's standard
        set-up): then only criteria that read the QIs alone (k-anonymity) apply.
    hierarchies : None, directory or mapping
        See :func:`fastpriv.hierarchies.resolve_hierarchies` (``None`` = the bundled Adult
        hierarchies; a mapping may give a :class:`~fastpriv.hierarchies.Hierarchy`, a CSV
        path, interval widths or ``"suppress"`` per attribute). A directory may hold other
        data sets' files: only the QIs' are read, named exactly as the attribute
        (:func:`fastpriv.hierarchies.find_hierarchy_files`).
    nulls : {"error", "drop"}
        Nulls in the used columns raise (default) or drop the row (its group id is −1).
    weight : str, optional
        Multiplicity column (as in :meth:`fastpriv.Release.from_table`): each row stands
        for ``weight`` identical people (a ``GROUP BY`` count). Class sizes, the criterion,
        the suppression budget and every utility measure count people, so the search and
        its release equal the expanded table's. Integers ≥ 0 (0: nobody, group id −1).
    hierarchy_prefix : str, optional
        With a ``hierarchies`` directory holding several data sets' files (ARX's
        ``data/``): the data set to read, ``"adult"`` for ``adult_hierarchy_<QI>.csv``.
        Default: the data set named like ``table``'s file, else the only one with a file
        for every QI.

    Examples
    --------
    >>> import fastpriv as fp
    >>> lat = GeneralizationLattice(fp.datasets.load_adult(), ["age", "marital_status",
    ...     "race", "sex"], "occupation")
    >>> lat.n_nodes
    72
    >>> res = lat.search(fp.predicates.KAnonymity(10))
    >>> res.best, res.n_checked < 72
    ((1, 2, 1, 1), True)

    """

    def __init__(self, table: Any, qi: Sequence[str], sensitive: str | None = None,
                 hierarchies: Any = None, *, nulls: str = "error",
                 weight: str | None = None, hierarchy_prefix: str | None = None) -> None:
        prep, ws = prepare_weighted_input(table, qi, sensitive, nulls, weight)
        t, qi, self.n_input_rows, self.kept_rows = prep
        self.weight = weight
        #: multiplicity of every input row (``weight=``), else None
        self.input_weights = None if ws is None else ws.input
        # people per kept row (int64; empty: one each, the kernels' convention)
        self._row_w = self._empty_w() if ws is None else kernel_array(ws.kept, np.int64)
        self.table = t
        self.qi = tuple(qi)
        self.sensitive = sensitive
        self.hierarchies: list[BoundHierarchy] = resolve_hierarchies(
            hierarchies, qi, t, prefix=hierarchy_prefix, data_name=table)
        self.heights = tuple(h.height for h in self.hierarchies)
        scol = sensitive_column(sensitive)
        sens = encode_column(t.column(scol), name=scol)
        self.values = sens.labels
        self.n_rows = t.num_rows if ws is None else int(ws.kept.sum())  # people
        self._sens_rows = sens.codes

        # compress to distinct (QI codes, sensitive) cells
        d = len(qi)
        cards = [h.domain_size for h in self.hierarchies] + [len(sens.labels)]
        cell, first, weights = compress([h.codes for h in self.hierarchies] + [sens.codes],
                                        cards)
        if ws is not None:   # a cell holds Σ weight people, not its rows
            weights = exact_bincount(np.asarray(cell, dtype=np.int64), ws.kept,
                                     first.shape[0])
        self._row_cell = cell
        self._cell_row = kernel_array(first, np.int64)   # first (input) row of each cell
        self._cq = kernel_array(np.stack([h.codes[first] for h in self.hierarchies]), np.int32)
        self._cs = kernel_array(sens.codes[first], np.int32)
        self._cw = kernel_array(weights, np.int64)
        self.n_cells = int(first.shape[0])
        # flat gather tables: attribute a, level l at offset _off[a][l]
        flat, off, pos = [], [], 0
        for h in self.hierarchies:
            row = []
            for lev in range(h.height):
                flat.append(h.maps[lev])
                row.append(pos)
                pos += h.domain_size
            off.append(row)
        self._maps = kernel_array(np.concatenate(flat), np.int32)
        self._off = off
        self._q = np.bincount(self._cs, weights=self._cw,
                              minlength=len(sens.labels)) / self.n_rows
        self._empty = kernel_array(np.empty(0, np.int64), np.int64)
        # nodes in order of height, then lexicographic
        nodes = np.indices(self.heights, dtype=np.int64).reshape(d, -1).T
        order = np.lexsort(tuple(nodes[:, a] for a in range(d - 1, -1, -1)) + (nodes.sum(1),))
        self.nodes = nodes[order]
        self.nodes.flags.writeable = False
        # position of each node in the C-ordered grid of shape ``heights`` (tagging works on
        # the grid: a node's successors / predecessors are one box slice of it)
        self._grid = np.ravel_multi_index(tuple(self.nodes.T), self.heights)
        self._level_maps: tuple[np.ndarray, list, bool] | None = None
        self._qi_classes: tuple[np.ndarray, np.ndarray] | None = None
        self._sorted_bottoms: dict[tuple[int, int, int], Any] = {}
        self._cq0: np.ndarray | None = None
        self._tuples: list[tuple[int, ...]] | None = None
        self._qtab: dict[str, list] | None = None
        self._ntab: dict[str, list[np.ndarray]] = {}

    @staticmethod
    def _empty_w() -> np.ndarray:
        return kernel_array(np.empty(0, np.int64), np.int64)

    # ------------------------------------------------------------------ basic facts
    @property
    def n_nodes(self) -> int:
        """Number of nodes (product of the hierarchy heights)."""
        return int(self.nodes.shape[0])

    @property
    def bottom(self) -> tuple[int, ...]:
        """The node with every attribute at level 0."""
        return tuple(0 for _ in self.heights)

    @property
    def top(self) -> tuple[int, ...]:
        """The node with every attribute at its highest level."""
        return tuple(h - 1 for h in self.heights)

    def _node(self, node: Any) -> tuple[int, ...]:
        try:
            t = tuple(int(x) for x in node)
        except TypeError:
            raise InputTypeError(f"node must be a sequence of levels, got {node!r}") from None
        if len(t) != len(self.heights) or any(not 0 <= x < h for x, h in
                                               zip(t, self.heights, strict=True)):
            raise InputError(f"node {node!r} is not in the lattice: one level per QI "
                             f"attribute {self.qi}, level a in 0..{[h - 1 for h in self.heights]}")
        return t

    # ------------------------------------------------------------------ roll-up tables
    def _level_tables(self) -> tuple[np.ndarray, list[list[list[int]]], bool]:
        """Build the flat level-to-level gather tables.

        Attribute ``a`` from level ``i`` to ``j ≥ i`` at offset ``offs[a][i][j]`` (codes of
        level ``i`` → codes of level ``j``); also whether every hierarchy is consistent
        (one level-``j`` parent per level-``i`` code; else nodes roll up from the cells
        only).
        """
        if self._level_maps is None:
            flat, offs, pos, consistent = [], [], 0, True
            for h in self.hierarchies:
                per = []
                for i in range(h.height):
                    row = [0] * h.height
                    for j in range(i, h.height):
                        t = np.zeros(h.cardinality(i), dtype=np.int32)
                        t[h.maps[i]] = h.maps[j]
                        consistent &= bool(np.array_equal(t[h.maps[i]], h.maps[j]))
                        flat.append(t)
                        row[j] = pos
                        pos += t.shape[0]
                    per.append(row)
                offs.append(per)
            self._level_maps = (kernel_array(np.concatenate(flat), np.int32), offs,
                                consistent)
        return self._level_maps

    def _cells_level0(self) -> np.ndarray:
        """Level-0 codes of every compressed cell, ``(d, n_cells)``."""
        if self._cq0 is None:
            self._cq0 = kernel_array(np.stack([h.maps[0][self._cq[a]] for a, h in
                                               enumerate(self.hierarchies)]), np.int32)
        return self._cq0

    def _qi_classes_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the bottom node's classes (distinct QI tuples, sensitive ignored).

        Level-0 codes ``(d, classes)`` and individuals per class.
        """
        from .._kernels.generalize import regroup, weighted_first

        if self._qi_classes is None:
            o = kernel_array([self._off[a][0] for a in range(len(self.heights))], np.int64)
            cards = kernel_array([h.cardinality(0) for h in self.hierarchies], np.int64)
            g, n = regroup(self._cq, self._maps, o, cards, max(_DENSE_LIMIT, 4 * self.n_cells))
            sizes, first = weighted_first(kernel_array(g, np.int32), self._cw, int(n))
            self._qi_classes = (kernel_array(self._cells_level0()[:, first], np.int32),
                                kernel_array(sizes, np.int64))
        return self._qi_classes

    # ------------------------------------------------------------------ per-node work
    def cell_groups(self, node: Any) -> tuple[np.ndarray, int]:
        """Group index of every compressed cell at ``node`` and the number of groups."""
        from .._kernels.generalize import regroup

        node = self._node(node)
        offs = kernel_array([self._off[a][lev] for a, lev in enumerate(node)], np.int64)
        cards = kernel_array([h.cardinality(lev)
                              for h, lev in zip(self.hierarchies, node, strict=True)], np.int64)
        g, n = regroup(self._cq, self._maps, offs, cards, max(_DENSE_LIMIT, 4 * self.n_cells))
        return g, int(n)

    def release(self, node: Any, *, labels: bool = False) -> Release:
        """Return the release (frequency profiles) at ``node``.

        With ``labels=True`` the release's group keys are the generalized QI tuples;
        otherwise plain indices (cheaper — what the search uses).
        """
        g, n = self.cell_groups(node)
        return self._release(g, n, node if labels else None)

    def _release(self, g: np.ndarray, n: int, node: Any = None) -> Release:
        from .._kernels.counting import DENSE_CELLS, count_pairs
        from .._kernels.generalize import weighted_first

        g = kernel_array(g, np.int32)
        indptr, codes, counts = count_pairs(g, self._cs, self._cw, n, len(self.values), DENSE_CELLS)
        sizes, first = weighted_first(g, self._cw, n)
        if node is None:
            keys = pa.table({"group": pa.array(np.arange(n, dtype=np.int64))})
        else:
            node = self._node(node)
            keys = pa.table({a: pa.array([h.labels[lev][c] for c in
                                          h.maps[lev][self._cq[i][first]]])
                             for i, (a, h, lev) in enumerate(zip(self.qi, self.hierarchies,
                                                                  node, strict=True))})
        return Release(indptr=indptr, codes=codes, counts=counts, sizes=sizes,
                       values=self.values, groups=keys, case=SVPI,
                       sensitive_name=self.sensitive)

    def check(self, node: Any, predicate: Any, *, suppression: float = 0.0) -> NodeCheck:
        """Evaluate ``predicate`` at ``node`` (with an optional suppression budget)."""
        import dataclasses

        crit = as_criterion(predicate)
        require_sensitive(crit, self.sensitive)
        budget = self._budget(crit, suppression)
        res = self._check(self._node(node), crit, budget)
        return dataclasses.replace(res, params={"node": list(res.node), "criterion": crit.name,
                                                "suppression": float(suppression)})

    def _budget(self, crit: Criterion, suppression: float) -> int:
        if isinstance(suppression, bool) or not isinstance(suppression, (int, float)) or \
                not 0.0 <= float(suppression) < 1.0:
            raise InputError(f"suppression must be a fraction in [0, 1), got {suppression!r}")
        if suppression and _suppression_parts(crit) is None:
            raise InputError(f"suppression needs a group-local criterion (k-anonymity, "
                             f"ℓ-diversity, t-closeness, (c,k)-safety with negations) or a "
                             f"risk criterion (max_avg_risk, max_records_at_risk, "
                             f"max_uniqueness), every part of a conjunction one of them; "
                             f"{crit.name} is not")
        return int(math.floor(float(suppression) * self.n_rows))

    def _check(self, node: tuple[int, ...], crit: Criterion, budget: int,
               seconds: dict[str, float] | None = None,
               sizes_engine: "_RollUp | None" = None) -> NodeCheck:
        """Decide ``node`` from its classes (``seconds``: adds ``regroup``/``criterion``).

        The classes are the cells regrouped, or for criteria on the class sizes alone their
        sizes rolled up by ``sizes_engine`` (:meth:`_RollUp.class_sizes`).
        """
        from .._kernels.generalize import weighted_first

        t0 = time.perf_counter()
        if sizes_engine is not None:
            sizes = sizes_engine.class_sizes(node)
            n = int(sizes.shape[0])
        else:
            g, n = self.cell_groups(node)
            if seconds is not None:
                seconds["regroup"] += time.perf_counter() - t0
        t1 = time.perf_counter()
        if _size_parts(crit) is not None:
            if sizes_engine is None:
                sizes, _ = weighted_first(kernel_array(g, np.int32), self._cw, n)
            ok, sup = self._decide_sizes(crit, sizes, budget)
        elif budget > 0:
            sizes, first = weighted_first(kernel_array(g, np.int32), self._cw, n)
            kept = self._kept(node, crit, g, n, sizes, first, budget)
            sup = int(sizes[~kept].sum())
            ok = sup <= budget and bool(kept.any())
        else:
            ok, sup = self._holds(crit, g, n), 0
        if seconds is not None:
            seconds["criterion"] += time.perf_counter() - t1
        return NodeCheck(node, ok, n, sup if ok else 0)

    def _holds(self, crit: Criterion, g: np.ndarray, n: int) -> bool:
        """Whether the classes ``g`` (``n`` of them) meet ``crit``, nothing suppressed.

        Criteria on the class sizes alone (k-anonymity, the risk criteria) read the sizes
        only; the others the node's release.
        """
        from .._kernels.generalize import weighted_first

        if _size_parts(crit) is not None:
            sizes, _ = weighted_first(kernel_array(g, np.int32), self._cw, n)
            return self._decide_sizes(crit, sizes, 0)[0]
        return self._eval(crit, self._release(g, n))

    def _decide_sizes(self, crit: Criterion, sizes: np.ndarray, budget: int) -> tuple[bool, int]:
        """Decide a criterion on the class sizes alone from ``sizes``: (passes, suppressed).

        Without a budget every part must hold; with one, suppression as :meth:`_kept` does
        it, the classes of equal size in any order (the records suppressed, and so the
        decision, do not depend on it).
        """
        ks, sample = _size_parts(crit)  # type: ignore[misc]
        k = max((p.k for p in ks), default=1)
        if budget == 0:
            return bool(sizes.min() >= k) and all(p.holds(sizes) for p in sample), 0
        kept = self._enforce(sample, sizes >= k, sizes, budget,
                             lambda idx: idx[np.argsort(sizes[idx], kind="stable")])
        sup = int(sizes[~kept].sum())
        return sup <= budget and bool(kept.any()), sup

    def _eval(self, crit: Criterion, rel: Release) -> bool:
        if isinstance(crit, LocalCriterion) or (getattr(crit, "local", False)
                                                and hasattr(crit, "group_ok")):
            return bool(crit.group_ok(rel, self._q).all())  # type: ignore[attr-defined]
        return bool(crit(rel))

    def _kept(self, node: tuple[int, ...], crit: Criterion, g: np.ndarray, n: int,
              sizes: np.ndarray, first: np.ndarray, budget: int,
              utility: Any = None) -> np.ndarray:
        """Which of the ``n`` classes ``g`` of ``node`` are kept under suppression (ARX's rules).

        The classes failing a group-local part of ``crit`` are suppressed; then each risk
        part (:class:`~fastpriv.predicates.AverageRisk`, ``RecordsAtRisk``,
        ``PopulationUniqueness``) suppresses the leading classes left, in ARX's order
        (:meth:`_arx_order`), until it holds on the classes kept (:meth:`_enforce`).
        ``sizes``/``first``: each class's people and first cell.
        """
        from ..predicates import AllOf

        local, sample = _suppression_parts(crit)  # type: ignore[misc]
        kept = np.ones(n, dtype=bool)
        if local and all(isinstance(p, KAnonymity) for p in local):
            kept = sizes >= max(p.k for p in local)  # type: ignore[attr-defined]
        elif local:
            part = local[0] if len(local) == 1 else AllOf(*local)
            kept = np.asarray(part.group_ok(self._release(g, n), self._q),  # type: ignore[attr-defined]
                              dtype=bool)
        return self._enforce(sample, kept, sizes, budget, lambda idx: self._arx_order(
            idx, node, g, n, sizes, first, utility))

    @staticmethod
    def _enforce(sample: list, kept: np.ndarray, sizes: np.ndarray, budget: int,
                 order: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Suppress, for each risk part in turn, the leading kept classes it needs (``kept``).

        ``order`` sorts class indices into the order of suppression; the part's
        ``suppressed_prefix`` is ARX's ``RiskBasedCriterion.enforce``, giving up past
        ``budget`` records (those already suppressed counted).
        """
        sup = int(sizes[~kept].sum())
        for part in sample:
            idx = order(np.flatnonzero(kept))
            j = part.suppressed_prefix(sizes[idx], budget, sup)
            kept[idx[:j]] = False
            sup += int(sizes[idx[:j]].sum())
        return kept

    def _arx_order(self, idx: np.ndarray, node: tuple[int, ...], g: np.ndarray, n: int,
                   sizes: np.ndarray, first: np.ndarray, utility: Any) -> np.ndarray:
        """ARX's suppression order of the classes ``idx`` (``HashGroupifyDistribution``).

        Smallest first; among equal sizes, for ``utility="loss"`` the class of lower loss
        first (ARX's ``MetricMDNMLoss`` of one class: Π_A (n_g·share_A + 1)^(1/d) − 1 over
        its generalized values' domain shares), then the class holding the earlier first
        input row (ARX's representative).
        """
        rep = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(rep, g, self._cell_row)
        keys = [rep[idx]]
        if utility == "loss":
            tab = self._quality_tables()
            d = len(self.heights)
            loss = np.ones(idx.shape[0])
            for a, (h, lev) in enumerate(zip(self.hierarchies, node, strict=True)):
                code = h.maps[lev][self._cq[a][first[idx]]]
                share = tab["leaves"][a][lev][code] / tab["dsize"][a]
                loss *= (sizes[idx] * share + 1.0) ** (1.0 / d)
            keys.append(loss - 1.0)
        keys.append(sizes[idx])
        return idx[np.lexsort(keys)]

    # ------------------------------------------------------------------ search
    def search(self, predicate: Any, *, utility: str | Callable = "discernibility",
               suppression: float = 0.0, strategy: str = "auto", materialize: bool = True,
               progress: Callable[[int, int], None] | None = None,
               objective: str = "minimal",
               on_check: Callable[[SearchProgress], None] | None = None,
               n_jobs: int | None = 1, suppressed: str = "drop") -> LatticeSearch:
        """Every minimal node satisfying ``predicate``, and the best by ``utility``.

        Parameters
        ----------
        predicate : criterion, callable or list
            A criterion (see :mod:`fastpriv.predicates`); a non-monotone one is checked at
            every node (``objective="optimal"``: at every node that could be the optimum).
        utility : str or callable
            ``"discernibility"`` (default), ``"avg_group_size"``, ``"height"``,
            ``"precision"``, ARX's quality models ``"loss"`` (``MetricMDNMLoss``, ARX's
            default), ``"entropy"`` (``MetricMDNUEntropyPrecomputed``), ``"nm_entropy"``,
            ``"nm_precision"``, ``"aecs"``, or ``f(node, release) -> float`` (minimized).
            Formulas, ARX class names and monotonicity: module docstring.
        suppression : float
            Fraction of rows that may be suppressed (group-local criteria and the risk
            criteria on class sizes, see the module docstring).
        strategy : {"auto", "flash", "exhaustive"}
            ``auto`` = predictive tagging when monotonicity holds, else exhaustive (bounded
            for a non-monotone criterion's optimum, see ``objective``).
        materialize : bool
            Build the :class:`Anonymized` release of the best node.
        progress : callable, optional
            Called as ``progress(n_tagged, n_nodes)`` after each check.
        objective : {"minimal", "optimal"}
            ``"minimal"``: ``best`` is the best *minimal* node. ``"optimal"``: ``best`` is
            the loss-optimal node among *all* satisfying nodes (ARX's question). Without
            suppression every measure but a custom callable only grows upwards, so both
            agree; with suppression a higher node can suppress fewer rows and cost less,
            and the satisfying nodes above the minimal ones are scored too, pruned only by
            exact lower bounds (``discernibility``: no node above ``X`` costs less than
            Σ_g n_g·max(n_g, k); ``aecs``: n/#classes(X); ``loss``, ``nm_precision``,
            ``nm_entropy``: node-only bounds visited best-first). ``height``,
            ``precision`` and ``entropy`` depend on the node alone, so their optimum is
            always a minimal node. For a non-monotone criterion under one of the measures
            with a node-only bound (``height``, ``precision``, ``entropy``, ``loss``,
            ``nm_precision``, ``nm_entropy``) ``strategy="auto"`` checks only the nodes
            whose bound could beat the best satisfying node (``res.strategy ==
            "bounded"``; module docstring). ``res.optimum`` states which optimum ``best``
            is.
        on_check : callable, optional
            Called with a :class:`SearchProgress` (nodes checked, nodes tagged, elapsed
            seconds, the node and its outcome) after each check.
        n_jobs : int or None, default 1
            Threads for the roll-ups of large materialized nodes (≥ 262,144 rows) under
            pure k-anonymity: such a roll-up is split into blocks of disjoint classes and
            run on two threads when ``n_jobs`` allows two (``None``: the calling thread's
            setting, ``-1``: all; see :mod:`fastpriv._threads`). It pays on idle cores only:
            on a machine whose cores are busy the thread hand-offs cost more than they save,
            hence the default of one thread.
        suppressed : {"drop", "keep"}
            What the best node's release does with the rows suppression removed: leave them
            out (default), or keep them as ARX does, every QI ``*`` and the sensitive value
            kept, as one more group audited by ``predicate`` (see :meth:`anonymize`).

        """
        t0 = time.perf_counter()
        crit = as_criterion(predicate)
        require_sensitive(crit, self.sensitive)
        _check_suppressed(suppressed, suppression)
        check_choice(strategy, "strategy", ("auto", "flash", "exhaustive"))
        check_choice(objective, "objective", ("minimal", "optimal"))
        if not callable(utility):
            check_choice(utility, "utility", UTILITIES)
        budget = self._budget(crit, suppression)
        monotone = bool(getattr(crit, "monotone", True))
        if budget > 0 and not getattr(crit, "union_monotone", False):
            monotone = False  # suppression keeps monotonicity only for k / distinct ℓ
        if strategy == "flash" and not monotone:
            raise InputError(f"strategy='flash' needs a monotone criterion; {crit.name} "
                             f"{'with suppression ' if budget else ''}is not")
        use_flash = monotone and strategy != "exhaustive"
        # a non-monotone criterion's optimum: best-first by an exact node-only lower bound
        bounded = (not monotone and strategy == "auto" and objective == "optimal"
                   and isinstance(utility, str) and utility in _NODE_ONLY + _NODE_BOUND)
        N = self.n_nodes
        grid = np.zeros(self.heights, dtype=np.int8)
        flat = grid.reshape(-1)
        gidx = self._grid
        from .._threads import resolve_n_jobs

        threads = resolve_n_jobs(n_jobs)
        engine = _RollUp(self, crit, budget, threads=threads) if self._rolls_up(crit) else None
        # the risk criteria read class sizes alone: rolled up by a sizes-only engine, except
        # in the bounded search — it checks nodes low in the lattice first, too many classes
        # to cache as sources, and rolling them up from the bottom is no faster than
        # regrouping the cells (ARX's Adult: 2.4 ms against 0.9 ms a node)
        sizes_engine = _RollUp(self, KAnonymity(1), 0, threads=threads) \
            if engine is None and not bounded and _size_parts(crit) is not None else None
        stats: dict[tuple[int, ...], tuple[int, int, int, int]] = {}
        order: list[tuple[int, ...]] = []
        phases = dict.fromkeys(("bookkeeping", "regroup", "criterion", "bounds", "minimal",
                                "score", "optimum"), 0.0)
        n_tagged = 0
        tuples = self._node_tuples()
        from .._kernels.lattice import tag_box

        heights = kernel_array(self.heights, np.int64)
        strides = kernel_array(np.cumprod((self.heights[1:] + (1,))[::-1])[::-1], np.int64)

        def evaluate(i: int) -> bool:
            nonlocal n_tagged
            node = tuples[i]
            if engine is not None:
                res, st = engine.check(node)
                stats[node] = st
            else:
                res = self._check(node, crit, budget, phases, sizes_engine)
            order.append(node)
            tb = time.perf_counter()
            if use_flash:   # the up-set / down-set of a node is one box of the grid
                n_tagged += tag_box(flat, strides, heights, self.nodes[i],
                                    np.int64(1 if res.ok else 0),
                                    np.int64(SAT if res.ok else UNSAT))
            else:
                n_tagged += int(flat[gidx[i]] == UNKNOWN)
                flat[gidx[i]] = SAT if res.ok else UNSAT
            if progress is not None or on_check is not None:
                tagged = n_tagged
                if progress is not None:
                    progress(tagged, N)
                if on_check is not None:
                    on_check(SearchProgress(len(order), tagged, N, time.perf_counter() - t0,
                                            node, res.ok))
            phases["bookkeeping"] += time.perf_counter() - tb
            return res.ok

        scores: dict[tuple[int, ...], float] = {}
        if use_flash:
            self._flash(flat, strides, heights, evaluate)
        elif bounded:
            best = self._bounded(evaluate, utility, crit, budget, scores, phases)
        else:
            for i in range(N):
                evaluate(i)
        sat_grid = grid == SAT
        sat = flat[gidx] == SAT
        tm = time.perf_counter()
        minimal = self._minimal_grid(sat_grid, closed=use_flash)
        phases["minimal"] += time.perf_counter() - tm
        n_scored = len(scores) - len(minimal)
        if not bounded:
            best, n_scored = self._best(sat_grid, minimal, scores, utility, crit, budget,
                                        engine, stats, objective, phases)
        name = utility if isinstance(utility, str) else getattr(utility, "__name__", "custom")
        phases = {k: v for k, v in phases.items() if v or k == "bookkeeping"}
        for e in (engine, sizes_engine):
            for k, v in ({} if e is None else e.seconds).items():
                phases[k] = phases.get(k, 0.0) + v
        phases["total"] = time.perf_counter() - t0
        params = {"qi": list(self.qi), "criterion": crit.name, "utility": name,
                  "suppression": float(suppression), "strategy": strategy,
                  "objective": objective}
        res = LatticeSearch(qi=self.qi, heights=self.heights, criterion=crit.name,
                            minimal=tuple(minimal), best=best, utility=name,
                            scores=scores, n_nodes=N, n_checked=len(order),
                            n_satisfying=int(sat.sum()), checked=tuple(order),
                            strategy="flash" if use_flash else
                            ("bounded" if bounded else "exhaustive"),
                            suppression=float(suppression), seconds=phases,
                            satisfying=sat, objective=objective, n_scored=n_scored,
                            n_rows_rolled_up=sum(e.rows_scanned for e in (engine, sizes_engine)
                                                 if e is not None),
                            params=params)
        if materialize and best is not None:
            anonymized = self.anonymize(best, crit, suppression=suppression,
                                        info={"search": res.to_dict()},
                                        utility=name if isinstance(utility, str) else None,
                                        suppressed=suppressed)
            anonymized.params["optimum"] = res.optimum
            object.__setattr__(res, "anonymized", anonymized)
        return res

    def _flash(self, flat: np.ndarray, strides: np.ndarray, heights: np.ndarray,
               evaluate: Callable[[int], bool]) -> None:
        """Flash's traversal: from each untagged node, binary search along an upward path.

        The path raises the attribute with the lowest relative level first (a "diagonal"
        path) through untagged nodes; ``evaluate`` checks and tags a node.
        """
        from .._kernels.lattice import upward_path

        N = self.n_nodes
        gidx = self._grid
        rel_step = kernel_array([1.0 / max(h - 1, 1) for h in self.heights], np.float64)
        at = np.empty(N, dtype=np.int64)     # node index at each grid position
        at[gidx] = np.arange(N)
        for i in self._untagged(flat):
            path = upward_path(flat, strides, heights, self.nodes[i], rel_step)
            lo, hi = 0, len(path) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                st = flat[path[mid]]
                ok = evaluate(int(at[path[mid]])) if st == UNKNOWN else st == SAT
                if ok:
                    hi = mid - 1
                else:
                    lo = mid + 1

    def _untagged(self, flat: np.ndarray, chunk: int = 1024) -> Any:
        """Yield each node index, in order, whose grid cell is untagged when it is reached.

        Tags only accumulate, so a vectorized look at a chunk of nodes ahead finds every
        candidate; each is looked at again when its turn comes.
        """
        gidx = self._grid
        for lo in range(0, self.n_nodes, chunk):
            for j in np.flatnonzero(flat[gidx[lo:lo + chunk]] == UNKNOWN).tolist():
                if flat[gidx[lo + j]] == UNKNOWN:
                    yield lo + j

    def _bounded(self, evaluate: Callable[[int], bool], utility: str, crit: Criterion,
                 budget: int, scores: dict, phases: dict[str, float]) -> tuple[int, ...] | None:
        """Return the optimum of a non-monotone criterion, checking only nodes that can be it.

        Nodes are visited by (node-only lower bound of ``utility``, height, lexicographic)
        — :meth:`_node_scores`, which never exceeds the node's score — and checked until
        the bound exceeds the best satisfying node's score: no node left can beat it. When
        the bound is the score (node-only measures, or nothing suppressed) the first
        satisfying node is the optimum. Satisfying nodes checked are scored into ``scores``.
        """
        tb = time.perf_counter()
        lb = self._node_scores(self.nodes, utility)
        visit = np.lexsort((np.arange(self.n_nodes), lb))   # node order: height, lexicographic
        phases["bounds"] += time.perf_counter() - tb
        exact = budget == 0 or utility in _NODE_ONLY
        tuples = self._node_tuples()
        key = None
        for i in visit.tolist():
            # bound and score are summed in different orders: stop only clearly past it
            if key is not None and lb[i] > key[0] + 1e-9 * max(1.0, abs(key[0])):
                break
            if not evaluate(i):
                continue
            node = tuples[i]
            ts = time.perf_counter()
            score = float(lb[i]) if exact else self._score(node, utility, crit, budget, None)
            phases["score"] += time.perf_counter() - ts
            scores[node] = score
            if key is None or (score, sum(node), node) < key:
                key = (score, sum(node), node)
            if exact:
                break
        return None if key is None else key[2]

    def _best(self, sat_grid: np.ndarray, minimal: list[tuple[int, ...]], scores: dict,
              utility: Any, crit: Criterion, budget: int, engine: "_RollUp | None",
              stats: dict, objective: str, phases: dict[str, float]
              ) -> tuple[tuple[int, ...] | None, int]:
        """Score the minimal nodes into ``scores``; return the best (or the optimum) node.

        Returns ``(best, n_scored)``: the best minimal node, or with ``objective="optimal"``
        the best satisfying node (:meth:`_optimum`) and the non-minimal nodes it scored.
        The optimum of ``loss``, ``nm_precision`` or ``nm_entropy`` under suppression visits
        every satisfying node by its bound (:meth:`_bounded`) and scores only those that
        could beat it, minimal nodes included.
        """
        if not minimal:
            return None, 0
        if objective == "optimal" and budget > 0 and utility in _NODE_BOUND:
            # by bound over every satisfying node, minimal or not: only those whose bound
            # could beat the optimum are scored
            sat = sat_grid.reshape(-1)[self._grid]
            best = self._bounded(lambda i: bool(sat[i]), utility, crit, budget, scores,
                                 phases)
            return best, len(scores.keys() - set(minimal))
        ts = time.perf_counter()
        if utility in _NODE_ONLY or (budget == 0 and utility in _NODE_BOUND):
            # the node alone decides the score: every minimal node's in one pass
            scores.update(zip(minimal, self._node_scores(np.asarray(minimal), utility).tolist(),
                              strict=True))
        else:
            for m in minimal:
                scores[m] = self._score_from(m, utility, crit, budget, stats.get(m))
        phases["score"] += time.perf_counter() - ts
        best = min(minimal, key=lambda m: (scores[m], sum(m), m))
        if objective != "optimal":
            return best, 0
        to = time.perf_counter()
        best, n_scored = self._optimum(sat_grid, minimal, scores, best, utility, crit,
                                       budget, engine)
        phases["optimum"] += time.perf_counter() - to
        return best, n_scored

    def _node_tuples(self) -> list[tuple[int, ...]]:
        """Every node as a tuple of ints, in node order (built once)."""
        if self._tuples is None:
            self._tuples = [tuple(n) for n in self.nodes.tolist()]
        return self._tuples

    def _rolls_up(self, crit: Criterion) -> bool:
        """Whether node checks can use :class:`_RollUp` (built-in local criteria)."""
        if isinstance(crit, LocalCriterion):
            return True
        from ..predicates import AllOf

        return isinstance(crit, AllOf) and bool(crit.local)

    def _minimal_grid(self, sat_grid: np.ndarray,
                      closed: bool = False) -> list[tuple[int, ...]]:
        """Return the satisfying nodes with no satisfying node strictly below (any set).

        ``below[x]`` = some satisfying ``y ≤ x`` exists (prefix-OR along every axis); a
        satisfying ``x`` is minimal iff ``below[x − e_a]`` is false for every ``a`` with
        ``x_a > 0`` (every ``y ≤ x, y ≠ x`` lies below one of those). ``closed``: the set
        is upward-closed (Flash's), so ``below`` is the set itself.
        """
        mins = minimal_grid(sat_grid, closed=closed).reshape(-1)[self._grid]
        return [tuple(n) for n in self.nodes[mins].tolist()]

    def _minimal(self, sat: np.ndarray) -> list[tuple[int, ...]]:
        """Satisfying nodes (boolean per node, in node order) with none strictly below."""
        grid = np.zeros(self.heights, dtype=bool).reshape(-1)
        grid[self._grid] = sat
        return self._minimal_grid(grid.reshape(self.heights))

    def _score_from(self, node: tuple[int, ...], utility: Any, crit: Criterion, budget: int,
                    st: tuple[int, int, int, int] | None) -> float:
        """Score a minimal node from the counts of its check when they were kept."""
        if st is not None and utility in ("discernibility", "avg_group_size", "aecs",
                                          "nm_precision"):
            sup, kept, sq, _ = st
            if utility == "discernibility":
                return float(sq + sup * self.n_rows)
            if utility == "aecs":
                return self.n_rows / (kept + (1 if sup > 0 else 0))
            if utility == "nm_precision":
                return self._nm_precision(node, sup)
            return float((self.n_rows - sup) / max(kept, 1))
        return self._score(node, utility, crit, budget, None)

    def _optimum(self, sat_grid: np.ndarray, minimal: list[tuple[int, ...]], scores: dict,
                 best: tuple[int, ...], utility: Any, crit: Criterion, budget: int,
                 engine: _RollUp | None) -> tuple[tuple[int, ...], int]:
        """Find the satisfying node minimizing (utility, height, lexicographic): ARX's optimum.

        Pruning is exact: the measures that never decrease upwards return the best minimal
        node; ``discernibility`` and ``aecs`` drop the up-set of a node whose bound exceeds
        it (module docstring); ``loss``, ``nm_precision`` and ``nm_entropy`` are searched
        by :meth:`_bounded` instead.
        """
        if not callable(utility) and (budget == 0 or utility in _NODE_ONLY):
            return best, 0   # the measure only grows upwards: the optimum is minimal
        key = (scores[best], sum(best), best)
        mins = set(minimal)
        sat_idx = np.flatnonzero(sat_grid.reshape(-1)[self._grid])
        n = 0
        pruned = np.zeros(self.heights, dtype=bool)
        for i in sat_idx:
            node = tuple(int(x) for x in self.nodes[i])
            if pruned[node]:
                continue
            bound = None
            if utility in ("discernibility", "aecs") and engine is not None:
                check, (sup, kept, sq, b) = engine.check(node, budget=self.n_rows, bound=True)
                if utility == "discernibility":
                    score, bound = float(sq + sup * self.n_rows), float(b)
                else:   # AECS(Y) ≥ n / #classes(Y) ≥ n / #classes(node) for Y ⪰ node
                    score = self.n_rows / (kept + (1 if sup > 0 else 0))
                    bound = self.n_rows / check.n_groups
                n += 0 if node in mins else 1
            elif node in mins:
                score = scores[node]
            else:
                score = self._score(node, utility, crit, budget, None)
                n += 1
            if bound is not None and (bound > key[0] or (bound == key[0]
                                                         and sum(node) + 1 > key[1])):
                pruned[tuple(slice(x, None) for x in node)] = True
            if (score, sum(node), node) < key:
                key = (score, sum(node), node)
                scores[node] = score
        return key[2], n

    def _score(self, node: tuple[int, ...], utility: Any, crit: Criterion, budget: int,
               res: NodeCheck | None) -> float:
        if callable(utility):
            return float(utility(node, self.release(node)))
        if utility in _NODE_ONLY or (budget == 0 and utility in _NODE_BOUND):
            return float(self._node_scores(np.asarray([node]), utility)[0])
        sizes, kept, codes = self._classes(node, crit, budget, utility)
        if utility in ("loss", "nm_entropy", "nm_precision", "aecs"):
            return self._quality(node, utility, sizes, kept, codes)
        sup = int(sizes[~kept].sum())
        sizes = sizes[kept]
        if utility == "discernibility":
            return float(np.sum(sizes.astype(np.float64) ** 2) + sup * self.n_rows)
        return float(sizes.sum() / max(len(sizes), 1))

    # ------------------------------------------------------------------ quality models
    def _quality_tables(self) -> dict[str, list[np.ndarray]]:
        """Per attribute and level: ARX's domain shares, entropy and loss bound (built once).

        ``leaves[a][l][c]``: hierarchy rows under generalized code ``c`` of level ``l``; ARX's
        domain share (``DomainShareMaterialized``) is ``leaves / dsize[a]``, the hierarchy's
        rows. ``ent[a][l]`` = Σ_v c(v)·log2(c(v) / c(gen_l v)) over the level-0 values (≤ 0;
        ``MetricMDNUEntropyPrecomputed``); ``gen[a][l]`` = Σ_rows leaves, the integer
        x·D of the loss of attribute ``a`` with nothing suppressed (x = Σ_rows share), so
        that the loss is normalized and rounded exactly (:meth:`_loss_norm`).
        """
        if self._qtab is None:
            share, ent, gen, dsize = [], [], [], []
            for h in self.hierarchies:
                rows = h.hierarchy.rows
                cnt = np.bincount(h.codes, weights=self._row_w if self._row_w.size else None,
                                  minlength=h.domain_size).astype(np.float64)
                card0 = h.cardinality(0)
                a0 = np.bincount(h.maps[0], weights=cnt, minlength=card0)
                first0 = np.zeros(card0, dtype=np.int64)
                first0[h.maps[0][::-1]] = np.arange(h.domain_size - 1, -1, -1)
                present = a0 > 0
                sh_a, en_a, ge_a = [], [], []
                for lev in range(h.height):
                    per: dict[str, int] = {}
                    for r in rows:
                        per[r[lev]] = per.get(r[lev], 0) + 1
                    sh = np.array([per.get(lab, 0) for lab in h.labels[lev]],
                                  dtype=np.float64)       # leaves under each code
                    b = np.bincount(h.maps[lev], weights=cnt, minlength=h.cardinality(lev))
                    bv = b[h.maps[lev][first0]]
                    x = a0[present]
                    en_a.append(float(np.sum(x * (np.log(x / bv[present]) / math.log(2)))))
                    sh_a.append(sh)
                    ge_a.append(int(round(float(np.sum(cnt * sh[h.maps[lev]])))))
                share.append(sh_a)
                ent.append(en_a)
                gen.append(ge_a)
                dsize.append(len(rows))
            self._qtab = {"leaves": share, "ent": ent, "gen": gen, "dsize": dsize}
        return self._qtab

    def _loss_norm(self, a: int, xd: int) -> float:
        """ARX's ``normalizeGeneralized``, exactly: (x − n/D)/(n − n/D) ≥ 0, rounded down.

        With ``xd`` = x·D (an integer: rows × hierarchy leaves) the ratio is
        (xd − n)/(n·D − n), floored to 10 decimals in integers (ARX's ``Metric.round``) — the
        floor of a float quotient would drop a whole 10⁻¹⁰ whenever rounding lands just
        below an exact multiple (n/D is inexact for D = 3). 0 when D = 1.
        """
        n = int(self.n_rows)
        den = n * self._quality_tables()["dsize"][a] - n
        if den <= 0:
            return 0.0
        return (max(int(xd) - n, 0) * _ARX_SCALE // den) / _ARX_FACTOR

    def _entropy(self, node: Sequence[int], extra: Sequence[float] | None = None) -> float:
        """ARX's non-uniform entropy of ``node`` (``extra``: suppression terms, each ≤ 0)."""
        ent = self._quality_tables()["ent"]
        total = 0.0
        for a, lev in enumerate(node):
            total += _entropy_term(ent[a][lev] + (0.0 if extra is None else extra[a]))
        return total

    def _nm_precision(self, node: Sequence[int], sup: int) -> float:
        """ARX's ``MetricMDNMPrecision``: arithmetic mean of ((n − S)·l/H + S)/n."""
        n = float(self.n_rows)
        total = 0.0
        for lev, h in zip(node, self.heights, strict=True):
            total += _nm_precision_term(n, sup, lev / (h - 1) if h > 1 else 0.0, len(node))
        return total

    def _node_tables(self, utility: str) -> list[np.ndarray]:
        """Per attribute, each level's term of the node-only value of ``utility`` (cached).

        Summed over the attributes (``loss``: multiplied, then − 1) in attribute order they
        give :meth:`_node_scores`, the same operations in the same order as the per-node
        formulas (:meth:`_entropy`, :meth:`_nm_precision` with S = 0, :func:`_geometric`).
        """
        if utility not in self._ntab:
            d, n = len(self.heights), float(self.n_rows)
            rel = [np.array([lev / (h - 1) if h > 1 else 0.0 for lev in range(h)])
                   for h in self.heights]
            if utility == "height":
                tabs = [np.arange(h, dtype=np.float64) for h in self.heights]
            elif utility == "precision":
                tabs = rel
            elif utility == "nm_precision":
                tabs = [np.array([_nm_precision_term(n, 0, v, d) for v in r]) for r in rel]
            elif utility in ("entropy", "nm_entropy"):
                tabs = [np.array([_entropy_term(v) for v in e])
                        for e in self._quality_tables()["ent"]]
            else:   # loss: each attribute's factor of the geometric mean, nothing suppressed
                gen = self._quality_tables()["gen"]
                tabs = [np.array([_geo_factor(self._loss_norm(a, x), d) for x in gen[a]])
                        for a in range(d)]
            self._ntab[utility] = tabs
        return self._ntab[utility]

    def _node_scores(self, nodes: np.ndarray, utility: str) -> np.ndarray:
        """Node-only values of ``utility``, one per row of ``nodes`` (int array, one column per QI).

        The score itself for ``height``, ``precision`` (−Prec) and ``entropy``; for
        ``loss``, ``nm_precision`` and ``nm_entropy`` the score with nothing suppressed —
        their score at 0 % suppression, and an exact lower bound of it with suppression (a
        suppressed cell costs at least its generalization). Bit for bit the per-node
        formulas' values.
        """
        tabs = self._node_tables(utility)
        nodes = np.asarray(nodes, dtype=np.int64).reshape(-1, len(self.heights))
        if utility == "loss":
            r = np.ones(nodes.shape[0])
            for a, tab in enumerate(tabs):
                r *= tab[nodes[:, a]]
            return r - 1.0
        total = np.zeros(nodes.shape[0])
        for a, tab in enumerate(tabs):
            total += tab[nodes[:, a]]
        return -(1.0 - total / len(tabs)) if utility == "precision" else total

    def _classes(self, node: tuple[int, ...], crit: Criterion | None, budget: int,
                 utility: Any = None) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Return the classes of ``node``: sizes, kept (not suppressed), generalized codes.

        With a budget, the classes ``crit`` suppresses are suppressed (:meth:`_kept`,
        whatever their number; ``utility`` orders equal-size classes as ARX does).
        """
        from .._kernels.generalize import weighted_first

        g, n = self.cell_groups(node)
        sizes, first = weighted_first(kernel_array(g, np.int32), self._cw, n)
        kept = np.ones(n, dtype=bool)
        if budget > 0 and crit is not None:
            kept = self._kept(node, crit, g, n, sizes, first, self.n_rows, utility)
        codes = [h.maps[lev][self._cq[a][first]]
                 for a, (h, lev) in enumerate(zip(self.hierarchies, node, strict=True))]
        return np.asarray(sizes, dtype=np.int64), kept, codes

    def _quality(self, node: tuple[int, ...], measure: str, sizes: np.ndarray,
                 kept: np.ndarray, codes: list[np.ndarray]) -> float:
        """Score ``node`` by an ARX quality model from its classes (module docstring)."""
        from .._kernels.lattice import quality_terms

        sup = int(sizes[~kept].sum())
        if measure == "aecs":
            return self.n_rows / (int(kept.sum()) + (1 if sup > 0 else 0))
        if measure == "nm_precision":
            return self._nm_precision(node, sup)
        tab = self._quality_tables()
        kept_w = np.where(kept, sizes, 0).astype(np.float64)
        sup_w = np.where(kept, 0, sizes).astype(np.float64)
        terms = [quality_terms(kernel_array(codes[a], np.int64), kept_w, sup_w,
                               kernel_array(tab["leaves"][a][lev], np.float64), float(sup))
                 for a, lev in enumerate(node)]
        if measure == "loss":      # t[0] = Σ kept rows × leaves: an integer, exact in float64
            return _geometric([self._loss_norm(a, round(t[0]) + sup * tab["dsize"][a])
                               for a, t in enumerate(terms)])
        return self._entropy(node, [t[1] for t in terms])

    def precision(self, node: Any) -> float:
        """Sweeney's precision 1 − (1/|QI|) Σ_A level_A / (height_A − 1) (1 = no loss)."""
        return -float(self._node_scores(np.asarray([self._node(node)]), "precision")[0])

    def utility(self, node: Any, measure: str = "discernibility", *, predicate: Any = None,
                suppression: float = 0.0) -> float:
        """Return a utility measure of ``node`` (see the module docstring for each formula).

        Without ``suppression`` nothing is suppressed. With ``suppression`` (and the
        ``predicate`` it applies to), the classes failing ``predicate`` are suppressed as in
        the search — whether or not they fit the budget — and scored as ARX scores
        suppressed rows. ``"precision"`` is returned as Prec (maximized); every other
        measure as the value the search minimizes.
        """
        check_choice(measure, "measure", UTILITIES)
        node = self._node(node)
        if measure == "precision":
            return self.precision(node)
        if suppression:
            if predicate is None:
                raise InputError("predicate: suppression needs the criterion whose failing "
                                 "classes are suppressed")
            crit = as_criterion(predicate)
            require_sensitive(crit, self.sensitive)
            budget = max(self._budget(crit, suppression), 1)
        else:
            crit, budget = criteria_from(min_size=1), 0
        return self._score(node, measure, crit, budget, None)

    def score_counts(self, node: Any, measure: str, *, suppressed: int = 0,
                     kept_classes: int = 0, sum_sq: int = 0,
                     kept_leaves: Sequence[int] | None = None,
                     suppressed_entropy: Sequence[float] | None = None) -> float:
        """Score ``node`` from counts of its classes, as the search scores it (no regrouping).

        For callers that count the classes of many nodes themselves
        (:mod:`fastpriv.frontier`): the value the search minimizes (``"precision"``: −Prec),
        bit for bit, from S = ``suppressed`` people, K = ``kept_classes``, Σ_kept n_g² =
        ``sum_sq``; ``"loss"`` also needs ``kept_leaves[a]`` = Σ_kept n_g · (rows of
        attribute a's hierarchy under the class's generalized value), ``"nm_entropy"``
        with S > 0 ``suppressed_entropy[a]`` = Σ_c s_c·log2(s_c/S) over the generalized
        values c of the suppressed people (module docstring).
        """
        check_choice(measure, "measure", UTILITIES)
        node = self._node(node)
        n = self.n_rows
        if measure == "height":
            return float(sum(node))
        if measure == "precision":
            return -self.precision(node)
        if measure == "entropy" or (measure == "nm_entropy" and not suppressed):
            return self._entropy(node)
        if measure == "nm_entropy":
            if suppressed_entropy is None or len(suppressed_entropy) != len(node):
                raise InputError("suppressed_entropy: one term per QI attribute is needed "
                                 "with suppressed people")
            return self._entropy(node, [float(x) for x in suppressed_entropy])
        if measure == "nm_precision":
            return self._nm_precision(node, int(suppressed))
        if measure == "loss":
            if kept_leaves is None or len(kept_leaves) != len(node):
                raise InputError("kept_leaves: one sum per QI attribute is needed for 'loss'")
            dsize = self._quality_tables()["dsize"]
            return _geometric([self._loss_norm(a, int(x) + int(suppressed) * dsize[a])
                               for a, x in enumerate(kept_leaves)])
        if measure == "discernibility":
            return float(int(sum_sq) + int(suppressed) * n)
        if measure == "aecs":
            return n / (int(kept_classes) + (1 if suppressed > 0 else 0))
        return float((n - int(suppressed)) / max(int(kept_classes), 1))

    # ------------------------------------------------------------------ chains
    def default_chain(self) -> list[tuple[int, ...]]:
        """Bottom to top, raising the attribute with the lowest relative level each step."""
        cur = list(self.bottom)
        chain = [tuple(cur)]
        while tuple(cur) != self.top:
            cands = [(cur[a] / max(h - 1, 1), a) for a, h in enumerate(self.heights)
                     if cur[a] < h - 1]
            a = min(cands)[1]
            cur[a] += 1
            chain.append(tuple(cur))
        return chain

    def chain_search(self, predicate: Any, chain: Sequence[Sequence[int]] | None = None, *,
                     check_minimal: bool = True, materialize: bool = True) -> ChainSearch:
        """Binary search for the lowest satisfying node on a chain (Martin et al. §3.4).

        Parameters
        ----------
        predicate : criterion, callable or list
            A monotone criterion (see :mod:`fastpriv.predicates`).
        chain : sequence of nodes, optional
            Increasing nodes (each componentwise ≥ the previous); default
            :meth:`default_chain` (a maximal chain, bottom to top).
        check_minimal : bool
            Also check the found node's direct predecessors to report whether it is
            minimal in the whole lattice.
        materialize : bool
            Build the :class:`Anonymized` release of the found node (``res.anonymized``).

        """
        t0 = time.perf_counter()
        crit = as_criterion(predicate)
        require_sensitive(crit, self.sensitive)
        nodes = [self._node(n) for n in (chain if chain is not None else self.default_chain())]
        if not nodes:
            raise InputError("chain is empty")
        for a, b in zip(nodes, nodes[1:], strict=False):
            if not all(x <= y for x, y in zip(a, b, strict=True)) or a == b:
                raise InputError(f"chain must be strictly increasing componentwise; {list(a)} "
                                 f"is followed by {list(b)}")
        lo, hi, found, n_checked = 0, len(nodes) - 1, None, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            n_checked += 1
            if self._check(nodes[mid], crit, 0).ok:
                found, hi = mid, mid - 1
            else:
                lo = mid + 1
        node = None if found is None else nodes[found]
        minimal, n_pred = None, 0
        if node is not None and check_minimal:
            minimal = True
            for a in range(len(node)):
                if node[a] > 0:
                    p = list(node)
                    p[a] -= 1
                    n_pred += 1
                    if self._check(tuple(p), crit, 0).ok:
                        minimal = False
                        break
        an = None
        res = ChainSearch(chain=tuple(nodes), node=node, criterion=crit.name,
                          n_checked=n_checked, minimal_in_lattice=minimal,
                          n_checked_predecessors=n_pred,
                          seconds={"total": time.perf_counter() - t0}, qi=self.qi,
                          params={"qi": list(self.qi), "criterion": crit.name,
                                  "check_minimal": bool(check_minimal)})
        if materialize and node is not None:
            an = self.anonymize(node, crit, info={"chain_search": res.to_dict()})
            object.__setattr__(res, "anonymized", an)
        return res

    # ------------------------------------------------------------------ output
    def anonymize(self, node: Any, predicate: Any = None, *, suppression: float = 0.0,
                  info: Mapping[str, Any] | None = None,
                  utility: str | None = None, suppressed: str = "drop") -> Anonymized:
        """Materialize ``node``: generalized QI columns, group ids and the release.

        With a suppression budget, rows of the groups ``predicate`` suppresses are
        suppressed: the groups failing its group-local parts, then for a risk criterion
        the smallest groups left until it holds (ARX's order; among equal sizes by the
        group's loss when ``utility="loss"``, as ARX orders them under its loss model, else
        by first row). ``suppressed="drop"`` (default) leaves them out of the release
        (group id −1, generalized values ``*``); ``suppressed="keep"`` publishes them as ARX
        does, every QI ``*`` and the sensitive value kept: one group of the release (merged
        with a class whose every QI is ``*`` already, the same published values), audited
        by ``predicate`` like any other — a release it fails states why in
        ``result.failure`` and is not published without ``allow_failing=True``.
        """
        from .._kernels.counting import DENSE_CELLS, count_pairs
        from .._kernels.generalize import weighted_first

        _check_suppressed(suppressed, suppression)
        node = self._node(node)
        g, n = self.cell_groups(node)
        keep_group = np.ones(n, dtype=bool)
        crit = None if predicate is None else as_criterion(predicate)
        if suppression:
            if crit is None:
                raise InputError("suppression needs the predicate")
            self._budget(crit, suppression)
            sizes, first = weighted_first(kernel_array(g, np.int32), self._cw, n)
            keep_group = self._kept(node, crit, g, n, sizes, first, self.n_rows, utility)
        row_group = g[self._row_cell]
        kept_row = keep_group[row_group]
        keep_star = suppressed == "keep" and not kept_row.all()
        # generalized codes per row and attribute
        attrs = []
        gen_cols = {}
        all_star = kept_row.copy()      # kept rows published with every QI '*'
        for a, h, lev in zip(self.qi, self.hierarchies, node, strict=True):
            codes = h.maps[lev][h.codes].astype(np.int32)
            labels = list(h.labels[lev])
            indptr, members = h.members(lev)
            if not kept_row.all():
                codes = np.where(kept_row, codes, -1).astype(np.int32)
            attrs.append(_star_attribute(a, h.domain, labels, indptr, members, codes)
                         if keep_star else
                         GeneralizedAttribute(name=a, domain=h.domain, labels=labels,
                                              member_indptr=indptr, members=members,
                                              codes=codes))
            dict_labels = labels + (["*"] if "*" not in labels else [])
            star = dict_labels.index("*")
            idx = np.where(codes >= 0, codes, star).astype(np.int32)
            all_star &= idx == star
            gen_cols[a] = pa.DictionaryArray.from_arrays(pa.array(idx),
                                                         pa.array(dict_labels, pa.string()))
        # group ids: dense over kept groups, in lexicographic order of generalized tuples
        new_id = np.full(n, -1, dtype=np.int64)
        n_kept = int(keep_group.sum())
        new_id[keep_group] = np.arange(n_kept)
        star_gid = -1
        if keep_star:   # the suppressed rows: one group, or the class already all '*'
            star_gid = int(new_id[row_group[np.argmax(all_star)]]) if all_star.any() else n_kept
            new_id[~keep_group] = star_gid
            n_kept = max(n_kept, star_gid + 1)
        gid = new_id[row_group]
        sens = self._sens_rows
        sel = np.flatnonzero(gid >= 0)
        w_sel = self._row_w if not self._row_w.size else kernel_array(self._row_w[sel], np.int64)
        indptr, codes, counts = count_pairs(kernel_array(gid[sel], np.int32),
                                            kernel_array(sens[sel], np.int32), w_sel,
                                            n_kept, len(self.values), DENSE_CELLS)
        sizes, first_sel = weighted_first(kernel_array(gid[sel], np.int32), w_sel, n_kept)
        first = sel[first_sel]
        keys = pa.table({a: gen_cols[a].take(pa.array(first)).dictionary_decode()
                         for a in self.qi})
        values_present = np.flatnonzero(np.bincount(codes, minlength=len(self.values)) > 0) \
            if codes.size else np.empty(0, np.int64)
        values = self.values
        if len(values_present) != len(self.values):  # suppression removed some values
            remap = np.full(len(self.values), -1, dtype=np.int32)
            remap[values_present] = np.arange(len(values_present), dtype=np.int32)
            codes = remap[codes]
            values = self.values.take(pa.array(values_present))
        row_group_out = gid.astype(np.int32)
        one_each = sel.size == len(gid) and self.input_weights is None
        rel = Release(indptr=indptr, codes=codes, counts=counts, sizes=sizes, values=values,
                      groups=keys, case=SVPI,
                      row_group=row_group_out if one_each else None,
                      sensitive_name=self.sensitive)
        star_failure = None
        if keep_star:
            star_failure = self._audit_star(crit, new_id[g], n_kept, star_gid,
                                            int(np.count_nonzero(~kept_row)))
        group_ids = self._expand(gid)
        gen_table = pa.table({a: self._expand_arrow(gen_cols[a]) for a in self.qi})
        if self.kept_rows is not None:
            attrs = [GeneralizedAttribute(name=x.name, domain=x.domain, labels=x.labels,
                                          member_indptr=x.member_indptr, members=x.members,
                                          codes=self._expand(x.codes).astype(np.int32))
                     for x in attrs]
        search = dict(info or {})
        search = search.get("search") or search.get("chain_search") or {}
        params = {"qi": list(self.qi), "sensitive": self.sensitive,
                  "criterion": None if crit is None else crit.name,
                  "suppression": float(suppression), "suppressed": suppressed}
        if self.weight is not None:
            params["weight"] = self.weight
        return LatticeAnonymized(
            release=rel, group_ids=group_ids, method="lattice", params=params,
            generalized=gen_table, attributes=tuple(attrs), row_weights=self.input_weights,
            node=tuple(int(x) for x in node),
            levels={a: int(lev) for a, lev in zip(self.qi, node, strict=True)},
            n_nodes=search.get("n_nodes"), n_checked=search.get("n_checked"),
            minimal_nodes=None if search.get("minimal") is None
            or search.get("strategy") == "bounded" else
            tuple(tuple(m) for m in search["minimal"]),
            fully_suppressed=tuple(a for a, h, lev in zip(self.qi, self.hierarchies, node,
                                                          strict=True)
                                   if h.cardinality(int(lev)) == 1 and h.domain_size > 1),
            suppressed=suppressed, n_suppressed_rows=int(np.count_nonzero(~kept_row)),
            suppressed_failure=star_failure)

    def _audit_star(self, crit: Criterion | None, g: np.ndarray, n: int, star: int,
                    n_star_rows: int) -> str | None:
        """Audit a release whose suppressed rows are kept as the group ``star`` of ``g``.

        ``g``: the published class of every cell (``n`` classes). The check is the one the
        search makes of a node (:meth:`_holds`), nothing suppressed; the reason names the
        ``*`` group when it fails a group-local part itself.
        """
        from .._kernels.generalize import weighted_first
        from ..predicates import AllOf

        if crit is None or self._holds(crit, g, n):
            return None
        sizes, _ = weighted_first(kernel_array(g, np.int32), self._cw, n)
        what = (f"the group with every QI '*' ({int(sizes[star]):,} people, {n_star_rows:,} "
                "suppressed rows kept with suppressed='keep')")
        parts = crit.parts if isinstance(crit, AllOf) else (crit,)
        rel = self._release(g, n)
        bad = [p.name for p in parts if getattr(p, "local", False) and hasattr(p, "group_ok")
               and not bool(p.group_ok(rel, self._q)[star])]  # type: ignore[attr-defined]
        if bad:
            return f"{what} fails {', '.join(bad)}"
        return f"with {what}, the release fails {crit.name}"

    def _expand(self, x: np.ndarray) -> np.ndarray:
        return expand_rows(x, self.kept_rows, self.n_input_rows)

    def _expand_arrow(self, arr: pa.Array) -> pa.Array:
        return expand_arrow(arr, self.kept_rows, self.n_input_rows)


def _check_suppressed(suppressed: str, suppression: float) -> None:
    """Check ``suppressed=``: ``"drop"`` or ``"keep"``, the latter only with suppression."""
    check_choice(suppressed, "suppressed", ("drop", "keep"))
    if suppressed == "keep" and not suppression:
        raise InputError("suppressed='keep' keeps the rows suppression= removes (CLI: "
                         "--suppressed keep, --suppression); it does nothing without "
                         "suppression")


def _star_attribute(name: str, domain: pa.Array, labels: list, indptr: np.ndarray,
                    members: np.ndarray, codes: np.ndarray) -> GeneralizedAttribute:
    """One attribute of a release keeping its suppressed rows (codes −1) as ``*``.

    Their code is a label ``*`` standing for the whole domain (the level's own ``*`` when
    it covers every value, else one more label), so the utility metrics read a kept
    suppressed row as published: any value.
    """
    d = len(domain)
    sizes = np.diff(np.asarray(indptr, dtype=np.int64))
    top = [i for i, lab in enumerate(labels) if lab == "*" and sizes[i] == d]
    if top:
        star = top[0]
    else:
        star = len(labels)
        labels = [*labels, "*"]
        indptr = np.append(np.asarray(indptr, dtype=np.int64), int(indptr[-1]) + d)
        members = np.concatenate([np.asarray(members), np.arange(d, dtype=np.asarray(
            members).dtype)])
    return GeneralizedAttribute(name=name, domain=domain, labels=labels, member_indptr=indptr,
                                members=members,
                                codes=np.where(codes >= 0, codes, star).astype(np.int32))


# ---------------------------------------------------------------------- entry points
def lattice_search(data: Any, *, qi: Sequence[str], sensitive: str | None = None,
                   hierarchies: Any = None, hierarchy_prefix: str | None = None,
                   predicate: Any = None, min_size: int | None = None, l: float | None = None,
                   l_kind: str = "distinct", c_l: float | None = None, t: float | None = None,
                   t_ordered: bool = False, alpha: float | None = None, c: Any = None,
                   k: int | None = None, knowledge_kind: str = "implications",
                   max_risk: float | None = None, max_avg_risk: float | None = None,
                   max_records_at_risk: float | None = None,
                   risk_threshold: float | None = None, max_uniqueness: float | None = None,
                   population: float | None = None, uniqueness_model: str | None = None,
                   utility: str | Callable = "discernibility",
                   suppression: float = 0.0, suppressed: str = "drop", strategy: str = "auto",
                   materialize: bool = True, nulls: str = "error", weight: str | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   objective: str = "minimal",
                   on_check: Callable[[SearchProgress], None] | None = None,
                   n_jobs: int | None = 1) -> LatticeSearch:
    """Full-domain generalization: all minimal nodes satisfying a monotone criterion.

    The criterion is the conjunction of ``predicate`` and the keyword criteria, the
    keywords of :func:`fastpriv.predicates.criteria_from` and of ``fastpriv anonymize``'s
    flags (``--max-avg-risk`` is ``max_avg_risk=``): ``min_size`` (k-anonymity: every
    group has ≥ ``min_size`` individuals; Sweeney 2002), ``l``/``l_kind``/``c_l``
    (ℓ-diversity; ``c_l`` is recursive (c,ℓ)-diversity's c), ``t``/``t_ordered``
    (t-closeness), ``alpha`` ((α,k)-anonymity), ``c``/``k``/``knowledge_kind``
    ((c,k)-safety, Martin et al. 2007: maximum disclosure < ``c`` against ``k`` basic
    implications, or ``k`` negated atoms with ``knowledge_kind="negations"``), and ARX's
    re-identification risks ``max_risk``, ``max_avg_risk``, ``max_records_at_risk`` (with
    ``risk_threshold``) and ``max_uniqueness`` (with ``population`` and
    ``uniqueness_model``; not monotone: every node is checked). Returns a
    :class:`LatticeSearch` whose ``.release`` / ``.group_ids`` / ``.anonymized`` are the
    best minimal node's release (the best satisfying node's with ``objective="optimal"``;
    see :meth:`GeneralizationLattice.search` for ``objective``, ``progress``, ``on_check``,
    ``n_jobs`` and ``suppressed``, whether rows ``suppression`` removes are dropped or kept
    as ``*``). ``weight`` names a multiplicity column (each row stands for that many
    identical people; see :class:`GeneralizationLattice`): the result is the expanded
    table's. ``hierarchy_prefix`` chooses the data set of a ``hierarchies`` folder holding
    several (ARX's ``data/``; see :class:`GeneralizationLattice`).

    Examples
    --------
    >>> import fastpriv as fp
    >>> res = fp.anonymize.lattice_search(fp.datasets.load_adult(),
    ...     qi=["age", "marital_status", "race", "sex"], sensitive="occupation",
    ...     min_size=10, l=3)
    >>> res.best in res.minimal
    True

    """
    crit = criteria_from(predicate=predicate, min_size=min_size, l=l, l_kind=l_kind, c_l=c_l,
                         t=t, t_ordered=t_ordered, alpha=alpha, c=c, k=k,
                         knowledge_kind=knowledge_kind, max_risk=max_risk,
                         max_avg_risk=max_avg_risk, max_records_at_risk=max_records_at_risk,
                         risk_threshold=risk_threshold, max_uniqueness=max_uniqueness,
                         population=population, uniqueness_model=uniqueness_model)
    lat = GeneralizationLattice(data, qi, sensitive, hierarchies, nulls=nulls, weight=weight,
                                hierarchy_prefix=hierarchy_prefix)
    return lat.search(crit, utility=utility, suppression=suppression, strategy=strategy,
                      materialize=materialize, progress=progress, objective=objective,
                      on_check=on_check, n_jobs=n_jobs, suppressed=suppressed)


def minimal_ck_safe(data: Any, *, qi: Sequence[str], sensitive: str, hierarchies: Any = None,
                    c: Any, k: int, knowledge_kind: str = "implications",
                    utility: str | Callable = "discernibility", method: str = "lattice",
                    chain: Sequence[Sequence[int]] | None = None, materialize: bool = True,
                    nulls: str = "error", weight: str | None = None,
                    hierarchy_prefix: str | None = None) -> LatticeSearch | ChainSearch:
    """Minimal (c,k)-safe full-domain generalizations (Martin et al. §3.4).

    ``method="lattice"`` (default): every ⪯-minimal node whose maximum disclosure against
    ``k`` pieces of knowledge (basic implications, or negated atoms with
    ``knowledge_kind="negations"``) is < ``c``, and the best by ``utility`` —
    Incognito/Flash with the (c,k)-safety check (Theorem 14 makes it monotone).
    ``method="chain"``: the paper's binary search along one chain (``chain`` or the default
    diagonal chain), O(log height) checks, minimal on that chain. ``weight`` names a
    multiplicity column and ``hierarchy_prefix`` the data set of a ``hierarchies`` folder
    (see :class:`GeneralizationLattice`). The criterion is (c,k)-safety alone; for its
    conjunction with others pass them to :func:`lattice_search` (``c=``, ``k=`` and the
    rest).
    """
    from ..predicates import CKSafety

    check_choice(method, "method", ("lattice", "chain"))
    check_choice(knowledge_kind, "knowledge_kind", ("implications", "negations"))
    crit = CKSafety(c, k, knowledge_kind)
    lat = GeneralizationLattice(data, qi, sensitive, hierarchies, nulls=nulls, weight=weight,
                                hierarchy_prefix=hierarchy_prefix)
    if method == "chain":
        return lat.chain_search(crit, chain, materialize=materialize)
    return lat.search(crit, utility=utility, materialize=materialize)
