"""t-closeness with a hierarchical ground distance (ARX's ``HierarchicalDistanceTCloseness``).

The distance of a group's sensitive distribution P to the whole table's Q is the earth
mover's distance (EMD) whose ground distance between two values is the level of their
lowest common ancestor in the sensitive attribute's generalization hierarchy divided by the
hierarchy's height H (the number of levels above the values): two values generalized
together one level up are 1/H apart, values meeting only at the root are 1 apart (Li, Li &
Venkatasubramanian, *t-Closeness: Privacy beyond k-anonymity and l-diversity*, ICDE 2007,
§4.2). t = max over groups of EMD(P_g, Q).

The EMD is computed as ARX does (``src/main/org/deidentifier/arx/criteria/
HierarchicalDistanceTCloseness.java``, ``isAnonymous``, in github.com/arx-deidentifier/arx at
commit aacd487fb77b3af7970d5d6fa1b2f6cca1182b64): bottom-up over the hierarchy's nodes, the
*extra* of a leaf is p − q, a node's positive and negative extras are the sums of its
children's positive and negative extras, the mass ``min(pos, neg)`` is matched inside the
node at cost ``level / H`` each, and the rest (``pos − neg``) is carried up. Here the nodes of
one level are processed for every group at once (arrays of shape groups × nodes).

The model is declared in :mod:`fastpriv.registry` (``hierarchical_t``): its verdict threshold
``max_hierarchical_t`` (``--max-hierarchical-t``), its option ``hierarchies`` (the flag
``--hierarchies``: a folder of hierarchy files, the sensitive attribute's read from it,
``"bundled"``, a :class:`~fastpriv.hierarchies.Hierarchy` or a mapping attribute → hierarchy),
the functions below that give its per-group statistic, report section, verdict check, HTML,
remedy and warm-up.

Examples
--------
>>> import fastpriv as fp
>>> from fastpriv.hierarchies import Hierarchy
>>> h = Hierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]], name="x")
>>> rel = fp.Release.from_groups([["a", "a", "a"], ["b", "c", "b", "c", "b", "c"]])
>>> res = hierarchical_t_closeness(rel, hierarchy=h)
>>> round(res.value, 4), res.witness.group
(0.5, 0)

"""

from __future__ import annotations

import html as _html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._data import as_release
from .classic import GroupWitness
from .errors import InputError, InputTypeError
from .hierarchies import Hierarchy
from .registry import make_check, model
from .release import Release
from .results import Result

__all__ = ["HierarchicalTCloseness", "hierarchical_t_closeness", "hierarchical_emd",
           "per_group", "checks", "html", "remedy_criteria", "warmup", "SECTION_SCHEMA"]

NAME = "hierarchical_t"


# ============================================================================ the distance
def _levels(hierarchy: Hierarchy, labels: list[Any]) -> tuple[list[np.ndarray], int]:
    """Return, for every level 1..H, the parent node of each node one level below.

    Level 0 are ``labels`` (the sensitive values, in this order); the arrays map node j of
    level l − 1 to its node at level l. Refuses a value the hierarchy does not list, a
    hierarchy without a level above the values, and one whose top level is not one root.
    """
    rows = {r[0]: r for r in hierarchy.rows}
    missing = [x for x in labels if str(x) not in rows]
    if missing:
        raise InputError(f"hierarchy: {hierarchy.name!r} does not list the sensitive values "
                         f"{[str(x) for x in missing[:5]]}")
    height = hierarchy.height - 1
    if height < 1:
        raise InputError(f"hierarchy: {hierarchy.name!r} has no level above its values (a "
                         "hierarchical distance needs at least two columns)")
    tops = {r[-1] for r in hierarchy.rows}
    if len(tops) != 1:
        raise InputError(f"hierarchy: the top level of {hierarchy.name!r} must be one root "
                         f"label, got {sorted(tops)[:5]}")
    paths = [rows[str(x)] for x in labels]
    below = np.arange(len(labels))
    parents = []
    for lev in range(1, height + 1):
        ids: dict[str, int] = {}
        node = np.array([ids.setdefault(p[lev], len(ids)) for p in paths], dtype=np.int64)
        parent = np.zeros(int(below.max()) + 1 if below.size else 0, dtype=np.int64)
        parent[below] = node                      # nested levels: one parent per node
        parents.append(parent)
        below = node
    return parents, height


