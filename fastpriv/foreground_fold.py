"""The foreground-knowledge attack as a fold over groups: summaries that merge.

The attack (:func:`fastpriv.foreground.attack`, Wong et al.) mines the distributions
p(s : x) that best explain the whole release (one maximum-likelihood fit per (attribute
set, x) system), then computes every tuple's posterior with them. An engine runs it in
three passes, where the data lives:

1. **Cells.** The distinct (QI, sensitive) cells (their number depends on the QI domain,
   not on the groups) give the :class:`~fastpriv.foreground.MiningPlan` — the attacked
   values, the reliable signatures of every attribute set, the systems — equal to the
   plan of the whole release (only value totals and signature supports are read):
   :func:`prepare`.
2. **Systems.** Each set of complete groups packs every system over its groups
   (:func:`systems_part`: a :class:`~fastpriv._foreground_pack.SystemsPart` — counts per
   variable, i.e. per reliable signature, and the distinct group profiles); parts merge
   exactly, into the systems of the whole release in the same order, solved into the
   distributions of :func:`fastpriv.foreground.mine`, bit for bit: in this process
   (:meth:`ForegroundFold.solve`), or block of systems by block where the packs live
   (:meth:`ForegroundFold.solve_in_blocks`; the systems are independent), so that this
   process receives the counts and the solutions, not the profiles.
3. **Posteriors.** Each set of complete groups computes its tuples' worst posteriors with
   those distributions (:func:`attack_part`) into a :class:`ForegroundSummary`: counts,
   the largest posterior and its tuple, the ``max_items`` most exposed people. Summaries
   of disjoint groups merge (:meth:`ForegroundSummary.merge`) into
   :meth:`ForegroundSummary.from_attack` of the in-memory attack of the same rows.

A tuple is named by its group and QI values (ties in the order of
:attr:`fastpriv.rows.RowView.content_order`: QI values, group, sensitive value), not by a
row number: rows are numbered nowhere but in the process that holds the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from ._budget import MAX_SECONDS
from ._labels import FieldsKey
from .errors import InputError
from .results import Result, Witness, json_safe

__all__ = ["ForegroundFold", "ForegroundSummary", "ForegroundWitness", "attack_part",
           "block_solution", "block_summary", "prepare", "systems_part"]


@dataclass(frozen=True, eq=False)
class ForegroundWitness(Witness):
    """The most exposed tuple of a :class:`ForegroundSummary`, named by group and QI values.

    People of ``group`` with QI values ``signature`` hold ``value`` with probability
    ``posterior``, mined on ``attribute_set`` (None: the group's counts alone, n_x / N);
    ``problematic``: the posterior exceeds 1/r.
    """

    group: Any
    signature: dict
    posterior: float
    attribute_set: tuple | None
    value: Any
    problematic: bool

    def summary(self) -> str:
        """One line: the group, the QI values, the value and its posterior."""
        from .foreground import exposure

        sig = ", ".join(f"{a}={v}" for a, v in self.signature.items())
        return (f"in group {self.group!r}, people with {sig} have {self.value!r} with "
                f"p = {self.posterior:.4g} by {exposure(self.attribute_set)}")


@dataclass(frozen=True, eq=False)
class ForegroundSummary(Result):
    """The mergeable summary of a foreground attack (see the module notes).

    Attributes
    ----------
    r, threshold, tol : float
        The privacy parameter, 1/r and the relative slack (problematic: p > (1/r)(1 + tol)).
    n_rows, n_problematic : int
        People attacked, and those problematic (``value``).
    n_undefined : int
        Posteriors that could not be computed.
    max_posterior : float
        The largest posterior (0 for no attacked value in any group).
    witness : ForegroundWitness or None
        Where it is reached (ties in content order), None when nothing is exposed.
    worst : tuple of dict
        The ``max_items`` most exposed people (those of ``ForegroundAttack.worst``, named
        by group and QI values instead of row numbers): group, QI values, posterior,
        attribute set, value, problematic, and how many people the entry stands for.
    top : ForegroundWitness or None
        The witness (also :attr:`witness`).
    max_items : int
        People listed in ``worst`` at most.
    mined : fastpriv.foreground.MinedDistributions or None
        The distributions mined from the whole release (None in the summary of one part,
        before :meth:`ForegroundFold.finish`).

    """

    r: float
    threshold: float
    tol: float
    n_rows: int
    n_problematic: int
    n_undefined: int
    max_posterior: float
    top: ForegroundWitness | None
    worst: tuple
    max_items: int
    mined: Any
    _ranks: tuple = field(default=(), compare=False, repr=False)

    @property
    def value(self) -> int:
        """The number of problematic people."""
        return self.n_problematic

    @property
    def witness(self) -> ForegroundWitness | None:
        """The most exposed tuple."""
        return self.top

    @property
    def params(self) -> dict:
        """The parameters of the attack."""
        md = self.mined
        mining = {} if md is None else {
            "min_support": md.min_support, "epsilon": md.epsilon,
            "confidence": md.confidence, "unreliable": md.unreliable,
            "values": [str(v) for v in md.values]}
        return {"r": self.r, "tol": self.tol, **mining, "max_items": self.max_items}

    @classmethod
    def from_attack(cls, attack: Any, *, max_items: int = 10) -> ForegroundSummary:
        """Summarize an in-memory :class:`~fastpriv.foreground.ForegroundAttack`."""
        return _summarize(attack.mined.release_view, attack.mined, attack.posterior,
                          attack.witness_set, attack.witness_value, attack.n_undefined,
                          r=attack.r, tol=attack.tol, max_items=max_items)

    def merge(self, *others: ForegroundSummary) -> ForegroundSummary:
        """Merge the summaries of disjoint sets of groups (the same attack)."""
        out = self
        for o in others:
            out = out._merge_one(o)
        return out

    def _merge_one(self, o: ForegroundSummary) -> ForegroundSummary:
        if (self.r, self.tol, self.max_items) != (o.r, o.tol, o.max_items):
            raise InputError("merge: the summaries are of different attacks")
        top = self.top
        if o.top is not None and (top is None or _witness_rank(o) < _witness_rank(self)):
            top = o.top
        pairs = sorted(zip(self._ranks + o._ranks, self.worst + o.worst, strict=True),
                       key=lambda p: p[0])
        ranks, worst = _first_people(pairs, self.max_items)
        return replace(self, mined=self.mined if self.mined is not None else o.mined,
                       n_rows=self.n_rows + o.n_rows,
                       n_problematic=self.n_problematic + o.n_problematic,
                       n_undefined=self.n_undefined + o.n_undefined,
                       max_posterior=max(self.max_posterior, o.max_posterior), top=top,
                       worst=worst, _ranks=ranks)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (the mined distributions without their timings)."""
        mined = None if self.mined is None else {
            k: v for k, v in self.mined.to_dict().items() if k != "seconds"}
        return json_safe({"r": self.r, "threshold": self.threshold, "tol": self.tol,
                          "value": self.value, "params": self.params,
                          "witness": self.witness, "n_rows": self.n_rows,
                          "n_problematic": self.n_problematic,
                          "max_posterior": self.max_posterior,
                          "n_undefined": self.n_undefined, "mined": mined,
                          "worst": list(self.worst)})

    def summary(self) -> str:
        """Say how many people the mined patterns expose, and the worst case."""
        verdict = "FAIL" if self.n_problematic else "PASS"
        line = (f"{verdict}: foreground attack at r = {self.r:g} — patterns mined from the "
                f"release itself link {self.n_problematic:,} of {self.n_rows:,} people to a "
                f"sensitive value with probability above 1/r = {self.threshold:.4g}.")
        if self.top is not None:
            line += f"\n  Worst case: {self.top.summary()}."
        return line


def _witness_rank(s: ForegroundSummary) -> FieldsKey:
    return s._ranks[0] if s._ranks else FieldsKey((1.0, ()))


def _first_people(pairs: list, k: int) -> tuple[tuple, tuple]:
    """Keep the entries standing for the first ``k`` people (the last one cut to fit)."""
    ranks, worst, left = [], [], k
    for rank, entry in pairs:
        if left <= 0:
            break
        people = min(entry["people"], left)
        ranks.append(rank)
        worst.append({**entry, "people": people})
        left -= people
    return tuple(ranks), tuple(worst)


def _summarize(view: Any, mined: Any, worst: np.ndarray, wset: np.ndarray, wval: np.ndarray,
               n_undefined: int, *, r: float, tol: float, max_items: int,
               keep_mined: bool = True) -> ForegroundSummary:
    """Summarize every row of ``view`` (posteriors computed) into a ForegroundSummary.

    ``keep_mined=False``: a part's summary, without the distributions (every part has the
    same; :meth:`ForegroundFold.finish` puts the whole release's in).
    """
    rows = view.rows
    weight = np.ones(worst.shape[0], dtype=np.int64) if rows.weight is None \
        else np.asarray(rows.weight, dtype=np.int64)
    threshold = 1.0 / r
    problematic = worst > threshold * (1.0 + tol)
    groups = view.group_labels.column(0)
    values = view.values
    ranks, entries, left = [], [], max_items
    for i in rows.ranked(worst).tolist():
        if left <= 0:
            break
        people = min(int(weight[i]), left)
        if not people:
            continue
        sig = {c: rows.label(c, i) for c in view.qi}
        group = groups[int(view.row_group[i])].as_py()
        a, x = int(wset[i]), int(wval[i])
        own = None if rows.sensitive is None else values[int(rows.sensitive[i])].as_py()
        ranks.append(FieldsKey((-float(worst[i]), (tuple(sig.values()), group, own))))
        entries.append({"group": group, "signature": sig, "posterior": float(worst[i]),
                        "attribute_set": list(mined.attribute_sets[a]) if a >= 0 else None,
                        "value": mined.values[x] if x >= 0 else None,
                        "problematic": bool(problematic[i]), "people": people})
        left -= people
    top = None
    if entries and entries[0]["posterior"] > 0:
        e = entries[0]
        top = ForegroundWitness(group=e["group"], signature=e["signature"],
                                posterior=e["posterior"],
                                attribute_set=tuple(e["attribute_set"])
                                if e["attribute_set"] is not None else None,
                                value=e["value"], problematic=e["problematic"])
    return ForegroundSummary(
        r=r, threshold=threshold, tol=tol, n_rows=int(weight.sum()),
        n_problematic=int(weight[problematic].sum()), n_undefined=int(n_undefined),
        max_posterior=float(worst.max()) if worst.size else 0.0, top=top,
        worst=tuple(entries), max_items=max_items, mined=mined if keep_mined else None,
        _ranks=tuple(ranks))


# ====================================================================== the passes
@dataclass(frozen=True, eq=False)
class PartPlan:
    """What every part reads besides its rows: the columns, values and reliable signatures.

    Small: the QI domain (``qi_labels``, sorted labels per column), each attribute set's
    reliable signatures (``sets``: attributes, mixed-radix strides and sorted keys over
    those labels), the attacked values (``targets``: label and member value labels) and
    the systems ``(sys_a, sys_x)``.
    """

    qi: tuple
    group: str
    sensitive: str
    count: str
    nulls: str
    qi_labels: dict
    sets: tuple
    n_signatures: np.ndarray
    targets: tuple
    sys_a: np.ndarray
    sys_x: np.ndarray
    pooled: bool

    def read(self, data: Any) -> Any:
        """Return the view of a part's rows (None: none left under ``nulls="drop"``)."""
        from ._arrow import kept_rows
        from .foreground import read_view

        rows = data
        if self.nulls == "drop":            # a part may hold only rows the policy drops
            kept = kept_rows(rows, [*self.qi, self.group, self.sensitive], "drop")
            if kept is not None:
                rows = rows.take(pa.array(kept))
        if rows.num_rows == 0:
            return None
        return read_view(rows, qi=self.qi, sensitive=self.sensitive, group=self.group,
                         sensitive_table=None, count="count", weight=self.count,
                         nulls=self.nulls)

    def variables(self, view: Any) -> list[np.ndarray]:
        """Each attribute set's reliable-signature index per row of ``view`` (-1: none).

        A row's signature is looked up among the whole release's reliable signatures:
        its labels' positions in the whole QI domain, packed with the same strides.
        """
        codes = {c: _positions(view.rows.qi_labels[c], self.qi_labels[c], c)
                 [view.qi_codes[c]] for c in self.qi}
        out = []
        for attributes, strides, keys in self.sets:
            key = np.zeros(view.n, dtype=np.int64)
            for i, c in enumerate(attributes):
                key += codes[c] * strides[i]
            pos = np.minimum(np.searchsorted(keys, key), max(keys.shape[0] - 1, 0))
            hit = keys[pos] == key if keys.shape[0] else np.zeros(view.n, dtype=bool)
            out.append(np.where(hit, pos, -1).astype(np.int32))
        return out

    def value_counts(self, view: Any) -> np.ndarray:
        """(n_x, G) occurrences of each attacked value (set) per group of ``view``."""
        from .foreground import group_counts

        index = {v: i for i, v in enumerate(view.values.to_pylist())}
        targets = [(label, [index[v] for v in members if v in index])
                   for label, members in self.targets]
        return group_counts(view, targets)


def _positions(labels: pa.Array, domain: pa.Array, column: str) -> np.ndarray:
    """Position of each label in ``domain`` (every label of a part is in the release's)."""
    import pyarrow.compute as pc

    errors = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
    try:
        idx = pc.index_in(labels, value_set=domain, skip_nulls=False)
    except errors:
        try:
            idx = pc.index_in(labels.cast(domain.type), value_set=domain, skip_nulls=False)
        except errors:
            idx = None
    if idx is None or idx.null_count:
        raise RuntimeError(f"foreground fold: a value of {column!r} in a part is not among "
                           "the release's cells (the passes read different data)")
    return idx.to_numpy(zero_copy_only=False).astype(np.int64)


def systems_part(data: Any, *, plan: PartPlan) -> Any:
    """Pack every system over one set of complete groups (pass 2).

    ``data``: the groups' distinct rows with their count (the form of
    :func:`fastpriv.pushdown.finish_row_counts`). Returns its
    :class:`~fastpriv._foreground_pack.SystemsPart` (they merge), or None for no row or no
    system.
    """
    from .foreground import pack_groups

    view = plan.read(data)
    if view is None or not plan.sys_a.size:
        return None
    return pack_groups(view, plan.variables(view), plan.value_counts(view), plan.sys_a,
                       plan.sys_x, plan.n_signatures, pooled=plan.pooled)


def attack_part(data: Any, *, plan: PartPlan, mined: Any, r: float, tol: float,
                max_items: int) -> ForegroundSummary | None:
    """Attack one set of complete groups with the mined distributions (pass 3).

    ``data`` as :func:`systems_part`; ``mined``: :func:`fastpriv.foreground.for_parts` of
    the whole release's distributions. Returns the part's :class:`ForegroundSummary`
    (without the distributions: :meth:`ForegroundFold.finish` adds them), or None for no
    row.
    """
    from .foreground import part_posteriors

    view = plan.read(data)
    if view is None:
        return None
    worst, wset, wval, _, n_undef = part_posteriors(mined, view, plan.variables(view),
                                                    plan.value_counts(view))
    return _summarize(view, mined, worst, wset, wval, n_undef, r=r, tol=tol,
                      max_items=max_items, keep_mined=False)


@dataclass(frozen=True, eq=False)
class ForegroundFold:
    """The driver's side of a folded attack: pass 1 done, the other passes' arguments.

    Made by :func:`prepare`. An engine gives :meth:`run` its fold over sets of complete
    groups: :func:`systems_part` (with :meth:`systems_args`) over every set, merged, then
    :meth:`solve`, then :func:`attack_part` (with :meth:`attack_args`) over every set,
    merged, then :meth:`finish`.
    """

    plan: PartPlan
    mining: Any
    view: Any
    gcount: np.ndarray
    r: float
    tol: float
    max_items: int
    max_seconds: float | None

    def systems_args(self) -> dict:
        """Keyword arguments of :func:`systems_part` (besides the rows)."""
        return {"plan": self.plan}

    @property
    def has_systems(self) -> bool:
        """Whether any system is to be solved (else pass 2 is skipped)."""
        return bool(self.plan.sys_a.size)

    def solve(self, systems: Any) -> Any:
        """Solve the merged systems: the :class:`~fastpriv.foreground.MinedDistributions`."""
        from .foreground import solve_mining

        if self.has_systems and systems is None:
            raise InputError("data has no rows (after weights of 0)")
        return solve_mining(self.view, self.mining, self.gcount,
                            systems if self.has_systems else None,
                            max_seconds=self.max_seconds)

    def attack_args(self, mined: Any) -> dict:
        """Keyword arguments of :func:`attack_part` (besides the rows)."""
        from .foreground import for_parts

        return {"plan": self.plan, "mined": for_parts(mined), "r": self.r, "tol": self.tol,
                "max_items": self.max_items}

    def run(self, fold_groups: Callable[[Callable], Any], *,
            mined: Any = None) -> ForegroundSummary:
        """Run passes 2 and 3 with an engine's fold over its sets of complete groups.

        ``fold_groups(part)`` applies ``part`` (a set of complete groups' distinct rows in,
        a summary with ``merge`` or None out) to every set of complete groups where the
        data lives and returns the merged summary (None for no rows). ``mined``: the
        distributions, when the engine solved them where the groups live
        (:meth:`solve_in_blocks`); else pass 2 is folded here and solved in this process.
        """
        import functools

        if mined is None:
            systems = None
            if self.has_systems:
                systems = fold_groups(functools.partial(systems_part, **self.systems_args()))
            mined = self.solve(systems)
        return self.finish(fold_groups(functools.partial(attack_part,
                                                         **self.attack_args(mined))), mined)

    def blocks(self, n: int) -> list[np.ndarray]:
        """Deal the systems into at most ``n`` blocks, round robin (their ids)."""
        S = int(self.plan.sys_a.size)
        n = max(1, min(int(n), S))
        return [np.arange(b, S, n, dtype=np.int64) for b in range(n)]

    def block_args(self) -> dict:
        """Keyword arguments of :func:`block_solution` (besides the pack and its systems)."""
        return {"f0": self.mining.f0[self.mining.sys_x], "params": self.mining.params}

    @property
    def n_random(self) -> int:
        """Random starts per system (for :func:`block_summary`)."""
        return int(self.mining.params["n_random"])

    @property
    def var_off(self) -> np.ndarray:
        """Every system's variables in the whole pack (offsets)."""
        m = self.plan.n_signatures + (1 if self.plan.pooled else 0)
        off = np.zeros(self.plan.sys_a.size + 1, dtype=np.int64)
        np.cumsum(m[self.plan.sys_a], out=off[1:])
        return off

    def solve_in_blocks(self, counts: Any, work: float, max_group: int,
                        solve_blocks: Callable[[], list]) -> Any:
        """Solve the systems where their groups live: the mined distributions.

        As :func:`fastpriv.foreground.solve_mining_in_blocks`. ``counts``, ``work``,
        ``max_group``: from :func:`block_summary` of every block (counts put in system
        order by :func:`fastpriv._foreground_pack.assemble_counts`); ``solve_blocks()``
        returns :func:`block_solution` of every block.
        """
        from .foreground import solve_mining_in_blocks

        return solve_mining_in_blocks(self.view, self.mining, self.gcount, counts, work,
                                      max_group, solve_blocks, max_seconds=self.max_seconds)

    def finish(self, summary: ForegroundSummary | None, mined: Any) -> ForegroundSummary:
        """Return the merged summary with the whole release's distributions."""
        if summary is None:
            raise InputError("data has no rows (after weights of 0)")
        return replace(summary, mined=mined)


def prepare(cells: Callable[[], Any], *, qi: Sequence[str], group: str | Sequence[str],
            sensitive: str,
            count: str, r: float, sensitive_values: Any = None,
            max_set_size: int | None = None, epsilon: float = 0.01, confidence: float = 0.9,
            min_support: int | None = None, nulls: str = "error", max_items: int = 10,
            tol: float = 1e-12, unreliable: Any = "pooled", n_random: int = 2, seed: int = 0,
            max_iter: int = 300, solver_tol: float = 1e-10,
            max_seconds: float | None = MAX_SECONDS) -> ForegroundFold:
    """Run pass 1 on the distinct (QI, sensitive) cells and return the fold's driver.

    ``cells()`` counts them where the data lives (an engine's ``row_counts(...,
    group=[])``, under ``nulls="drop"`` without the rows of a null group; ``count`` their
    count column). The other arguments as :func:`fastpriv.foreground.attack`.
    """
    from ._budget import check_max_seconds
    from ._validation import check_int, unique_name
    from .foreground import check_attack, plan_mining, read_view

    if not isinstance(group, str):
        if isinstance(group, Sequence) and len(group) == 1 and isinstance(group[0], str):
            group = group[0]
        else:
            raise InputError(f"group: the foreground attack reads one group column (as "
                             f"foreground.attack), got {group!r}")
    qi = [qi] if isinstance(qi, str) else list(qi)
    r, tol = check_attack(r, tol)
    max_items = check_int(max_items, "max_items", minimum=1)
    max_seconds = check_max_seconds(max_seconds)
    table = cells()
    one = unique_name("group", [*qi, sensitive, count])
    table = table.append_column(one, pa.array(np.zeros(table.num_rows, dtype=np.int8)))
    view = read_view(table, qi=list(qi), sensitive=sensitive, group=one, sensitive_table=None,
                     count="count", weight=count, nulls=nulls)
    mining, gcount = plan_mining(view, sensitive_values=sensitive_values,
                                 max_set_size=max_set_size, epsilon=epsilon,
                                 confidence=confidence, min_support=min_support,
                                 unreliable=unreliable, n_random=n_random, seed=seed,
                                 max_iter=max_iter, solver_tol=solver_tol)
    labels = view.values.to_pylist()
    plan = PartPlan(qi=tuple(qi), group=group, sensitive=sensitive, count=count, nulls=nulls,
                    qi_labels={c: view.rows.qi_labels[c] for c in qi},
                    sets=tuple((st.attributes, st.strides, st.keys) for st in mining.sets),
                    n_signatures=mining.n_signatures,
                    targets=tuple((label, tuple(labels[c] for c in codes))
                                  for label, codes in mining.targets),
                    sys_a=mining.sys_a, sys_x=mining.sys_x, pooled=mining.pooled)
    return ForegroundFold(plan=plan, mining=mining, view=view, gcount=gcount, r=r, tol=tol,
                          max_items=max_items, max_seconds=max_seconds)


def block_summary(part: Any, *, n_random: int) -> tuple[Any, float, int]:
    """Summarize a block's merged systems for the driver, before they are solved.

    Returns ``(counts, work, max_group)``: the pack without its mixed groups
    (``SystemsPart.counts``), :func:`fastpriv.foreground.solve_work` and the largest
    mixed group.
    """
    from .foreground import solve_work

    return (part.counts(), solve_work(part, n_random),
            int(np.max(part.grp_N, initial=0)))


def block_solution(part: Any, systems: np.ndarray, *, f0: np.ndarray,
                   params: dict) -> tuple[np.ndarray, Any]:
    """Solve a block's merged systems where they live: ``(system ids, solution)``.

    ``part`` packs exactly ``systems`` (ids in the whole plan), in that order; ``f0``:
    every system's fixed rate (:meth:`ForegroundFold.block_args`).
    """
    from .foreground import solve_block

    systems = np.asarray(systems, dtype=np.int64)
    return systems, solve_block(part, systems, f0[systems], params)
