"""ART: anonymization for r-robustness against worst-case distribution knowledge (Wong et al.).

Wong, Fu, Liu, Pei, *Anonymization-based attacks… / worst-case background knowledge*:
the adversary knows QI-based distributions p(signature : x) (:class:`~fastpriv.knowledge.
Knowledge`; by default the *true* conditional frequencies of the original table — the worst
case — for every attribute subset of the QI with a reliable sample). A release is
**r-robust** when every posterior p(t : x) ≤ 1/r (binary possible-world model; spec
``robustness.md``).

ART is bottom-up (spec §ART; rules in :mod:`fastpriv._kernels.art`):

1. every tuple starts as its own group (a bucketization: QI values are published exactly,
   like Anatomy);
2. for each x of the sensitive value set X_s, while a group L holding x violates the
   **Δ bounding condition** (Theorem 1) for some known attribute set — N < r, or
   Δ_max > Δ_ceil(N, r, f_max) — the required size N′_o (inequality 5, maximised over the
   attribute sets) is computed and L is merged with a **closest** group L′ (least
   D(L, L′) = Σ_A (Δ_after,A − Δ_before,A), Definition 6) that holds no value of X_s already
   in L (m-uniqueness: each value of X_s at most once per group), until N ≥ N′_o;
3. groups without any value of X_s reveal nothing the model protects and stay as they are,
   unless ``pad=True`` (every group gets at least ⌈r⌉ rows, Anatomy-like, for fair utility
   comparisons; the result's ``pad`` says which was used).

By Theorem 1 (binary model, x once per group) every group holding an X_s value is then
r-robust; the result is **verified** with the exact posterior (:func:`fastpriv.robustness.
audit`) and the result's ``max_posterior`` reports the maximum. Closest-group search is indexed
by *profiles* (distinct probability vectors) so Adult runs in well under a second and a
million rows in seconds to minutes depending on the number of profiles.

Conditions (``condition=``): ``"delta"`` (Wong et al.) stops a group holding x at the Δ
bounding condition of Theorem 1 for every attribute set, i.e. N ≥ N′_o of inequality (5).
``"exact"`` stops it at the exact binary posterior, r · max o ≤ Σ o with o = f/(1 − f) per
attribute set — r-robustness itself for a value occurring once, computed incrementally (the
papers call the posterior intractable; for m-unique groups it is a ratio of sums), so groups
stop growing as soon as they are robust. Closest-group merging is the same in both.

Stranded groups (``on_unsatisfied=``): a group holding an X_s value that still fails the
condition when no merge candidate is left (or an attribute set with f_min = 0 < f_max makes
the required size infinite) and whose exact posterior exceeds 1/r (spec ``robustness.md``,
ART step 4; the paper does not say). It is never published silently: each one is first
merged into the group its merge harms least (m-uniqueness kept if possible, then least Δ
increase, then size) among those whose merged group is r-robust by the exact binary
posterior; when there is none, ``"suppress"`` (default) suppresses the group (group id −1,
not in the release), ``"merge"`` merges it into the least-harm group anyway (counted, and
the rows left unsatisfied are reported), ``"report"`` publishes it as it is and ``"raise"``
raises :class:`~fastpriv.errors.InputError`. A result whose exact audit (or, without
``verify``, whose count of unsatisfied rows) shows a breach says so in
:attr:`~fastpriv.anonymize.ArtResult.failure`, and its tables are not published without
``allow_failing=True``: the default never gives a release that fails r-robustness.

The function is :func:`art` in this module (``_art``: a submodule named ``art`` would
shadow the package-level function of the same name on import).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from .._validation import check_choice, check_r, kernel_array, value_codes
from ..errors import InputError, InputTypeError
from ._input import check_qi_sensitive, prepare_input
from ._result import Anonymized, ArtResult

__all__ = ["art", "prepare_art", "ARTInput", "CLI_METHOD"]


class ARTInput:
    """ART's view of a table: per-row profiles, classes and QI ranks (see the kernel module).

    Attributes
    ----------
    F : numpy.ndarray
        (profiles × attribute sets × |X_s|) adversary probabilities, profiles sorted
        lexicographically by their flattened vectors.
    row_prof, row_cls, row_rank : numpy.ndarray
        Profile, class (0 = value outside X_s, 1 + j = j-th value of X_s) and dense QI rank
        of every kept row (int64).
    attribute_sets : list of tuple
    sensitive_values : list
        X_s, sorted like the release's values.
    knowledge : Knowledge
    kept_rows : numpy.ndarray or None
        Input rows kept (``nulls="drop"``), None when every row is kept.
    people : pyarrow.Table or None
        With ``weight=``: the input expanded into one row per person (the rows the result's
        group ids index); None without.

    """

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _check_r(r: Any) -> float:
    return float(check_r(r))


def prepare_art(table: Any, qi: Sequence[str], sensitive: str, *,
                sensitive_values: Sequence[Any] | None = None, knowledge: Any = None,
                max_set_size: int | None = None, epsilon: float = 0.01,
                confidence: float = 0.9, min_support: int | None = None,
                as_one_value: bool = False, nulls: str = "error",
                weight: str | None = None) -> ARTInput:
    """Encode a table for ART: knowledge, per-row probability profiles, classes, QI ranks.

    Parameters are those of :func:`art` (``weight`` included: a weighted table is expanded
    here, and the preparation covers its people). Exposed for tests and for reuse across
    several values of r (the preparation does not depend on r). The table is encoded once,
    into a row view (:mod:`fastpriv.rows`) that the knowledge, the signatures and the QI
    ranks read.
    """
    from ..knowledge import Knowledge

    qi = check_qi_sensitive(qi, sensitive)
    check_choice(nulls, "nulls", ("error", "drop"))
    people = None
    if weight is not None:
        from . import _one_row_per_person

        people = table = _one_row_per_person(table, weight, [*qi, sensitive])
    if knowledge is not None and not isinstance(knowledge, Knowledge):
        raise InputTypeError(f"knowledge must be a fastpriv.knowledge.Knowledge, got "
                        f"{type(knowledge).__name__}")
    t, qi, n_input, kept = prepare_input(table, qi, sensitive, nulls, checked=True)
    table_released = t
    view = _art_view(t, qi, sensitive)
    values = view.values.to_pylist()
    xs = _tested_codes(sensitive_values, values, sensitive)
    xs_labels = [values[i] for i in xs]
    set_label = None
    if as_one_value:
        if sensitive_values is None:
            raise InputError("as_one_value=True needs sensitive_values (the set X_s)")
        t, set_label = _merge_values(t, sensitive, xs_labels, values)
        view = _art_view(t, qi, sensitive)
        values = view.values.to_pylist()
        xs = [values.index(set_label)]
        xs_labels = [set_label]
    derived = knowledge is None
    derive_params = {"max_set_size": max_set_size, "epsilon": epsilon,
                     "confidence": confidence, "min_support": min_support}
    if derived:
        knowledge = Knowledge.derive(view, qi=qi, sensitive=sensitive, **derive_params)
    sets = [A for A in knowledge.attribute_sets if set(A) <= set(qi)]
    if not sets:
        if not derived:
            raise InputError("knowledge: none of its attribute sets is within qi")
        sets = [()]       # no reliable signature: only the global rates (as robustness.audit)
    F, prof = _profiles(view, knowledge, sets, xs_labels)
    cls = np.zeros(len(values), dtype=np.int64)
    cls[xs] = np.arange(1, len(xs) + 1)
    row_cls = cls[np.asarray(view.sensitive, dtype=np.int64)]
    return ARTInput(F=F, row_prof=prof, row_cls=row_cls, row_rank=_qi_ranks(view, qi),
                    attribute_sets=sets, sensitive_values=xs_labels, values=values,
                    knowledge=knowledge, kept_rows=kept, n_input_rows=n_input,
                    table=table_released, table_model=t, set_label=set_label, qi=qi,
                    sensitive=sensitive, derived=derived, derive_params=derive_params,
                    people=people)


@dataclass(frozen=True, eq=False)
class _PeopleArtResult(ArtResult):
    """The :class:`ArtResult` of a weighted table (``art(..., weight=)``), with its people.

    ``source`` is the input expanded into one row per person: the rows its group ids
    index, to pass as ``original`` to :meth:`~ArtResult.write`, :meth:`~ArtResult.table`
    or :meth:`~ArtResult.auditor_view` (as :attr:`fastpriv.anonymize.AnatomyResult.source`).
    """

    source: Any = field(default=None, repr=False)


def _art_view(t: pa.Table, qi: list[str], sensitive: str) -> Any:
    """Encode the prepared table once: QI codes and sensitive codes (a row view)."""
    from .._arrow import encode_column
    from ..rows import encode_rows

    senc = encode_column(t.column(sensitive), name=sensitive)
    return encode_rows(t, qi=qi, sensitive=senc.codes, values=senc.labels)


def _tested_codes(sensitive_values: Any, values: list, sensitive: str) -> list[int]:
    """Codes of X_s (every value by default); X_s may not be empty."""
    xs = value_codes(sensitive_values, values).tolist()
    if not xs:
        raise InputError("sensitive_values is empty")
    return xs


def _profiles(view: Any, knowledge: Any, sets: list[tuple], xs_labels: list
              ) -> tuple[np.ndarray, np.ndarray]:
    """Per-row probabilities over (attribute set, x), compressed to distinct profiles.

    Returns ``(F, prof)``: the profiles × sets × |X_s| array, sorted lexicographically by
    the flattened vectors, and the profile of every row.
    """
    n = view.n_rows
    cache: dict = {}
    key = np.zeros(n, dtype=np.int64)
    mats, sigs = [], []
    for A in sets:
        if A == ():
            sig = np.zeros(n, dtype=np.int64)
            M = np.array([[knowledge.fallback_for(v) for v in xs_labels]], dtype=np.float64)
        else:
            sig = np.asarray(knowledge.signature_index(view, A, column_codes=cache), np.int64)
            M = knowledge.probability_matrix(A, xs_labels)
            sig = np.where(sig < 0, M.shape[0] - 1, sig)
        used = np.unique(sig)
        sub = M[used]
        if np.isnan(sub).any():
            i, j = np.argwhere(np.isnan(sub))[0]
            raise InputError(f"knowledge has no probability for "
                             f"{knowledge.describe_missing(A, int(used[i]), xs_labels[j])} "
                             "and no fallback; give it, or build the knowledge with a "
                             "fallback (e.g. the global rates)")
        mats.append(M)
        sigs.append(sig)
        # dense id of the combination of signatures so far (ids < n, so no overflow)
        _, key = np.unique(key * np.int64(M.shape[0]) + sig, return_inverse=True)
        key = key.ravel().astype(np.int64)
    n_key = int(key.max()) + 1
    first = np.full(n_key, n, dtype=np.int64)
    np.minimum.at(first, key, np.arange(n, dtype=np.int64))
    nA, nX = len(sets), len(xs_labels)
    Fk = np.empty((n_key, nA, nX), dtype=np.float64)
    for a in range(nA):
        Fk[:, a, :] = mats[a][sigs[a][first]]
    flat = Fk.reshape(n_key, nA * nX)
    # profiles: distinct probability vectors, numbered in lexicographic order
    order = np.lexsort(flat.T[::-1])
    srt = flat[order]
    new = np.ones(n_key, dtype=bool)
    if n_key > 1:
        new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    pid = np.cumsum(new) - 1
    inv = np.empty(n_key, dtype=np.int64)
    inv[order] = pid
    return np.ascontiguousarray(srt[new].reshape(-1, nA, nX)), inv[key]


def _qi_ranks(view: Any, qi: list[str]) -> np.ndarray:
    """Dense rank of every row's QI tuple (lexicographic in the labels' order)."""
    from .._arrow import encode_keys

    # the view's codes are in label order, so their tuples rank like the labels'
    rank, _ = encode_keys([pa.array(view.qi_codes[c]) for c in qi], names=qi)
    return np.asarray(rank, dtype=np.int64)


def _merge_values(t: pa.Table, sensitive: str, xs_labels: list, values: list
                  ) -> tuple[pa.Table, str]:
    """Replace every value of X_s by one label ``{a, b, …}`` (the column becomes strings)."""
    import pyarrow.compute as pc

    label = "{" + ", ".join(map(str, xs_labels)) + "}"
    col = t.column(sensitive)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = col.cast(pa.string())
    if label in {str(v) for v in values}:
        raise InputError(f"sensitive_values: the merged label {label!r} is already a value")
    mask = pc.is_in(col, value_set=pa.array([str(v) for v in xs_labels], col.type))
    merged = pc.if_else(mask, pa.scalar(label, col.type), col)
    i = t.column_names.index(sensitive)
    return t.set_column(i, sensitive, merged), label


def art(data: Any, *, qi: Sequence[str], sensitive: str, r: float,
        sensitive_values: Sequence[Any] | None = None, knowledge: Any = None,
        max_set_size: int | None = None, epsilon: float = 0.01, confidence: float = 0.9,
        min_support: int | None = None, as_one_value: bool = False,
        condition: str = "delta", pad: bool = False, verify: bool = True,
        on_unsatisfied: str = "suppress", nulls: str = "error",
        prepared: ARTInput | None = None, weight: str | None = None) -> ArtResult:
    """ART (Wong et al.): a bucketization that is r-robust against distribution knowledge.

    Parameters
    ----------
    data : table-like
        One row per individual (SVPI).
    qi : list of str
        Quasi-identifiers (published exactly; they form the adversary's signatures).
    sensitive : str
        Sensitive column.
    r : float
        r > 1: every posterior must be ≤ 1/r.
    sensitive_values : sequence, optional
        The sensitive value set X_s (default every value). Each value of X_s occurs at most
        once per group (m-uniqueness); other values are unconstrained.
    knowledge : Knowledge, optional
        The adversary's distributions (attribute sets within ``qi`` are used). Default:
        :meth:`Knowledge.derive` of the table (the true frequencies: the worst case).
    max_set_size, epsilon, confidence, min_support
        Options of the derived knowledge: largest attribute set, Hoeffding parameters of a
        reliable signature (error ≤ ``epsilon`` with probability ≥ ``confidence``; papers:
        ε = 0.01, δ = 0.9) or an explicit minimum support.
    condition : {"delta", "exact"}
        When a group holding x is done: Theorem 1's Δ bounding condition (Wong et al.) or
        the exact binary posterior (see *Conditions* in the module docstring).
    as_one_value : bool
        Count the values of ``sensitive_values`` as **one** sensitive value ``{a, b, …}``
        (Wong et al.'s experiments: the adversary links a tuple to the *set*; each group
        then holds at most one row from the set). The knowledge, the Δ condition and the
        audit use the merged value; the release publishes the original values. The
        guarantee is about the set: p(t : X_s) ≤ 1/r (a single value of the set can be
        linked more strongly).
    pad : bool
        Give every group at least ⌈r⌉ rows (rows without an X_s value are grouped too).
    verify : bool
        Audit the output with the exact posterior (:func:`fastpriv.robustness.audit`,
        binary model, same knowledge and X_s) and report it (``max_posterior``, ``robust``).
    on_unsatisfied : {"suppress", "merge", "report", "raise"}
        What happens to a **stranded** group (see *Stranded groups* in the module
        docstring; default ``"suppress"``: the release meets r-robustness); the result
        counts each kind (``n_stranded_groups``,
        ``n_rescued_groups``, ``n_merged_unsatisfied_groups``, ``n_suppressed_rows``,
        ``n_unsatisfied``). ``"error"`` raises only when the exact audit
        finds a breach.
    nulls : {"error", "drop"}
        Dropped rows get group id −1.
    prepared : ARTInput, optional
        Output of :func:`prepare_art` for the same table and options (reuse across r).
    weight : str, optional
        Multiplicity column, as everywhere in fastpriv: each row stands for ``weight``
        identical people (e.g. a ``GROUP BY`` count). ART places every person on their own
        (m-uniqueness: the people of one row holding a value of X_s go to different
        groups), so the table is expanded into one row per person first (the copies of a
        row consecutive, in input order; the weight column dropped) and the result is
        exactly that of the expanded table: its group ids index the people, and its
        ``source`` is that table (pass it as ``original`` to ``write``/``table``).
        Integers ≥ 0 without nulls (0: nobody); refused before expanding when the people
        would not fit in the free memory. With ``prepared``, give it to
        :func:`prepare_art`.

    Returns
    -------
    ArtResult
        ``method="art"``, a bucketized release (exact QI, like Anatomy): ``.release``,
        ``.group_ids``; merges, passes, unsatisfied and stranded groups, ``pad``,
        ``max_posterior`` / ``robust`` / ``n_problematic_rows`` (exact audit), ``seconds``.

    Examples
    --------
    >>> import fastpriv as fp
    >>> adult = fp.datasets.load_adult()
    >>> res = fp.anonymize.art(adult, qi=["age", "workclass", "marital_status",
    ...                        "occupation", "race"], sensitive="education", r=4,
    ...                        sensitive_values=["Preschool", "1st-4th", "5th-6th", "7th-8th"])
    >>> res.max_posterior <= 0.25 * (1 + 1e-12)
    True

    """
    t0 = time.perf_counter()
    rf = _check_r(r)
    check_choice(on_unsatisfied, "on_unsatisfied", ON_UNSATISFIED)
    check_choice(condition, "condition", ("delta", "exact"))
    if not isinstance(pad, bool):
        raise InputTypeError(f"pad must be True or False, got {pad!r}")
    if prepared is None:
        if not isinstance(as_one_value, bool):
            raise InputTypeError(f"as_one_value must be True or False, got {as_one_value!r}")
        prepared = prepare_art(data, qi, sensitive, sensitive_values=sensitive_values,
                               knowledge=knowledge, max_set_size=max_set_size,
                               epsilon=epsilon, confidence=confidence,
                               min_support=min_support, as_one_value=as_one_value,
                               nulls=nulls, weight=weight)
    elif not isinstance(prepared, ARTInput):
        raise InputTypeError("prepared must come from prepare_art")
    elif weight is not None:
        raise InputError("weight: the prepared input already holds its rows; pass weight= "
                         "to prepare_art instead")
    prep = prepared
    t1 = time.perf_counter()
    gid, unsat, kernel_counts = _merge_groups(prep, rf, pad, condition)
    # ---- step 4: stranded groups
    gid, st = _resolve_stranded(prep, gid, unsat, rf, condition,
                                "raise" if on_unsatisfied == "error" else on_unsatisfied)
    if on_unsatisfied == "raise" and st["n_stranded_groups"]:
        raise InputError(_stranded_message(condition, st))
    t2 = time.perf_counter()
    gid, keep = _dense_groups(gid)
    rel, group_ids = _art_release(prep, gid, keep)
    holders = (unsat >= 0) & keep
    n_unsat_rows = int(st.get("n_unsatisfied_after", 0) if on_unsatisfied in
                       ("merge", "suppress") else st["n_stranded_rows"])
    has_x = np.zeros(rel.n_groups, dtype=bool)
    has_x[gid[holders]] = True
    sizes = np.asarray(rel.sizes)
    seconds = {"prepare": t1 - t0, "merge": t2 - t1}
    audit: dict[str, Any] = {}
    if verify:
        t3 = time.perf_counter()
        audit = _verify(prep, gid, keep, rf)
        seconds["verify"] = time.perf_counter() - t3
    if n_unsat_rows and on_unsatisfied == "error" and not audit.get("robust"):
        raise InputError(f"ART could not satisfy the {condition} condition for {n_unsat_rows} "
                         "sensitive rows (no eligible group left, or f_min = 0 < f_max for "
                         "some attribute set) and the exact audit "
                         f"{'finds a posterior above 1/r' if verify else 'was not run'}; pass "
                         "on_unsatisfied='report' to get the result anyway")
    params = {"qi": list(prep.qi), "sensitive": prep.sensitive, "r": rf,
              "condition": condition,
              "sensitive_values": list(prep.sensitive_values), "pad": bool(pad),
              "as_one_value": prep.set_label is not None,
              "criterion": f"{rf:g}-robustness",
              "attribute_sets": [list(A) for A in prep.attribute_sets]}
    seconds["total"] = time.perf_counter() - t0
    people = getattr(prep, "people", None)
    result_type, extra = ((ArtResult, {}) if people is None
                          else (_PeopleArtResult, {"source": people}))
    return result_type(
        **extra, release=rel, group_ids=group_ids, method="art", params=params, seconds=seconds,
        r=rf, pad=bool(pad), condition=condition, **kernel_counts,
        n_profiles=int(prep.F.shape[0]), n_attribute_sets=len(prep.attribute_sets),
        n_sensitive_rows=int(holders.sum()), n_sensitive_groups=int(has_x.sum()),
        min_sensitive_group_size=int(sizes[has_x].min()) if has_x.any() else None,
        n_unsatisfied=n_unsat_rows, **{k: v for k, v in st.items()
                                       if k != "n_unsatisfied_after"},
        guarantee=_guarantee(condition, n_unsat_rows, st), **audit)


def _merge_groups(prep: ARTInput, rf: float, pad: bool, condition: str
                  ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Run steps 1-3 (the merge kernel).

    Returns the group of each row, the unsatisfied flags (−1 for rows without an X_s
    value) and the kernel's counts.
    """
    from .._kernels.art import DELTA, EXACT, art_merge

    n = prep.row_prof.shape[0]
    rows = np.arange(n, dtype=np.int64)
    sorted_rows = np.lexsort((rows, prep.row_rank, prep.row_cls, prep.row_prof))
    root, n_merges, n_passes, unsat, n_pad, pad_joined = art_merge(
        kernel_array(prep.F, np.float64), kernel_array(prep.row_prof, np.int64),
        kernel_array(prep.row_cls, np.int64), kernel_array(prep.row_rank, np.int64),
        kernel_array(sorted_rows, np.int64), rf, bool(pad),
        int(EXACT if condition == "exact" else DELTA))
    _, gid = np.unique(root, return_inverse=True)
    counts = {"n_merges": int(n_merges), "n_passes": int(n_passes),
              "n_pad_groups": int(n_pad), "n_pad_joined": int(pad_joined)}
    return gid.ravel().astype(np.int64), unsat, counts


def _dense_groups(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber the kept groups densely (suppressed rows keep −1); also the kept-row mask."""
    keep = gid >= 0
    if not keep.any():
        raise InputError("on_unsatisfied='suppress' would suppress every row (no group can be "
                         "made r-robust); use 'merge' or 'report' to see the release")
    _, gk = np.unique(gid[keep], return_inverse=True)
    out = np.full(gid.shape[0], -1, dtype=np.int64)
    out[keep] = gk.ravel()
    return out, keep


def _art_release(prep: ARTInput, gid: np.ndarray, keep: np.ndarray
                 ) -> tuple[Any, np.ndarray]:
    """Return the release of the kept groups, and the group id of every input row."""
    from ..release import Release

    rel_tab = pa.table({_GROUP: pa.array(gid[keep]),
                        prep.sensitive: prep.table.column(prep.sensitive).filter(
                            pa.array(keep))})
    rel = Release.from_table(rel_tab, sensitive=prep.sensitive, group=_GROUP)
    if prep.kept_rows is None:
        return rel, gid
    group_ids = np.full(prep.n_input_rows, -1, dtype=np.int64)
    group_ids[prep.kept_rows] = gid
    return rel, group_ids


def _stranded_message(condition: str, st: dict) -> str:
    return (f"ART could not satisfy the {condition} condition for "
            f"{st['n_stranded_rows']} sensitive rows in {st['n_stranded_groups']} "
            "stranded groups (no eligible group left, or f_min = 0 < f_max for "
            "some attribute set; exact posterior above 1/r); pass "
            "on_unsatisfied='merge', 'suppress' or 'report'")


def _guarantee(condition: str, n_unsat_rows: int, st: dict) -> str:
    """Return what the release guarantees, in words."""
    if n_unsat_rows == 0 and st["n_stranded_groups"] == 0 and st["n_delta_only_rows"] == 0:
        return ("r-robust in the binary model (Theorem 1 holds for every group "
                "holding a value of X_s, each value once)" if condition == "delta" else
                "r-robust in the binary model (exact posterior of every group holding "
                "a value of X_s, each value once)")
    return (f"{st['n_stranded_groups']} stranded groups ({st['n_rescued_groups']} "
            f"rescued by a merge checked with the exact posterior, "
            f"{st['n_merged_unsatisfied_groups']} merged anyway, "
            f"{st['n_suppressed_groups']} suppressed); {st['n_delta_only_rows']} "
            f"rows fail only the Δ test; {n_unsat_rows} sensitive rows unsatisfied: "
            "the exact audit decides")


def _verify(prep: ARTInput, gid: np.ndarray, keep: np.ndarray, rf: float) -> dict[str, Any]:
    """Audit the release with the exact posterior (binary model, same knowledge and X_s)."""
    from .. import robustness

    aud_tab = prep.table_model.append_column(_GROUP, pa.array(gid))
    if not keep.all():
        aud_tab = aud_tab.filter(pa.array(keep))
    if prep.attribute_sets == [()]:     # derived knowledge without any attribute set
        kw = dict(prep.derive_params)
    else:
        kw = {"knowledge": prep.knowledge}
    present = set(pa.compute.unique(aud_tab.column(prep.sensitive)).to_pylist())
    xs_left = [v for v in prep.sensitive_values if v in present]
    if not xs_left:                     # every X_s row suppressed: nothing to link
        return {"max_posterior": 0.0, "robust": True, "n_problematic_rows": 0, "audit": None}
    aud = robustness.audit(aud_tab, qi=prep.qi, sensitive=prep.sensitive,
                           group=_GROUP, r=rf, sensitive_values=xs_left, **kw)
    return {"max_posterior": float(aud.value), "robust": bool(aud.robust),
            "n_problematic_rows": aud.n_problematic_rows,
            "audit": {"threshold": aud.threshold, "complete": aud.complete,
                      "certified_by_delta": aud.n_certified,
                      "exact_posterior_needed": aud.n_exact,
                      "n_undefined": len(aud.undefined), "witness": aud.witness}}


#: Group column of ART's internal release and audit tables.
_GROUP = "__art_group__"


# ---------------------------------------------------------------------- stranded groups
ON_UNSATISFIED = ("merge", "suppress", "report", "raise", "error")


def _group_max_posterior(prep: ARTInput, rows: np.ndarray) -> float:
    """Largest binary-model posterior of one group, over X_s values and attribute sets.

    p(t_j : x) = f_j E_{n-1}(f_-j) / E_n(f) (spec ``robustness.md``; for n = 1,
    o_j / Σ o with o = f / (1 − f)); ``inf`` when some E_n(f) = 0 (undefined).
    """
    from .._kernels import possible_worlds as pw

    Fg = prep.F[prep.row_prof[rows]]                       # (N, nA, nX)
    cls = prep.row_cls[rows]
    N, nA, nX = Fg.shape
    worst = 0.0
    for y in range(nX):
        k = int((cls == y + 1).sum())
        if k == 0:
            continue
        f = Fg[:, :, y]
        if k == 1 and (f < 1.0).all():
            o = f / (1.0 - f)
            tot = o.sum(axis=0)
            if not (tot > 0).all():
                return math.inf
            worst = max(worst, float((o.max(axis=0) / tot).max()))
            continue
        off = np.arange(nA + 1, dtype=np.int64) * N
        p, _, _ = pw.binary_posteriors_csr(kernel_array(off, np.int64),
                                           kernel_array(np.ascontiguousarray(f.T).ravel(),
                                                        np.float64),
                                           kernel_array(np.full(nA, k), np.int64),
                                           int(pw.PREFIX_LIMIT), 1)
        if np.isnan(p).any():
            return math.inf
        worst = max(worst, float(p.max()))
    return worst


class _Groups:
    """Groups of an ART output with per-group f_min / f_max / X_s mask, for step 4."""

    def __init__(self, prep: ARTInput, gid: np.ndarray) -> None:
        self.prep = prep
        self.gid = gid.copy()
        G = int(gid.max()) + 1
        order = np.argsort(gid, kind="stable")
        starts = np.searchsorted(gid[order], np.arange(G))
        self.members = np.split(order, starts[1:])
        P, nA, nX = prep.F.shape
        flat = prep.F.reshape(P, nA * nX)[prep.row_prof[order]]
        self.lo = np.minimum.reduceat(flat, starts, axis=0)
        self.hi = np.maximum.reduceat(flat, starts, axis=0)
        hold = np.zeros((prep.row_cls.shape[0], nX), dtype=bool)
        s = prep.row_cls > 0
        hold[np.flatnonzero(s), prep.row_cls[s] - 1] = True
        self.ym = np.logical_or.reduceat(hold[order], starts, axis=0)
        self.size = np.diff(np.append(starts, gid.shape[0]))
        self.alive = np.ones(G, dtype=bool)
        self.nA, self.nX = nA, nX
        # candidates: every multi-row group, and one single row per (profile, class)
        key = prep.row_prof[order[starts]] * (nX + 1) + prep.row_cls[order[starts]]
        self.cand_single: dict[int, list[int]] = {}
        for g in np.flatnonzero(self.size == 1).tolist():
            self.cand_single.setdefault(int(key[g]), []).append(g)
        self.key = key
    def candidates(self) -> np.ndarray:
        multi = np.flatnonzero(self.alive & (self.size > 1))
        reps = [v[-1] for v in self.cand_single.values() if v]
        return np.concatenate([multi, np.asarray(reps, dtype=np.int64)])

    def harm_order(self, g: int) -> np.ndarray:
        """Candidates for stranded group g, least harm first.

        Harm of merging g into C: m-uniqueness kept first, then the increase of C's Δ summed
        over attribute sets and the X_s values the merged group holds
        (Σ_A,x [max(f_max) − min(f_min) − Δ_C]), then the smaller merged group.
        """
        C = self.candidates()
        C = C[C != g]
        if C.size == 0:
            return C
        nA, nX = self.nA, self.nX
        lo = np.minimum(self.lo[C], self.lo[g]).reshape(-1, nA, nX)
        hi = np.maximum(self.hi[C], self.hi[g]).reshape(-1, nA, nX)
        before = (self.hi[C] - self.lo[C]).reshape(-1, nA, nX)
        ym = self.ym[C] | self.ym[g]
        harm = (((hi - lo) - before) * ym[:, None, :]).sum(axis=(1, 2))
        shared = (self.ym[C] & self.ym[g]).any(axis=1)
        return C[np.lexsort((self.size[C], harm, shared))]

    def merge(self, g: int, c: int) -> None:
        """Merge group g into group c."""
        for grp in (g, c):
            if self.size[grp] == 1:
                lst = self.cand_single.get(int(self.key[grp]))
                if lst and grp in lst:
                    lst.remove(grp)
        self.members[c] = np.concatenate([self.members[c], self.members[g]])
        self.lo[c] = np.minimum(self.lo[c], self.lo[g])
        self.hi[c] = np.maximum(self.hi[c], self.hi[g])
        self.ym[c] |= self.ym[g]
        self.size[c] += self.size[g]
        self.alive[g] = False
        self.gid[self.members[g]] = c

    def drop(self, g: int) -> None:
        if self.size[g] == 1:
            lst = self.cand_single.get(int(self.key[g]))
            if lst and g in lst:
                lst.remove(g)
        self.alive[g] = False
        self.gid[self.members[g]] = -1


#: Candidates whose merged group is checked exactly, per stranded group.
RESCUE_TRIES = 16


def _resolve_stranded(prep: ARTInput, gid: np.ndarray, unsat: np.ndarray, rf: float,
                      condition: str, on_unsatisfied: str) -> tuple[np.ndarray, dict]:
    """Spec ``robustness.md`` ART step 4: no stranded group is published silently.

    A *stranded* group holds an X_s value, fails the run's condition and is not r-robust by
    the exact binary posterior (under ``condition="delta"`` a group failing only Theorem 1's
    sufficient test is counted in ``n_delta_only_rows`` and kept). ``"merge"`` /
    ``"suppress"``: each stranded group (in order of its smallest row) is merged into the
    candidate of least harm (see :meth:`_Groups.harm_order`) whose merged group is r-robust
    exactly (``n_rescued_groups``); when none of the first :data:`RESCUE_TRIES` is, it is
    merged into the least-harm one anyway (``"merge"``, ``n_merged_unsatisfied_groups``)
    or its rows are suppressed (``"suppress"``, ``n_suppressed_rows``). ``"report"`` /
    ``"raise"`` change nothing (the caller reports or raises).
    """
    thr = (1.0 / rf) * (1.0 + 1e-12)
    counts = {"on_unsatisfied": on_unsatisfied, "n_stranded_groups": 0,
              "n_stranded_rows": 0, "n_delta_only_rows": 0, "n_rescued_groups": 0,
              "n_merged_unsatisfied_groups": 0, "n_suppressed_groups": 0,
              "n_suppressed_rows": 0}
    bad_groups = np.unique(gid[unsat == 1])
    if bad_groups.size == 0:
        return gid, counts
    S = _Groups(prep, gid)
    stranded = []
    for g in bad_groups.tolist():
        if _group_max_posterior(prep, S.members[g]) <= thr:
            counts["n_delta_only_rows"] += int((unsat[S.members[g]] == 1).sum())
        else:
            stranded.append(g)
    counts["n_stranded_groups"] = len(stranded)
    counts["n_stranded_rows"] = int(sum((prep.row_cls[S.members[g]] > 0).sum()
                                        for g in stranded))
    if on_unsatisfied not in ("merge", "suppress") or not stranded:
        return gid, counts
    anyway: list[int] = []
    for g in sorted(stranded, key=lambda g: int(S.members[g].min())):
        if not S.alive[g]:
            continue
        if _group_max_posterior(prep, S.members[g]) <= thr:   # fixed by an earlier merge
            continue
        order = S.harm_order(g)
        done = False
        for c in order[:RESCUE_TRIES].tolist():
            rows = np.concatenate([S.members[c], S.members[g]])
            if _group_max_posterior(prep, rows) <= thr:
                S.merge(g, c)
                counts["n_rescued_groups"] += 1
                done = True
                break
        if done:
            continue
        if on_unsatisfied == "merge":
            if order.size:
                S.merge(g, int(order[0]))
                counts["n_merged_unsatisfied_groups"] += 1
                anyway.append(int(order[0]))
            else:                                  # no other group at all: kept, counted
                anyway.append(g)
        else:
            counts["n_suppressed_groups"] += 1
            counts["n_suppressed_rows"] += int(S.size[g])
            S.drop(g)
    # rows still unsatisfied: in the groups merged into anyway (exact posterior)
    left = 0
    final = set()
    for c in anyway:
        while c >= 0 and not S.alive[c]:
            c = int(S.gid[S.members[c][0]])
        if c >= 0:
            final.add(c)
    for c in sorted(final):
        if _group_max_posterior(prep, S.members[c]) > thr:
            left += int((prep.row_cls[S.members[c]] > 0).sum())
    counts["n_unsatisfied_after"] = left
    return S.gid, counts


# ---------------------------------------------------------------------- CLI plugin
def _cli_arguments(g: Any) -> None:
    from .._flags import real_gt1

    g.add_argument("--r", type=real_gt1, metavar="R",
                   help="ART: r-robustness parameter (every posterior <= 1/r)")
    g.add_argument("--art-sensitive-values", nargs="+", metavar="VALUE",
                   help="ART: the sensitive value set X_s (default: every value)")
    g.add_argument("--art-max-set-size", type=int, metavar="N",
                   help="ART: largest attribute set of the derived knowledge (default all)")
    g.add_argument("--art-as-one-value", action="store_true",
                   help="ART: count --art-sensitive-values as one sensitive value (the set)")
    g.add_argument("--art-condition", choices=("delta", "exact"), default="delta",
                   help="ART: stop merging at Theorem 1's Δ condition (default) or at the "
                        "exact posterior")
    g.add_argument("--art-pad", action="store_true",
                   help="ART: give every group at least ceil(r) rows")
    g.add_argument("--art-on-unsatisfied", choices=("suppress", "merge", "report", "raise"),
                   default="suppress",
                   help="ART: a group still failing the condition when no merge makes it "
                        "robust: suppress it (default), merge it into the least-harm group "
                        "anyway, keep it (counted), or fail; a release that then fails "
                        "r-robustness is not written")
    g.add_argument("--art-report", action="store_true",
                   help="ART: same as --art-on-unsatisfied report")


def _cli_run(args: Any, data: Any, criterion: Any) -> Anonymized:
    if getattr(args, "r", None) is None:
        raise InputError("--method art needs --r (r-robustness)")
    if criterion is not None:
        raise InputError("--method art takes only --r (and --art-* options); drop "
                         "--min-size/--l/--t/--alpha/--c")
    return art(data, qi=args.qi, sensitive=args.sensitive, r=args.r,
               sensitive_values=args.art_sensitive_values, max_set_size=args.art_max_set_size,
               as_one_value=bool(args.art_as_one_value), condition=args.art_condition,
               pad=bool(args.art_pad),
               nulls=args.nulls, weight=getattr(args, "weight", None),
               on_unsatisfied="report" if args.art_report else args.art_on_unsatisfied)


#: ``fastpriv anonymize --method art`` (see :mod:`fastpriv.cli.anonymize`).
CLI_METHOD = ("art", _cli_arguments, _cli_run)