def hierarchical_emd(p: np.ndarray, q: np.ndarray, parents: list[np.ndarray]) -> np.ndarray:
    """Return the hierarchical EMD of every row of ``p`` to ``q`` (ARX's algorithm).

    Parameters
    ----------
    p : numpy.ndarray
        Distributions, shape (groups, values); each row sums to 1.
    q : numpy.ndarray
        The reference distribution, shape (values,).
    parents : list of numpy.ndarray
        For levels 1..H, the parent of each node of the level below (level 0: the values).

    Returns
    -------
    numpy.ndarray
        One distance in [0, 1] per row.

    """
    height = len(parents)
    net = np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)[None, :]
    cost = np.zeros(net.shape[0])
    for lev, parent in enumerate(parents, start=1):
        n_up = int(parent.max()) + 1 if parent.size else 0
        pos = np.zeros((net.shape[0], n_up))
        neg = np.zeros((net.shape[0], n_up))
        np.add.at(pos.T, parent, np.maximum(net, 0.0).T)
        np.add.at(neg.T, parent, np.maximum(-net, 0.0).T)
        cost += (lev / height) * np.minimum(pos, neg).sum(axis=1)
        net = pos - neg
    return np.clip(cost, 0.0, 1.0)


def _resolve(spec: Any, attr: str) -> Hierarchy:
    """Return the sensitive attribute's hierarchy from the ``hierarchies`` option."""
    from .hierarchies import find_hierarchy_file

    if spec is None:
        raise InputError("hierarchies: the hierarchical t-closeness needs a hierarchy of the "
                         f"sensitive attribute {attr!r} (--hierarchies DIR, or 'bundled')")
    if isinstance(spec, Hierarchy):
        return spec
    if isinstance(spec, Mapping):
        if attr not in spec:
            raise InputError(f"hierarchies: no entry for the sensitive attribute {attr!r}")
        return _resolve(spec[attr], attr)
    if isinstance(spec, str) and spec == "bundled":
        from .datasets import hierarchy_path

        try:
            return Hierarchy.from_csv(hierarchy_path(attr), name=attr)
        except ValueError as exc:
            raise InputError(f"hierarchies: no bundled hierarchy of {attr!r} ({exc})") from None
    if isinstance(spec, (str, os.PathLike)):
        path = (find_hierarchy_file(spec, attr) if os.path.isdir(spec) else os.fspath(spec))
        return Hierarchy.from_csv(path, name=attr)
    raise InputTypeError("hierarchies must be a Hierarchy, a CSV path, a folder, 'bundled' "
                         f"or a mapping attribute -> hierarchy; got {type(spec).__name__}")


def per_group(rel: Release, *, q: dict | None, options: dict) -> np.ndarray:
    """Return every group's hierarchical EMD to ``q`` (the engines' per-group contract).

    Parameters
    ----------
    rel : Release
        The groups (a whole release, or one partition of it).
    q : dict or None
        The whole table's sensitive distribution {label: probability}; None: ``rel``'s own.
    options : dict
        The model's options: ``hierarchies`` (see :func:`_resolve`).

    Returns
    -------
    numpy.ndarray
        One float per group of ``rel``, in its group order; larger is worse.

    """
    h = _resolve(options.get("hierarchies"), rel.sensitive_name)
    labels = list(rel.values)
    if q is None:
        qv = np.asarray(rel.value_totals, dtype=np.float64) / rel.n_rows
    else:
        known = {str(x) for x in labels}
        labels += [x for x in q if str(x) not in known]     # values of other partitions
        mass = {str(x): float(v) for x, v in q.items()}
        qv = np.array([mass.get(str(x), 0.0) for x in labels])
    parents, _ = _levels(h, labels)
    counts = np.zeros((rel.n_groups, len(labels)))
    counts[:, :rel.n_values] = rel.count_matrix()
    return hierarchical_emd(counts / rel.sizes[:, None], qv, parents)


# ============================================================================ public result
@dataclass(frozen=True, eq=False)
class HierarchicalTCloseness(Result):
    """t of t-closeness under the hierarchical ground distance, with the worst group.

    Attributes
    ----------
    value : float
        t = max over groups of the hierarchical EMD to the whole table's distribution.
    per_group : numpy.ndarray
        Every group's distance, in group order.
    witness : GroupWitness
        The group attaining ``value``.
    params : dict
        ``sensitive``, ``hierarchy`` (its name), ``height`` (H), ``n_groups``.

    """

    value: float
    per_group: np.ndarray
    witness: GroupWitness
    params: dict

    def summary(self) -> str:
        """One line: t and the group attaining it."""
        return (f"hierarchical t-closeness: t = {self.value:.4g} (group "
                f"{self.witness.label!r}; hierarchy height {self.params['height']})")


