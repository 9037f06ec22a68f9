"""Anatomy (Xiao & Tao, VLDB 2006): ℓ-diverse bucketization with two published tables.

The table is partitioned into groups of ℓ or ℓ+1 rows whose sensitive values are all
distinct; Anatomy publishes the **QI table** (every row's exact QI values and its group id)
and the **sensitive table** (group id, value, count) — the link between a row and its value
is hidden inside the group. Algorithm (spec ``baselines.md``): hash rows by sensitive value;
while at least ℓ buckets are non-empty, take one row from each of the ℓ largest buckets
(seeded random choice of the row and of ties) to form a group; each residual row (at most
one per bucket) joins a group without its value. O(n log n) (a sort plus a heap over the
values; kernel :mod:`fastpriv._kernels.anatomy`).

Eligibility: no value may occur in more than n/ℓ rows — otherwise ``ValueError`` naming the
value and the largest feasible ℓ.

Sensitive value set (Wong et al.'s experiments, after MASK): with ``sensitive_values``,
only those values need protecting and they count as **one** value — each group holds at
most one row from the set, the other rows fill the groups at random. Eligibility is then
|rows with a sensitive value| ≤ n/ℓ. This is how the foreground-attack paper anatomizes
Adult with Education sensitive and {Preschool, 1st-4th, 5th-6th, 7th-8th} as the sensitive
set (its case study: a 5th-6th row grouped with one Bachelors row for ℓ = 2); plain
Anatomy on all 16 education values is not eligible beyond ℓ = 3 (HS-grad is 32.7 %).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .._validation import check_columns, check_int, kernel_array
from ..errors import InputError, InputTypeError
from ._result import Anonymized

__all__ = ["anatomy", "AnatomyResult", "CLI_METHOD"]


@dataclass(frozen=True, eq=False)
class AnatomyResult(Anonymized):
    """An Anatomy release with its two published tables.

    :class:`~fastpriv.anonymize.Anonymized` plus :meth:`qi_table`, :meth:`sensitive_table`
    (inherited) and :meth:`write_tables`. ``write(path, original)`` writes both tables
    (``<stem>.qi.parquet``, ``<stem>.sensitive.parquet``); :meth:`auditor_view` is the
    joined table (original rows with the group id) that :func:`fastpriv.foreground.attack`
    and :func:`fastpriv.robustness.audit` read — never a release.

    Attributes
    ----------
    mode : {"all values", "sensitive set"}
        Plain Anatomy, or Anatomy protecting ``sensitive_values`` as one value.
    residual_rows : int
        Rows placed after the ℓ-row rounds (at most one per value).
    group_size_counts : dict
        ``{group size: number of groups}``.
    dropped_nulls : int
        Rows dropped for a null sensitive value (``nulls="drop"``).
    max_value_count : int
        Rows holding the most frequent sensitive value.

    """

    qi: tuple = ()
    sensitive: str = ""
    group_column: str = "group_id"
    mode: str = "all values"
    residual_rows: int = 0
    group_size_counts: dict = field(default_factory=dict)
    dropped_nulls: int = 0
    max_value_count: int = 0
    source: Any = field(default=None, repr=False)

    def qi_table(self, original: Any = None) -> pa.Table:
        """Return the published QI table: the QI columns and the group id, in release order."""
        return self.release_tables(self._src(original),
                                   group_column=self.group_column)["qi"]

    def sensitive_table(self, original: Any = None, *, group_column: str | None = None,
                        count_column: str = "count") -> pa.Table:
        """Return the published sensitive table (group id, value, count), in release order."""
        return super().sensitive_table(self._src(original),
                                       group_column=group_column or self.group_column,
                                       count_column=count_column)

    def auditor_view(self, original: Any = None, *, group_column: str | None = None
                     ) -> pa.Table:
        """Return the joined auditor's view (see :meth:`Anonymized.auditor_view`); not a release."""
        return super().auditor_view(self._src(original),
                                    group_column=group_column or self.group_column)

    def write_tables(self, qi_path: str | os.PathLike, sensitive_path: str | os.PathLike, *,
                     original: Any = None, overwrite: bool = False,
                     format: str | None = None) -> tuple[str, str]:
        """Write both published tables (Parquet or CSV by suffix) as one unit."""
        from .._io import output_set, write_table

        src = self._src(original)
        inputs = [src] if isinstance(src, (str, os.PathLike)) else []
        if os.path.abspath(os.fspath(qi_path)) == os.path.abspath(os.fspath(sensitive_path)):
            raise InputError("qi_path and sensitive_path must differ")
        tables = self.release_tables(src, group_column=self.group_column)
        with output_set():
            a = write_table(qi_path, tables["qi"], overwrite=overwrite, format=format,
                            inputs=inputs)
            b = write_table(sensitive_path, tables["sensitive"], overwrite=overwrite,
                            format=format, inputs=inputs)
        return a, b

    def _src(self, original: Any) -> Any:
        src = self.source if original is None else original
        if src is None:
            raise InputError("original: the anonymized input table is needed (this result "
                             "keeps none)")
        return src


