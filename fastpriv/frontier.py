"""The privacy–utility frontier of full-domain generalization: risk and loss of every node.

A generalization lattice (:class:`~fastpriv.anonymize.lattice.GeneralizationLattice`)
offers many releases that meet a criterion; the lattice search returns one. This module
measures **all of them**: for every node that satisfies the criterion (under the same
suppression budget as the search), the re-identification risk of the release it publishes
and its information loss, and the **Pareto frontier** — the nodes no other satisfying node
beats on both. A node X *dominates* Y when risk(X) ≤ risk(Y) and loss(X) ≤ loss(Y), one of
them strictly; the frontier is the set of undominated nodes (equal points are all kept).

Per node, on the records it publishes (suppressed classes are left out of a release, so the
risk is the risk of the published table, exactly what :func:`fastpriv.risk.audit` measures
on it):

* highest prosecutor risk 1/min_j f_j and average prosecutor risk K/n' (K kept classes,
  n' kept people; El Emam 2013, ARX ``RiskModelSampleSummary``);
* with a population size N, the estimated population uniques of the kept class-size
  histogram (:func:`fastpriv.risk.population_uniques`: Dankar et al.'s rule or one model),
  as people and as a share of N;
* the loss: the lattice's quality model ``utility`` as the search scores it (ARX's
  ``MetricMDNMLoss`` by default; ``precision`` as ARX's 1 − Prec), bit for bit
  (:meth:`~fastpriv.anonymize.lattice.GeneralizationLattice.score_counts`).

The **chosen** node is the one ``fastpriv anonymize --method lattice`` (and
:func:`~fastpriv.anonymize.lattice_search`) returns with the same criterion, suppression,
utility and objective: the best minimal node by (loss, height, levels), or with
``objective="optimal"`` the best satisfying node — which is the best minimal node whenever
nothing is suppressed or the measure depends on the node alone, as in the search.

How: one kernel (:func:`fastpriv._kernels.frontier.lattice_node_stats`) visits every node
depth first and rolls each node's classes up from its parent's (one attribute one level
up), so the table is grouped once, at the bottom, and every other node costs its parent's
number of classes. Under k-anonymity (``min_size``, ``max_risk``) the kernel also decides
every node under the suppression budget; any other criterion is decided by the lattice's
own search (its satisfying set), and with a suppression budget such a criterion's
suppressed classes are found per satisfying node by materializing it (exact, slower).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import check_choice, kernel_array
from .errors import InputError
from .results import Result, Witness, json_safe

__all__ = ["Frontier", "FrontierWitness", "frontier", "lattice_frontier", "pareto",
           "tree_order", "RISK_MEASURES", "RISK_LABELS", "UTILITY_LABELS",
           "DEFAULT_MIN_SIZE"]

#: Risk measures a frontier may be drawn against (the keys of :func:`fastpriv.risk.audit`).
RISK_MEASURES = ("prosecutor_avg", "prosecutor_max", "population_uniques")
#: k-anonymity's k when no criterion is given (every published class holds ≥ 2 people).
DEFAULT_MIN_SIZE = 2
#: What each risk measure is, in words.
RISK_LABELS = {"prosecutor_avg": "average prosecutor risk",
               "prosecutor_max": "highest prosecutor risk",
               "population_uniques": "estimated population uniques (share of the population)"}
#: What each loss (the lattice's quality models) is, in words.
UTILITY_LABELS = {"loss": "information loss (ARX's loss model)",
                  "entropy": "non-uniform entropy",
                  "nm_entropy": "non-uniform entropy with suppression",
                  "nm_precision": "precision loss with suppression",
                  "precision": "precision loss (1 − Prec)", "height": "generalization height",
                  "discernibility": "discernibility", "aecs": "average class size",
                  "avg_group_size": "average group size"}
_MODELS = ("dankar", "pitman", "zayatz", "snb")
#: Hash whole tuples of codes even where one 62-bit key per class would do (tests set it).
_TUPLES = False


def _fmt_node(node: Sequence[int]) -> str:
    return "(" + ",".join(str(int(x)) for x in node) + ")"


@dataclass(frozen=True, eq=False)
class FrontierWitness(Witness):
    """The chosen node: its levels, risk and loss, and whether the frontier holds it.

    ``dominated_by`` is, for a chosen node off the frontier, the frontier node of least
    loss among those at most as risky and losing at most as much (``None`` on it).
    """

    node: tuple[int, ...]
    levels: dict
    risk: float
    loss: float
    on_frontier: bool
    dominated_by: tuple[int, ...] | None = None
    dominated_risk: float | None = None
    dominated_loss: float | None = None

    def summary(self) -> str:
        """One line: the node, its risk and loss, on or off the frontier."""
        head = f"chosen node {_fmt_node(self.node)}: risk {_g(self.risk)}, loss {_g(self.loss)}"
        if self.on_frontier:
            return head + " — on the frontier"
        return (head + f" — dominated by {_fmt_node(self.dominated_by or ())} (risk "
                f"{_g(self.dominated_risk or 0.0)}, loss {_g(self.dominated_loss or 0.0)})")


@dataclass(frozen=True, eq=False)
class Frontier(Result):
    """Risk and loss of every satisfying node of a lattice, and their Pareto frontier.

    ``value`` is the number of nodes on the frontier; ``witness`` the chosen node
    (:class:`FrontierWitness`, ``None`` when no node satisfies). Per-node arrays are
    aligned with ``nodes`` (the satisfying nodes in the lattice's order: by height, then
    lexicographic).

    Attributes
    ----------
    qi : tuple of str
    heights : tuple of int
    criterion, utility, risk_measure, objective : str
    suppression : float
    nodes : int64 (P, d)
    risk_max, risk_avg : float64 (P,)
        Highest and average prosecutor risk of the published records.
    population_uniques : float64 (P,) or None
        Estimated population uniques (people; NaN where the model has no valid estimate),
        with a population size only.
    loss : float64 (P,)
        The quality model ``utility`` (``precision``: 1 − Prec).
    records, suppressed, classes, sample_uniques : int64 (P,)
        People published, people suppressed, published classes, classes of one person.
    minimal, on_frontier : bool (P,)
    chosen : tuple or None
        The node the lattice search returns with the same parameters.
    n_nodes, n_rows : int
        Lattice size; people in the table.
    population_size : float or None
    uniqueness_model : str or None
    seconds : dict
    params : dict

    """

    qi: tuple[str, ...]
    heights: tuple[int, ...]
    criterion: str
    utility: str
    risk_measure: str
    objective: str
    suppression: float
    nodes: np.ndarray = field(repr=False)
    risk_max: np.ndarray = field(repr=False)
    risk_avg: np.ndarray = field(repr=False)
    population_uniques: np.ndarray | None = field(repr=False)
    loss: np.ndarray = field(repr=False)
    records: np.ndarray = field(repr=False)
    suppressed: np.ndarray = field(repr=False)
    classes: np.ndarray = field(repr=False)
    sample_uniques: np.ndarray = field(repr=False)
    minimal: np.ndarray = field(repr=False)
    on_frontier: np.ndarray = field(repr=False)
    chosen: tuple[int, ...] | None
    n_nodes: int
    n_rows: int
    population_size: float | None = None
    uniqueness_model: str | None = None
    seconds: dict = field(default_factory=dict, compare=False)
    params: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ answers
    @property
    def value(self) -> int:
        """The number of nodes on the frontier."""
        return int(self.on_frontier.sum())

    @property
    def n_satisfying(self) -> int:
        """Nodes satisfying the criterion (the points of the frontier's plot)."""
        return int(self.nodes.shape[0])

    @property
    def risk(self) -> np.ndarray:
        """The risk the frontier is drawn against (``risk_measure``), per node."""
        if self.risk_measure == "prosecutor_max":
            return self.risk_max
        if self.risk_measure == "prosecutor_avg":
            return self.risk_avg
        return self.population_uniques / self.population_size  # type: ignore[operator]

    @property
    def frontier_order(self) -> np.ndarray:
        """Indices of the frontier's nodes, by increasing risk (then loss, then node)."""
        idx = np.flatnonzero(self.on_frontier)
        r = _risk_key(self.risk[idx])
        return idx[np.lexsort((np.arange(idx.size), self.loss[idx], r))]

    @property
    def chosen_index(self) -> int | None:
        """Index of the chosen node in ``nodes`` (``None`` when no node satisfies)."""
        if self.chosen is None:
            return None
        hit = np.flatnonzero((self.nodes == np.asarray(self.chosen)).all(axis=1))
        return int(hit[0])

    @property
    def witness(self) -> FrontierWitness | None:
        """The chosen node (see :class:`FrontierWitness`)."""
        i = self.chosen_index
        if i is None:
            return None
        risk, loss = float(self.risk[i]), float(self.loss[i])
        dom = None
        if not self.on_frontier[i]:
            r = _risk_key(self.risk)
            cand = np.flatnonzero(self.on_frontier & (r <= r[i]) & (self.loss <= self.loss[i]))
            j = int(cand[np.lexsort((r[cand], self.loss[cand]))[0]])
            dom = (tuple(int(x) for x in self.nodes[j]), float(self.risk[j]),
                   float(self.loss[j]))
        return FrontierWitness(node=self.chosen, levels=dict(zip(self.qi, self.chosen,
                                                                 strict=True)),
                               risk=risk, loss=loss, on_frontier=bool(self.on_frontier[i]),
                               dominated_by=None if dom is None else dom[0],
                               dominated_risk=None if dom is None else dom[1],
                               dominated_loss=None if dom is None else dom[2])

    def point(self, i: int) -> dict[str, Any]:
        """Everything measured at node ``i`` (JSON-ready)."""
        pu = None if self.population_uniques is None else float(self.population_uniques[i])
        return json_safe({
            "node": [int(x) for x in self.nodes[i]],
            "risk_max": float(self.risk_max[i]), "risk_avg": float(self.risk_avg[i]),
            "population_uniques": pu,
            "population_uniques_share": None if pu is None or self.population_size is None
            else pu / self.population_size,
            "loss": float(self.loss[i]), "records": int(self.records[i]),
            "suppressed": int(self.suppressed[i]), "classes": int(self.classes[i]),
            "sample_uniques": int(self.sample_uniques[i]),
            "minimal": bool(self.minimal[i]), "on_frontier": bool(self.on_frontier[i]),
            "chosen": self.chosen is not None and tuple(int(x) for x in self.nodes[i])
            == self.chosen})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: parameters, the chosen node, the frontier in order and every point."""
        from .anonymize.lattice import ARX_MODELS

        w = self.witness
        return json_safe({
            "value": self.value, "params": self.params, "qi": list(self.qi),
            "heights": list(self.heights), "criterion": self.criterion,
            "utility": self.utility, "arx_model": ARX_MODELS.get(self.utility),
            "risk_measure": self.risk_measure, "objective": self.objective,
            "suppression": self.suppression, "n_nodes": self.n_nodes,
            "n_rows": self.n_rows, "n_satisfying": self.n_satisfying,
            "n_frontier": self.value, "population_size": self.population_size,
            "uniqueness_model": self.uniqueness_model,
            "chosen": None if w is None else w.to_dict(),
            "frontier": [[int(x) for x in self.nodes[i]] for i in self.frontier_order],
            "points": [self.point(i) for i in range(self.n_satisfying)],
            "seconds": dict(self.seconds)})

    # ------------------------------------------------------------------ text
    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Headers and rows of the frontier (by increasing risk) for a text table."""
        heads = ["node", "highest risk", "average risk"]
        if self.population_uniques is not None:
            heads.append("population uniques")
        heads += ["loss", "suppressed", "classes", ""]
        rows = []
        for i in self.frontier_order:
            row: list[Any] = [_fmt_node(self.nodes[i]), _g(self.risk_max[i]),
                              _g(self.risk_avg[i])]
            if self.population_uniques is not None:
                pu = self.population_uniques[i]
                row.append("no estimate" if not math.isfinite(pu) else f"{pu:,.0f}")
            row += [_g(self.loss[i]), int(self.suppressed[i]), int(self.classes[i]),
                    "chosen" if tuple(int(x) for x in self.nodes[i]) == self.chosen else ""]
            rows.append(row)
        return heads, rows

    def headline(self) -> str:
        """One sentence: nodes, satisfying nodes, frontier, axes."""
        sup = (f" with at most {100 * self.suppression:.3g}% of the people suppressed"
               if self.suppression else "")
        return (f"Privacy–utility frontier: {self.n_satisfying:,} of {self.n_nodes:,} nodes "
                f"satisfy {self.criterion}{sup}; {self.value:,} are on the frontier of "
                f"{RISK_LABELS[self.risk_measure]} against {UTILITY_LABELS[self.utility]}.")

    def summary(self) -> str:
        """Return the headline, the frontier as a text table, and the chosen node."""
        lines = [self.headline()]
        if self.n_satisfying == 0:
            return lines[0] + "\nNo node satisfies the criterion (not even the top)."
        heads, rows = self.table()
        widths = [max(len(h), *(len(str(r[j])) for r in rows)) for j, h in enumerate(heads)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths).rstrip())
        for r in rows:
            lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths,
                                                                   strict=True)).rstrip())
        w = self.witness
        if w is not None:
            lines.append(f"Chosen by the lattice search ({self.objective}, {self.utility}): "
                         + w.summary() + ".")
        return "\n".join(lines)