def hierarchical_t_closeness(data: Any, *, hierarchy: Any, sensitive: str | None = None,
                             group: Any = None, qi: Any = None,
                             **read: Any) -> HierarchicalTCloseness:
    """Return t-closeness with the hierarchical ground distance (ARX's definition).

    Parameters
    ----------
    data : Release or table-like
        A Release, or a table read with ``sensitive=`` and ``group=``/``qi=`` (and
        ``weight=``, ``nulls=``) as :meth:`Release.from_table` reads it.
    hierarchy : Hierarchy, path, folder, "bundled" or mapping
        The sensitive attribute's generalization hierarchy (a folder: its file for the
        sensitive attribute; a mapping: its entry).
    sensitive, group, qi : optional
        How a table is read.
    **read
        ``weight=``, ``nulls=`` for a table (see :func:`fastpriv._data.as_release`).

    Returns
    -------
    HierarchicalTCloseness

    Raises
    ------
    InputError
        A sensitive value missing from the hierarchy, a hierarchy without a level above its
        values or with more than one root.

    """
    rel = as_release(data, sensitive=sensitive, group=group, qi=qi, **read)
    h = _resolve(hierarchy, rel.sensitive_name)
    vals = per_group(rel, q=None, options={"hierarchies": h})
    g = int(np.argmax(vals))
    w = GroupWitness(model=NAME, group=g, label=rel.group_label(g), value=float(vals[g]))
    return HierarchicalTCloseness(
        value=float(vals[g]), per_group=vals, witness=w,
        params={"sensitive": rel.sensitive_name, "hierarchy": h.name,
                "height": h.height - 1, "n_groups": rel.n_groups})


# ============================================================================ the report's hooks
def checks(classes: Any, *, population: Any, thresholds: dict, release: Release | None = None,
           options: dict | None = None) -> dict:
    """Return the model's report section and its verdict check (``max_hierarchical_t``)."""
    m = model(NAME)
    want = thresholds["max_hierarchical_t"]
    if release is None:
        reason = "hierarchical t-closeness needs a sensitive column (--sensitive)"
        return {"section": {"status": "skipped", "reason": reason},
                "checks": [make_check(m.name, m.title, m.question, status="skipped",
                                      reason=reason)]}
    res = hierarchical_t_closeness(release, hierarchy=(options or {}).get("hierarchies"))
    d = res.to_dict()
    section = {"status": "ok", "reason": None, "value": res.value, "threshold": want,
               "worst_group": res.witness.group, "worst_label": d["witness"]["label"],
               "params": res.params}
    plain = (f"The most unusual group differs from the overall mix of "
             f"{release.sensitive_name} by {res.value:.3g} (earth mover's distance over the "
             f"hierarchy of height {res.params['height']}; allowed: at most {want:g}).")
    return {"section": section,
            "checks": [make_check(m.name, m.title, m.question, bool(res.value <= want + 1e-12),
                                  res.value, f"t ≤ {want:g}", plain)]}


def html(section: dict) -> str:
    """Render the model's report section (an ``ok`` one) as an HTML fragment."""
    e = _html.escape
    p = section["params"]
    return (f"<section id='model-{NAME}'><h2>t-closeness over the hierarchy of "
            f"{e(str(p['sensitive']))}</h2><p>The ground distance between two values is the "
            f"level where the hierarchy {e(str(p['hierarchy']))} (height {p['height']}) first "
            "joins them, divided by its height. The most unusual group, "
            f"<b>{e(str(section['worst_label']))}</b>, is at distance "
            f"<b>{section['value']:.4g}</b> from the whole table (allowed: at most "
            f"{section['threshold']:g}).</p></section>")


def remedy_criteria(by_id: dict, params: dict) -> list[str]:
    """Return Mondrian's flags meeting ``max_hierarchical_t`` (none without its check).

    The hierarchical distance of two values is at most 1, the equal distance's, so a release
    meeting ``--max-t T`` has a hierarchical t of at most T too.
    """
    if NAME not in by_id:
        return []
    return ["--max-t", f"{params['thresholds']['max_hierarchical_t']:g}"]


def warmup() -> None:
    """Run the model once on a small release (``fastpriv warmup``'s workload)."""
    h = Hierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]], name="x")
    hierarchical_t_closeness(Release.from_groups([["a", "b"], ["c", "a", "c"]]), hierarchy=h)


_NUM = {"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]}

#: The JSON schema of the model's section under the report's ``models`` (since 1.4).
SECTION_SCHEMA = {
    "type": "object", "required": ["status", "reason"],
    "properties": {"status": {"enum": ["ok", "skipped", "failed"]},
                   "reason": {"type": ["string", "null"]}, "value": _NUM, "threshold": _NUM,
                   "worst_group": {"type": "integer"}, "worst_label": {},
                   "params": {"type": "object",
                              "required": ["sensitive", "hierarchy", "height", "n_groups"]}},
    "if": {"properties": {"status": {"const": "ok"}}},
    "then": {"required": ["value", "threshold", "worst_group", "worst_label", "params"]},
}