def anatomy(data: Any, *, sensitive: str, l: int, qi: Sequence[str] | None = None,  # noqa: E741
            seed: int = 0, sensitive_values: Sequence[Any] | None = None,
            nulls: str = "error", group_column: str = "group_id",
            weight: str | None = None) -> AnatomyResult:
    """ℓ-diverse bucketization by Anatomy (Xiao & Tao 2006; spec ``baselines.md``).

    Parameters
    ----------
    data : table-like
        pyarrow/pandas/polars table or a Parquet/CSV path, one row per individual.
    sensitive : str
        Sensitive column.
    l : int
        ℓ ≥ 1: every group gets ℓ or ℓ+1 rows with distinct sensitive values (with
        ``sensitive_values``: at most one row from the set). Groups can exceed ℓ+1 only when
        there are fewer groups than residual rows (n < ℓ(ℓ-1)).
    qi : sequence of str, optional
        Columns of the published QI table (default: every column but ``sensitive``).
    seed : int
        Seed of every random choice (rows within a bucket, ties, residual placement).
    sensitive_values : sequence, optional
        Protect only these values, as one sensitive value set (see the module docstring).
    nulls : {"error", "drop", "value"}
        Nulls in the sensitive column (``drop`` removes rows: their group id is -1).
    group_column : str
        Name of the group-id column of the published tables.
    weight : str, optional
        Multiplicity column, as everywhere in fastpriv: each row stands for ``weight``
        identical people (e.g. a ``GROUP BY`` count). Anatomy places every person on their
        own — the people of one row may land in different groups — so the table is
        expanded into one row per person first (the copies of a row consecutive, in input
        order; the weight column dropped) and the result is exactly that of the expanded
        table with the same ``seed``: its rows, group ids and ``source`` are the people's.
        Integers ≥ 0 without nulls (0: nobody); refused before expanding when the people
        would not fit in the free memory.

    Returns
    -------
    AnatomyResult

    Raises
    ------
    InputError
        When the table is not eligible: a value (or the sensitive set) occurs in more than
        n/ℓ rows; a ``weight`` column that is missing, a QI or the sensitive column, not
        integers ≥ 0, or of more people than fit in memory.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"age": [30, 41, 52, 23, 35, 60], "disease": list("aabbcc")})
    >>> res = anatomy(t, sensitive="disease", l=2, seed=1)
    >>> sorted(int(s) for s in res.release.sizes)
    [2, 2, 2]

    """
    from .._arrow import apply_null_policy, as_table, encode_column
    from ..release import Release
    from ._input import check_fits_in_memory

    if not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
    l = check_int(l, "l", minimum=1)  # noqa: E741
    seed = check_int(seed, "seed", minimum=0)
    if weight is not None:
        from . import _one_row_per_person

        used = [sensitive, *([qi] if isinstance(qi, str) else list(qi or []))]
        data = _one_row_per_person(data, weight, used)
    check_fits_in_memory(data, None)            # every column: the QI table publishes them
    src = as_table(data, param="data")
    qi = _check_qi(qi, src.column_names, sensitive, group_column)
    work = pa.table({"__row": pa.array(np.arange(src.num_rows, dtype=np.int64)),
                     sensitive: src.column(sensitive)})
    work, dropped = apply_null_policy(work, [sensitive], nulls)
    n = work.num_rows
    if n == 0:
        raise InputError("table has no rows")
    enc = encode_column(work.column(sensitive), name=sensitive)
    codes = enc.codes.astype(np.int64)
    labels = enc.labels.to_pylist()
    cnt = np.bincount(codes, minlength=len(labels))
    rng = np.random.default_rng(seed)
    if sensitive_values is None:
        group, _, residual = _all_values_mode(codes, cnt, labels, l, rng)
        mode = "all values"
    else:
        sv = [sensitive_values] if isinstance(sensitive_values, (str, bytes)) \
            else list(sensitive_values)
        is_s = _sensitive_set_rows(codes, labels, sv, sensitive, l)
        group, _, residual = _set_mode(is_s, l, rng)
        mode = "sensitive set"
    gid = np.full(src.num_rows, -1, dtype=np.int64)
    gid[work.column("__row").to_numpy()] = group
    rel = Release.from_table(pa.table({group_column: pa.array(group),
                                       sensitive: work.column(sensitive)}),
                             sensitive=sensitive, group=group_column)
    sizes, n_of_size = np.unique(np.asarray(rel.sizes), return_counts=True)
    params = {"l": l, "seed": seed, "sensitive": sensitive, "qi": list(qi),
              "sensitive_values": None if sensitive_values is None else sv,
              "criterion": f"anatomy l={l}"}
    return AnatomyResult(release=rel, group_ids=gid, method="anatomy", params=params,
                         qi=tuple(qi), sensitive=sensitive, group_column=group_column,
                         mode=mode, residual_rows=int(residual),
                         group_size_counts=dict(zip(sizes.tolist(), n_of_size.tolist(),
                                                    strict=True)),
                         dropped_nulls=int(dropped), max_value_count=int(cnt.max()),
                         source=data)