def _g(x: float) -> str:
    """Four significant digits, positional (0.00002211, never 2.211e-05)."""
    if not math.isfinite(x):
        return "no estimate"
    return np.format_float_positional(float(x), precision=4, fractional=False, trim="-")


def _risk_key(r: np.ndarray) -> np.ndarray:
    """Risks for comparison: a missing estimate (NaN) is worse than any number."""
    return np.where(np.isnan(r), np.inf, r)


# ---------------------------------------------------------------------- pure helpers
def pareto(risk: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Return which points no other point dominates on (risk, loss), both minimized.

    Y dominates X when risk(Y) ≤ risk(X) and loss(Y) ≤ loss(X), one strictly; equal points
    do not dominate each other. NaN risk counts as +∞. O(P log P).
    """
    r = _risk_key(np.asarray(risk, dtype=np.float64))
    lo = np.asarray(loss, dtype=np.float64)
    order = np.lexsort((lo, r))
    out = np.zeros(r.shape[0], dtype=bool)
    best_before = math.inf      # least loss over points of strictly smaller risk
    i = 0
    while i < order.size:
        j = i
        while j < order.size and r[order[j]] == r[order[i]]:
            j += 1
        group_min = lo[order[i]]
        for p in order[i:j]:
            out[p] = lo[p] == group_min and lo[p] < best_before
        best_before = min(best_before, group_min)
        i = j
    return out


def _sizes_k(crit: Any) -> int | None:
    """Return k when ``crit`` is k-anonymity alone (or a conjunction of such parts)."""
    from .predicates import AllOf, HighestRisk, KAnonymity

    parts = crit.parts if isinstance(crit, AllOf) else (crit,)
    if all(type(p) in (KAnonymity, HighestRisk) for p in parts):
        return max(int(p.k) for p in parts)
    return None


def _budget(lat: Any, suppression: Any) -> int:
    """Suppressed people allowed (which criteria take a budget: the lattice search says)."""
    if isinstance(suppression, bool) or not isinstance(suppression, (int, float)) or \
            not 0.0 <= float(suppression) < 1.0:
        raise InputError(f"suppression must be a fraction in [0, 1), got {suppression!r}")
    return int(math.floor(float(suppression) * lat.n_rows))


def tree_order(heights: Sequence[int], cards0: Sequence[int]) -> np.ndarray:
    """Attribute order of the kernel's spanning tree: most codes at level 0 first.

    A node's parent lowers the attribute raised last; with the attributes that merge the
    most classes first, parents keep them generalized and have few classes.
    """
    key = [(-(math.log2(max(c, 1)) if h > 1 else -1.0), a)
           for a, (h, c) in enumerate(zip(heights, cards0, strict=True))]
    return np.array([a for _, a in sorted(key)], dtype=np.int64)


def _kernel_inputs(lat: Any) -> dict[str, np.ndarray]:
    """Return the lattice's rows, one-level maps and loss weights as the kernel's arrays."""
    hs = lat.hierarchies
    d = len(hs)
    hmax = max(lat.heights)
    codes = np.empty((hs[0].codes.shape[0], d), dtype=np.int32)
    step, leaves = [], []
    step_off = np.zeros((d, hmax), dtype=np.int64)
    leaf_off = np.zeros((d, hmax), dtype=np.int64)
    cards = np.ones((d, hmax), dtype=np.int64)
    ps = pl = 0
    for a, h in enumerate(hs):
        codes[:, a] = h.maps[0][h.codes]
        per_level: list[dict[str, int]] = [{} for _ in range(h.height)]
        for row in h.hierarchy.rows:
            for lev in range(h.height):
                per_level[lev][row[lev]] = per_level[lev].get(row[lev], 0) + 1
        for lev in range(h.height):
            cards[a, lev] = h.cardinality(lev)
            leaf_off[a, lev] = pl
            leaves.append(np.array([per_level[lev].get(x, 0) for x in h.labels[lev]],
                                   dtype=np.int64))
            pl += h.cardinality(lev)
            if lev + 1 < h.height:
                t = np.zeros(h.cardinality(lev), dtype=np.int32)
                t[h.maps[lev]] = h.maps[lev + 1]
                if not np.array_equal(t[h.maps[lev]], h.maps[lev + 1]):
                    raise InputError(f"hierarchies: in {h.name!r} a value of level {lev} "
                                     f"generalizes to several values of level {lev + 1}; "
                                     "the frontier needs every level to coarsen the one "
                                     "below (one parent per value)")
                step_off[a, lev] = ps
                step.append(t)
                ps += t.shape[0]
    w = lat.input_weights
    if w is None:
        weights = np.ones(codes.shape[0], dtype=np.int64)
    else:
        weights = np.asarray(w if lat.kept_rows is None else w[lat.kept_rows], dtype=np.int64)
    return {"codes": kernel_array(codes, np.int32), "weights": kernel_array(weights, np.int64),
            "step": kernel_array(np.concatenate(step) if step else np.zeros(1, np.int32),
                                 np.int32),
            "step_off": kernel_array(step_off, np.int64),
            "heights": kernel_array(lat.heights, np.int64),
            "order": kernel_array(tree_order(lat.heights, cards[:, 0]), np.int64),
            "leaves": kernel_array(np.concatenate(leaves), np.int64),
            "leaf_off": kernel_array(leaf_off, np.int64), "cards": kernel_array(cards, np.int64)}


def _population_size(population: Any, n: int) -> float | None:
    """Check ``population`` (a size N ≥ the table's people, or None)."""
    if population is None:
        return None
    if isinstance(population, bool) or not isinstance(population, (int, float, np.integer,
                                                                   np.floating)):
        raise InputError(f"population: a population size (a number of people) is needed, "
                         f"got {type(population).__name__}")
    big_n = float(population)
    if not math.isfinite(big_n) or big_n < n:
        raise InputError(f"population: the population size must be >= the {n:,} people of "
                         f"the table, got {population!r}")
    return big_n


def _criterion_of(crit: Any, lat: Any) -> Any:
    from .anonymize._input import require_sensitive
    from .predicates import as_criterion, criteria_from

    crit = criteria_from(min_size=DEFAULT_MIN_SIZE) if crit is None else as_criterion(crit)
    require_sensitive(crit, lat.sensitive)
    return crit


@dataclass
class _Counts:
    """Per satisfying node: what the risks and the loss are computed from."""

    suppressed: np.ndarray
    classes: np.ndarray
    min_kept: np.ndarray
    sum_sq: np.ndarray
    uniques: np.ndarray
    kept_leaves: np.ndarray
    sup_ent: np.ndarray
    hists: dict = field(default_factory=dict)   # index -> (sizes, counts), uniques > 0


def subtree_need(sat: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """Return, per spanning-tree position q and node y, whether y's subtree holds a ``sat`` node.

    The kernel reaches y by raising the attribute at position q of ``order``; its subtree
    is the box of nodes z with z_b = y_b for the attributes at positions < q and z_b ≥ y_b
    for the others: a suffix-OR of ``sat`` along the axes at positions ≥ q (exact for any
    satisfying set, monotone or not). Returns bool (d, N), nodes in C order of the grid.
    """
    cur = np.asarray(sat, dtype=bool)
    need = np.empty((cur.ndim, cur.size), dtype=bool)
    for q in range(cur.ndim - 1, -1, -1):
        ax = int(order[q])
        cur = np.flip(np.logical_or.accumulate(np.flip(cur, axis=ax), axis=ax), axis=ax)
        need[q] = cur.reshape(-1)
    return need


def _kernel_counts(lat: Any, k: int, budget: int, sat_grid: np.ndarray,
                   want_hist: bool) -> tuple[np.ndarray, _Counts, int]:
    """Run the kernel over the nodes whose subtrees hold a satisfying node.

    Returns the satisfying grid (``sat_grid``; under k-anonymity the kernel decides every
    visited node too, and must agree), the counts of every node in grid order (histograms
    keyed by grid position) and the rows rolled up.
    """
    from ._kernels.frontier import lattice_node_stats

    inp = _kernel_inputs(lat)
    flat = sat_grid.reshape(-1)
    mask = flat if want_hist else np.zeros(flat.shape[0], dtype=bool)
    need = subtree_need(sat_grid, inp["order"])
    (_, kept, sup, min_kept, sum_sq, uniques, ok, kept_leaves, sup_ent, hpos, hptr, hsize,
     hcount, visited) = lattice_node_stats(
        inp["codes"], inp["weights"], inp["step"], inp["step_off"], inp["heights"],
        inp["order"], np.int64(k), np.int64(budget), inp["leaves"], inp["leaf_off"],
        inp["cards"], kernel_array(mask, np.bool_), kernel_array(need, np.bool_), _TUPLES)
    counts = _Counts(sup, kept, min_kept, sum_sq, uniques, kept_leaves, sup_ent)
    for j, p in enumerate(hpos.tolist()):
        counts.hists[p] = (hsize[hptr[j]:hptr[j + 1]], hcount[hptr[j]:hptr[j + 1]])
    if k > 0 and not np.array_equal(ok, flat):     # k-anonymity: both decide every node
        raise AssertionError("the frontier kernel and the lattice search disagree on which "
                             f"nodes satisfy k-anonymity(k={k}) (budget {budget}): a bug")
    return sat_grid, counts, int(visited)


def _materialized_counts(lat: Any, crit: Any, suppression: float,
                         nodes: np.ndarray) -> _Counts:
    """Count each node's classes from its release (suppression decided by sensitive values)."""
    p, d = nodes.shape
    c = _Counts(*(np.zeros(p, dtype=np.int64) for _ in range(5)),
                kept_leaves=np.zeros((p, d), dtype=np.int64),
                sup_ent=np.zeros((p, d), dtype=np.float64))
    for i, node in enumerate(nodes.tolist()):
        sizes = np.asarray(lat.anonymize(node, crit, suppression=suppression).release.sizes,
                           dtype=np.int64)
        c.suppressed[i] = lat.n_rows - int(sizes.sum())
        c.classes[i] = sizes.shape[0]
        c.min_kept[i] = int(sizes.min())
        c.sum_sq[i] = int((sizes * sizes).sum())
        c.uniques[i] = int((sizes == 1).sum())
        if c.uniques[i]:
            c.hists[i] = np.unique(sizes, return_counts=True)
    return c


def _scores(lat: Any, nodes: np.ndarray, c: _Counts, utility: str, crit: Any,
            suppression: float, exact_classes: bool) -> np.ndarray:
    """Return the value the search minimizes, per node (from counts, or by the lattice)."""
    out = np.empty(nodes.shape[0], dtype=np.float64)
    for i, node in enumerate(nodes.tolist()):
        if exact_classes:
            out[i] = lat.score_counts(node, utility, suppressed=int(c.suppressed[i]),
                                      kept_classes=int(c.classes[i]),
                                      sum_sq=int(c.sum_sq[i]), kept_leaves=c.kept_leaves[i],
                                      suppressed_entropy=c.sup_ent[i])
        elif utility == "precision":
            out[i] = -lat.precision(node)
        else:
            out[i] = lat.utility(node, utility, predicate=crit, suppression=suppression)
    return out


def _population_estimates(c: _Counts, big_n: float, model: str) -> np.ndarray:
    """Estimated population uniques per node (0 without sample uniques; NaN: no estimate)."""
    from .risk import population_uniques

    out = np.zeros(c.uniques.shape[0], dtype=np.float64)
    for i, (size, count) in c.hists.items():
        est = population_uniques(size, count, big_n)[model]
        out[i] = math.nan if est is None else float(est)
    return out


def _chosen(nodes: np.ndarray, scores: np.ndarray, minimal: np.ndarray, objective: str,
            budget: int, utility: str) -> tuple[int, ...] | None:
    """Return the node the lattice search returns (its objective, tie-breaks, shortcut)."""
    if nodes.shape[0] == 0:
        return None
    every = objective == "optimal" and budget > 0 and utility not in ("height", "precision",
                                                                      "entropy")
    cand = np.arange(nodes.shape[0]) if every else np.flatnonzero(minimal)
    best = min(cand.tolist(), key=lambda i: (scores[i], int(nodes[i].sum()),
                                             tuple(int(x) for x in nodes[i])))
    return tuple(int(x) for x in nodes[best])


def lattice_frontier(lattice: Any, criterion: Any = None, *, utility: str = "loss",
                     suppression: float = 0.0, objective: str = "minimal",
                     population: float | None = None, uniqueness_model: str = "dankar",
                     risk_measure: str = "prosecutor_avg") -> Frontier:
    """Compute the privacy–utility frontier of an encoded lattice (see :func:`frontier`).

    ``criterion`` is any criterion the lattice search takes (default k-anonymity with
    k = :data:`DEFAULT_MIN_SIZE`).
    """
    from .anonymize.lattice import UTILITIES, GeneralizationLattice, minimal_grid

    t0 = time.perf_counter()
    if not isinstance(lattice, GeneralizationLattice):
        raise InputError(f"lattice: expected a GeneralizationLattice, got "
                         f"{type(lattice).__name__}")
    crit = _criterion_of(criterion, lattice)
    if not isinstance(utility, str):
        raise InputError("utility: the frontier scores every node by a built-in measure; "
                         f"one of {', '.join(UTILITIES)}")
    check_choice(utility, "utility", UTILITIES)
    check_choice(objective, "objective", ("minimal", "optimal"))
    check_choice(risk_measure, "risk_measure", RISK_MEASURES)
    check_choice(uniqueness_model, "uniqueness_model", _MODELS)
    big_n = _population_size(population, lattice.n_rows)
    if risk_measure == "population_uniques" and big_n is None:
        raise InputError("risk_measure='population_uniques' needs population= (the "
                         "population size N)")
    budget = _budget(lattice, suppression)
    k = _sizes_k(crit)
    seconds: dict[str, float] = {}
    t1 = time.perf_counter()     # the lattice's own search decides every node
    res = lattice.search(crit, utility="height", suppression=suppression, materialize=False)
    flat = np.zeros(int(np.prod(lattice.heights)), dtype=bool)
    flat[np.ravel_multi_index(tuple(lattice.nodes.T), lattice.heights)] = res.satisfying
    sat_grid = flat.reshape(lattice.heights)
    seconds["search"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    exact = k is not None or budget == 0
    if exact:
        sat_grid, full, visited = _kernel_counts(
            lattice, 0 if k is None else k, 0 if k is None else budget, sat_grid,
            big_n is not None)
    seconds["kernel"] = time.perf_counter() - t1
    grid_pos = np.ravel_multi_index(tuple(lattice.nodes.T), lattice.heights)
    idx = np.flatnonzero(sat_grid.reshape(-1)[grid_pos])
    nodes = np.ascontiguousarray(lattice.nodes[idx], dtype=np.int64)
    if exact:   # the kernel's counts are per grid position: take the satisfying nodes'
        gp = grid_pos[idx]
        counts = _Counts(*(getattr(full, f)[gp] for f in
                           ("suppressed", "classes", "min_kept", "sum_sq", "uniques",
                            "kept_leaves", "sup_ent")))
        counts.hists = {i: full.hists[p] for i, p in enumerate(gp.tolist())
                        if p in full.hists}
    else:
        visited = 0
        counts = _materialized_counts(lattice, crit, float(suppression), nodes)
    t1 = time.perf_counter()
    scores = _scores(lattice, nodes, counts, utility, crit, float(suppression), exact)
    loss = scores + 1.0 if utility == "precision" else scores
    minimal = minimal_grid(sat_grid).reshape(-1)[grid_pos[idx]]
    records = lattice.n_rows - counts.suppressed
    risk_max = 1.0 / np.maximum(counts.min_kept, 1)
    risk_avg = counts.classes / np.maximum(records, 1)
    pu = None if big_n is None else _population_estimates(counts, big_n, uniqueness_model)
    risk = {"prosecutor_max": risk_max, "prosecutor_avg": risk_avg}.get(risk_measure)
    if risk is None:
        risk = pu / big_n  # type: ignore[operator]
    on = pareto(risk, loss)
    chosen = _chosen(nodes, scores, minimal, objective, budget, utility)
    seconds["score"] = time.perf_counter() - t1
    seconds["total"] = time.perf_counter() - t0
    params = {"qi": list(lattice.qi), "sensitive": lattice.sensitive, "criterion": crit.name,
              "utility": utility, "suppression": float(suppression), "objective": objective,
              "risk_measure": risk_measure, "population_size": big_n,
              "uniqueness_model": uniqueness_model if big_n is not None else None,
              "rows_rolled_up": visited}
    return Frontier(qi=tuple(lattice.qi), heights=tuple(lattice.heights), criterion=crit.name,
                    utility=utility, risk_measure=risk_measure, objective=objective,
                    suppression=float(suppression), nodes=nodes, risk_max=risk_max,
                    risk_avg=risk_avg, population_uniques=pu, loss=loss,
                    records=np.asarray(records, dtype=np.int64),
                    suppressed=np.asarray(counts.suppressed, dtype=np.int64),
                    classes=np.asarray(counts.classes, dtype=np.int64),
                    sample_uniques=np.asarray(counts.uniques, dtype=np.int64),
                    minimal=minimal, on_frontier=on, chosen=chosen, n_nodes=lattice.n_nodes,
                    n_rows=int(lattice.n_rows), population_size=big_n,
                    uniqueness_model=uniqueness_model if big_n is not None else None,
                    seconds=seconds, params=params)


def frontier(data: Any, *, qi: Sequence[str], sensitive: str | None = None,
             hierarchies: Any = None, predicate: Any = None, min_size: int | None = None,
             l: float | None = None, l_kind: str = "distinct",  # noqa: E741 - the paper's ℓ
             c_l: float | None = None, t: float | None = None, t_ordered: bool = False,
             alpha: float | None = None, c: Any = None, k: int | None = None,
             knowledge_kind: str = "implications", max_risk: float | None = None,
             max_avg_risk: float | None = None, max_records_at_risk: float | None = None,
             risk_threshold: float | None = None, max_uniqueness: float | None = None,
             uniqueness_model: str = "dankar", utility: str = "loss",
             suppression: float = 0.0, objective: str = "minimal",
             population: float | None = None, risk_measure: str = "prosecutor_avg",
             nulls: str = "error", weight: str | None = None) -> Frontier:
    """Risk and loss of every generalization meeting a criterion, and their Pareto frontier.

    Parameters
    ----------
    data : table-like
        One row per individual (or per ``weight`` identical people).
    qi, sensitive, hierarchies, nulls, weight
        As :func:`fastpriv.anonymize.lattice_search` (``sensitive`` only for criteria that
        read it).
    predicate, min_size, l, l_kind, c_l, t, t_ordered, alpha, c, k, knowledge_kind
        The criterion, as :func:`fastpriv.predicates.criteria_from` builds it (the
        conjunction of those given); none given: k-anonymity with ``min_size`` =
        :data:`DEFAULT_MIN_SIZE`.
    max_risk, max_avg_risk, max_records_at_risk, risk_threshold, max_uniqueness
        ARX's risk criteria, as :func:`~fastpriv.predicates.criteria_from` reads them.
    uniqueness_model : {"dankar", "pitman", "zayatz", "snb"}
        Population-uniqueness model of the ``population_uniques`` column (and of
        ``max_uniqueness``).
    utility : str
        The loss: a quality model of :data:`fastpriv.anonymize.lattice.UTILITIES`
        (default ``"loss"``, ARX's ``MetricMDNMLoss``).
    suppression, objective
        As the lattice search: fraction of people that may be suppressed, and which
        node is chosen (``"minimal"``: the best minimal node; ``"optimal"``: the best
        satisfying node).
    population : float, optional
        Population size N: adds the estimated population uniques of each node.
    risk_measure : {"prosecutor_avg", "prosecutor_max", "population_uniques"}
        The risk the frontier is drawn against (all are reported).

    Returns
    -------
    Frontier
        ``.value`` = nodes on the frontier; ``.witness`` = the chosen node.

    Examples
    --------
    >>> import fastpriv as fp
    >>> f = frontier(fp.datasets.load_adult(), qi=["age", "marital_status", "race", "sex"],
    ...              min_size=10, suppression=0.02, population=1_000_000)
    >>> f.n_nodes, f.value >= 1, f.chosen is not None
    (72, True, True)
    >>> bool(f.on_frontier[f.risk_avg.argmin()] or f.risk_avg.min() == 0)
    True

    """
    from .anonymize.lattice import GeneralizationLattice
    from .predicates import criteria_from

    t0 = time.perf_counter()
    given = any(x is not None for x in (predicate, min_size, l, c_l, t, alpha, c, k, max_risk,
                                         max_avg_risk, max_records_at_risk, max_uniqueness))
    if not given and not t_ordered:
        crit = criteria_from(min_size=DEFAULT_MIN_SIZE)
    else:
        uni = max_uniqueness is not None
        crit = criteria_from(predicate=predicate, min_size=min_size, l=l, l_kind=l_kind,
                             c_l=c_l, t=t, t_ordered=t_ordered, alpha=alpha, c=c, k=k,
                             knowledge_kind=knowledge_kind, max_risk=max_risk,
                             max_avg_risk=max_avg_risk,
                             max_records_at_risk=max_records_at_risk,
                             risk_threshold=risk_threshold, max_uniqueness=max_uniqueness,
                             population=population if uni else None,
                             uniqueness_model=uniqueness_model if uni else None)
    lat = GeneralizationLattice(data, qi, sensitive, hierarchies, nulls=nulls, weight=weight)
    t1 = time.perf_counter()
    res = lattice_frontier(lat, crit, utility=utility, suppression=suppression,
                           objective=objective, population=population,
                           uniqueness_model=uniqueness_model, risk_measure=risk_measure)
    res.seconds["lattice"] = t1 - t0
    res.seconds["total"] = time.perf_counter() - t0
    return res