def _check_qi(qi: Sequence[str] | None, columns: list, sensitive: str,
              group_column: str) -> list[str]:
    """Return the QI columns (default: every column but ``sensitive``), checked."""
    check_columns([sensitive], columns, "sensitive")
    if qi is None:
        qi = [c for c in columns if c != sensitive]
    else:
        qi = [qi] if isinstance(qi, str) else list(qi)
        check_columns(qi, columns, "qi")
        if sensitive in qi:
            raise InputError(f"sensitive column {sensitive!r} is also a qi column")
    if group_column in qi or group_column == sensitive:
        raise InputError(f"group_column {group_column!r} clashes with an input column")
    return qi


def _all_values_mode(codes: np.ndarray, cnt: np.ndarray, labels: list, l: int,  # noqa: E741
                     rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """Plain Anatomy: check eligibility, then the ℓ-largest-buckets rounds (the kernel)."""
    from .._kernels.anatomy import anatomy_groups

    n = codes.shape[0]
    V = cnt.shape[0]
    top = int(cnt.argmax())
    if cnt[top] * l > n:
        raise InputError(
            f"table is not eligible for Anatomy with l={l}: value {labels[top]!r} occurs "
            f"in {int(cnt[top])} of {n} rows (more than n/l = {n / l:.6g}); the largest "
            f"feasible l is {n // int(cnt[top])}. Pass sensitive_values=[...] to require "
            "diversity only for sensitive values")
    key = rng.random(n)
    brows = np.lexsort((key, codes)).astype(np.int64)
    boff = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(cnt, out=boff[1:])
    prio = rng.random(V)
    gkey = rng.random(n // l + 1)
    group, ng, status = anatomy_groups(kernel_array(boff, np.int64),
                                       kernel_array(brows, np.int64),
                                       kernel_array(prio, np.float64), int(l),
                                       kernel_array(gkey, np.float64))
    if status != 0:  # pragma: no cover - excluded by the eligibility test
        raise RuntimeError(f"internal error in Anatomy (status {status})")
    return group, int(ng), int(n - ng * l)


def _sensitive_set_rows(codes: np.ndarray, labels: list, sv: list, sensitive: str,
                        l: int) -> np.ndarray:  # noqa: E741
    """Rows holding a value of the sensitive set, after checking the set's eligibility."""
    if not sv:
        raise InputError("sensitive_values is empty")
    idx = {v: i for i, v in enumerate(labels)}
    unknown = [v for v in sv if v not in idx]
    if unknown:
        raise InputError(f"sensitive_values: {unknown[:5]} do not occur in column "
                         f"{sensitive!r}; values: {labels[:20]}")
    is_s = np.isin(codes, np.asarray([idx[v] for v in sv], dtype=np.int64))
    n, ns = codes.shape[0], int(is_s.sum())
    if ns * l > n:
        raise InputError(
            f"table is not eligible for Anatomy with l={l}: the sensitive values occur "
            f"in {ns} of {n} rows (more than n/l = {n / l:.6g}); the largest feasible l "
            f"is {n // ns}")
    return is_s


def _set_mode(is_s: np.ndarray, l: int,  # noqa: E741
              rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """Form groups with at most one row of the sensitive set.

    Each sensitive row gets ℓ-1 random others, the remaining rows form random groups of ℓ,
    and residual rows join distinct groups.
    """
    n = is_s.shape[0]
    S = rng.permutation(np.flatnonzero(is_s))
    NS = rng.permutation(np.flatnonzero(~is_s))
    ns = S.shape[0]
    G = n // l
    residual = n - G * l
    group = np.empty(n, dtype=np.int64)
    group[S] = np.arange(ns)
    need = (l - 1) * ns
    group[NS[:need]] = np.repeat(np.arange(ns), l - 1)
    rest = NS[need:]
    full = (rest.shape[0] // l) * l
    group[rest[:full]] = ns + np.arange(full) // l
    left = rest[full:]
    if left.size:
        targets = rng.permutation(G)
        group[left] = targets[np.arange(left.size) % G]
    return group, G, residual


# ---------------------------------------------------------------------- CLI plugin
def _cli_arguments(g: Any) -> None:
    g.add_argument("--anatomy-seed", type=int, default=0, metavar="SEED",
                   help="Anatomy: seed of the random choices (default 0)")
    g.add_argument("--anatomy-sensitive-values", nargs="+", metavar="VALUE",
                   help="Anatomy: protect only these values, as one sensitive set (each group "
                        "holds at most one of them)")
    g.add_argument("--anatomy-tables", nargs=2, metavar=("QI_OUT", "SENSITIVE_OUT"),
                   help="Anatomy: also write the two published tables (Parquet/CSV)")


def _cli_run(args: Any, data: Any, criterion: Any) -> AnatomyResult:
    others = [o for o in ("min_size", "t", "alpha", "c", "k") if getattr(args, o, None) is not None]
    if others:
        raise InputError(f"--method anatomy only takes --l (ℓ-diversity); got "
                         f"{', '.join('--' + o.replace('_', '-') for o in others)}")
    if getattr(args, "l", None) is None:
        raise InputError("--method anatomy needs --l")
    if getattr(args, "l_kind", "distinct") != "distinct":
        raise InputError("--method anatomy produces distinct ℓ-diversity; drop --l-kind")
    ell = float(args.l)
    if ell != int(ell):
        raise InputError(f"--l must be an integer for Anatomy, got {args.l}")
    res = anatomy(data, sensitive=args.sensitive, l=int(ell), seed=args.anatomy_seed, qi=args.qi,
                  sensitive_values=args.anatomy_sensitive_values,
                  nulls="drop" if getattr(args, "nulls", "error") == "drop" else "error",
                  weight=getattr(args, "weight", None))
    if args.anatomy_tables:
        from .._io import announce_written

        for dest in res.write_tables(*args.anatomy_tables, overwrite=args.overwrite):
            announce_written(dest)
    return res


#: ``fastpriv anonymize --method anatomy`` (see :mod:`fastpriv.cli.anonymize`).
CLI_METHOD = ("anatomy", _cli_arguments, _cli_run)
