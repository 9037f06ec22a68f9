"""Background knowledge as QI-based distributions p(signature : value) (Wong et al.).

An adversary knows, for one or more **attribute sets** A ⊆ QI, the probability p(s : x)
that a tuple whose values on A form the **signature** s holds the sensitive value x (e.g.
p(Japanese : heart disease) = 0.003). :class:`Knowledge` holds such distributions for any
number of attribute sets and is the shared building block of the r-robustness audit
(:mod:`fastpriv.robustness`), the foreground attack and the ART anonymizer.

Where knowledge comes from
--------------------------
* the user: :meth:`Knowledge.from_table` (a table of signature columns, value, probability;
  one attribute set, or a long table naming the attribute set of each row),
  :meth:`Knowledge.from_dict` (small examples) or :meth:`Knowledge.from_arrays` (a miner
  that already has arrays, e.g. the foreground attack);
* the original table: :meth:`Knowledge.derive` — the true conditional frequencies
  #(s ∧ x) / #s for every attribute subset of the QI up to a size limit (the worst case:
  the adversary's distributions are accurate), keeping signatures with a **reliable
  sample** |S| ≥ ln(2/δ) / (2ε²) (Hoeffding); the others fall back to the global rate of x
  (spec robustness.md and foreground.md §"Signatures and reliable samples"). Attribute sets
  are enumerated Apriori-style: a set none of whose signatures is reliable is dropped,
  and so are all its supersets (their signatures are rarer still).

Array-packed representation
---------------------------
Sensitive values are the sorted labels ``values``; every QI column has a sorted label
``domain`` shared by all attribute sets. For an attribute set A, signature i is stored as
the mixed-radix key Σ_a code_a · stride_a (int64; the first attribute most significant, so
signatures are in lexicographic order of their labels; sorted, so lookups are one
``searchsorted``) and its probabilities as row i of a read-only ``(n_signatures, n_values)``
float64 matrix; NaN marks a (signature, value) pair that was not given. Models read:

* :meth:`Knowledge.signature_index` — the signature of every row of a table (-1 unknown);
* :meth:`Knowledge.probability_matrix` — ``(n_signatures + 1, len(labels))`` for the
  value labels of a release, the extra last row being the **fallback** (used for unknown
  signatures and for unspecified pairs; NaN where no fallback exists).

Validation: probabilities must be finite and in [0, 1]; a (signature, value) pair may be
given once; in the multi-valued model (``model="multivalued"`` or
:meth:`Knowledge.check_multivalued`) each signature's probabilities must sum to ≤ 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import as_table, canonical_labels
from ._validation import (
    check_choice,
    check_column_names,
    check_columns,
    check_int,
    check_max_set_size,
    check_real,
)
from .errors import InputError, InputTypeError

__all__ = ["Knowledge", "reliable_support", "support_threshold", "MODELS"]

MODELS = ("binary", "multivalued")
_SUM_TOL = 1e-9
_MAX_KEY = 1 << 62


def reliable_support(epsilon: float = 0.01, confidence: float = 0.9) -> int:
    """Smallest reliable sample size ⌈ln(2/δ) / (2ε²)⌉ (Hoeffding), δ = ``confidence``.

    Wong et al. (Section 4, Theorem 1 of the foreground paper) call a sample of this
    many tuples reliable: its observed frequency is within ``epsilon`` of the true
    probability (Hoeffding: P(|error| > ε) ≤ 2·exp(-2Jε²) = δ). The papers use ε = 0.01,
    δ = 0.9, which gives 3,993. (Δ / ``delta`` means only the r-robustness Δ bound.)
    """
    eps = check_real(epsilon, "epsilon")
    dl = check_real(confidence, "confidence")
    if not 0 < eps:
        raise InputError(f"epsilon must be > 0, got {epsilon!r}")
    if not 0 < dl < 2:
        raise InputError(f"confidence must be in (0, 2), got {confidence!r}")
    return max(1, math.ceil(math.log(2.0 / dl) / (2.0 * eps * eps) - 1e-9))


def _as_set(attrs: Any, param: str) -> tuple[str, ...]:
    return tuple(check_column_names(attrs, param))


@dataclass(frozen=True, eq=False)
class _SetData:
    attributes: tuple[str, ...]
    strides: np.ndarray        # int64 per attribute
    keys: np.ndarray           # int64 sorted
    probs: np.ndarray          # (n_sig, n_values) float64, NaN = not given
    support: np.ndarray | None  # int64 rows per signature (derived knowledge)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class Knowledge:
    """QI-based distributions p(signature : value) for one or more attribute sets.

    Build with :meth:`derive`, :meth:`from_table`, :meth:`from_dict` or
    :meth:`from_arrays`; combine several with :meth:`combine`.

    Attributes
    ----------
    attribute_sets : list of tuple of str
    values : list
        Sensitive value labels, sorted (column ``k`` of every matrix is ``values[k]``).
    fallback : dict or float or None
        Probability used for signatures absent from the knowledge and for unspecified
        pairs: the global rates for derived knowledge.
    info : dict
        Provenance: source, ε, δ, reliable sample size, pruned attribute sets, coverage.

    """

    def __init__(self, *, values: pa.Array, domains: dict[str, pa.Array],
                 sets: dict[tuple[str, ...], _SetData], fallback: Any = None,
                 info: dict | None = None) -> None:
        self._values = values
        self._domains = domains
        self._sets = sets
        self._fallback = fallback
        self._info = dict(info or {})
        self._value_index = {v: i for i, v in enumerate(values.to_pylist())}

    # ------------------------------------------------------------------ facts
    @property
    def attribute_sets(self) -> list[tuple[str, ...]]:
        """The attribute sets, in insertion order (derived: by size, then QI order)."""
        return list(self._sets)

    @property
    def values(self) -> list:
        """Sensitive value labels (sorted)."""
        return self._values.to_pylist()

    @property
    def columns(self) -> list[str]:
        """Every QI column used by some attribute set."""
        return list(self._domains)

    @property
    def fallback(self) -> Any:
        """The fallback probabilities (mapping value -> p, a float for every value, or None)."""
        if isinstance(self._fallback, dict):
            return dict(self._fallback)
        return self._fallback

    @property
    def info(self) -> dict:
        """Provenance and summary statistics."""
        return dict(self._info)

    def domain(self, column: str) -> list:
        """Sorted labels of a QI column known to this knowledge."""
        self._check_column(column)
        return self._domains[column].to_pylist()

    def n_signatures(self, attribute_set: Any) -> int:
        """Count the signatures with a distribution for ``attribute_set``."""
        return int(self._set(attribute_set).keys.shape[0])

    def matrix(self, attribute_set: Any) -> np.ndarray:
        """Read-only ``(n_signatures, n_values)`` probabilities (NaN = not given)."""
        return self._set(attribute_set).probs

    def support(self, attribute_set: Any) -> np.ndarray | None:
        """Rows per signature for derived knowledge (``None`` for user knowledge)."""
        return self._set(attribute_set).support

    def signatures(self, attribute_set: Any) -> pa.Table:
        """Return the signatures of ``attribute_set`` as a table (a column per attribute)."""
        sd = self._set(attribute_set)
        codes = self._decode(sd)
        return pa.table({a: self._domains[a].take(pa.array(codes[:, i]))
                         for i, a in enumerate(sd.attributes)})

    def __repr__(self) -> str:
        sets = ", ".join("(" + ", ".join(a) + ")" for a in list(self._sets)[:4])
        more = f", … {len(self._sets)} sets" if len(self._sets) > 4 else ""
        return (f"Knowledge({len(self._sets)} attribute set(s): {sets}{more}; "
                f"{len(self._values)} values)")

    # ------------------------------------------------------------------ lookups
    def _set(self, attribute_set: Any) -> _SetData:
        key = _as_set(attribute_set, "attribute_set")
        try:
            return self._sets[key]
        except KeyError:
            shown = ", ".join(str(s) for s in list(self._sets)[:10])
            raise InputError(f"attribute_set {key} is not in this knowledge; known: "
                             f"{shown}") from None

    def _check_column(self, column: str) -> None:
        if column not in self._domains:
            raise InputError(f"column {column!r} is not used by this knowledge; columns: "
                             f"{', '.join(self._domains)}")

    def _decode(self, sd: _SetData) -> np.ndarray:
        k = len(sd.attributes)
        codes = np.empty((sd.keys.shape[0], k), dtype=np.int64)
        rest = sd.keys.copy()
        for i in range(k):                 # strides decrease: first attribute most significant
            codes[:, i] = rest // sd.strides[i]
            rest = rest - codes[:, i] * sd.strides[i]
        return codes

    def column_codes(self, data: Any, column: str) -> np.ndarray:
        """Codes of a data column in this knowledge's domain (int64, -1 = unknown label)."""
        self._check_column(column)
        table = data if isinstance(data, pa.Table) else as_table(data, [column], param="data")
        check_columns([column], table.column_names, "data")
        col = table.column(column)
        dom = self._domains[column]
        ctype = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
        if _family(ctype) != _family(dom.type):
            raise InputTypeError(f"column {column!r} has type {col.type} but the knowledge's "
                            f"signatures for it have type {dom.type}")
        try:
            if ctype != dom.type:
                col = col.cast(dom.type)
            idx = pc.index_in(col, value_set=dom)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InputTypeError(f"column {column!r} ({col.type}) cannot be matched with the "
                            f"knowledge's signatures ({dom.type}): {exc}") from None
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def signature_index(self, data: Any, attribute_set: Any, *,
                        column_codes: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Signature of every row of ``data`` for ``attribute_set`` (int64, -1 = unknown).

        ``data`` is a table or a :class:`fastpriv.rows.RowView` (its codes are mapped to
        this knowledge's domains label by label, not row by row). ``column_codes`` caches
        the per-row codes per column across attribute sets.
        """
        from .rows import RowView

        sd = self._set(attribute_set)
        if isinstance(data, RowView):
            data.require(sd.attributes, param="knowledge")
            n = data.n_rows
        else:
            data = data if isinstance(data, pa.Table) else as_table(data, list(sd.attributes),
                                                                     param="data")
            check_columns(sd.attributes, data.column_names, "data")
            n = data.num_rows
        key = np.zeros(n, dtype=np.int64)
        bad = np.zeros(n, dtype=bool)
        for i, a in enumerate(sd.attributes):
            if column_codes is not None and a in column_codes:
                c = column_codes[a]
            else:
                c = self._row_codes(data, a)
                if column_codes is not None:
                    column_codes[a] = c
            bad |= c < 0
            key += np.where(c < 0, 0, c) * sd.strides[i]
        pos = np.searchsorted(sd.keys, key)
        pos = np.minimum(pos, max(sd.keys.shape[0] - 1, 0))
        found = ~bad & (sd.keys.shape[0] > 0)
        if sd.keys.shape[0]:
            found &= sd.keys[pos] == key
        return np.where(found, pos, -1).astype(np.int64)

    def _row_codes(self, data: Any, column: str) -> np.ndarray:
        """Per-row codes of ``column`` in this knowledge's domain (table or row view)."""
        from .rows import RowView

        if isinstance(data, RowView):
            by_label = self.column_codes(pa.table({column: data.qi_labels[column]}), column)
            return by_label[data.qi_codes[column]]
        return self.column_codes(data, column)

    def fallback_for(self, label: Any) -> float:
        """Fallback probability of one value (NaN when there is none)."""
        fb = self._fallback
        if fb is None:
            return math.nan
        if isinstance(fb, dict):
            return float(fb.get(label, math.nan))
        return float(fb)

    def probability_matrix(self, attribute_set: Any, labels: Sequence[Any]) -> np.ndarray:
        """``(n_signatures + 1, len(labels))`` float64: p(signature : label), fallback row last.

        Unspecified pairs take the fallback of their value; NaN remains where there is no
        fallback (a model that needs such an entry raises, naming it).
        """
        sd = self._set(attribute_set)
        ns = sd.keys.shape[0]
        out = np.full((ns + 1, len(labels)), np.nan, dtype=np.float64)
        for i, lab in enumerate(labels):
            k = self._value_index.get(lab, -1)
            if k >= 0:
                out[:ns, i] = sd.probs[:, k]
            fb = self.fallback_for(lab)
            out[ns, i] = fb
            if not math.isnan(fb):
                col = out[:ns, i]
                col[np.isnan(col)] = fb
        return out

    def describe_missing(self, attribute_set: Any, sig: int, label: Any) -> str:
        """Human-readable name of a (signature, value) pair for error messages."""
        sd = self._set(attribute_set)
        if 0 <= sig < sd.keys.shape[0]:
            codes = self._decode(sd)[sig]
            s = tuple(self._domains[a][int(c)].as_py()
                      for a, c in zip(sd.attributes, codes, strict=True))
        else:
            s = "<signature not in the knowledge>"
        return f"p({s} : {label!r}) for attribute set {sd.attributes}"

    # ------------------------------------------------------------------ checks
    def check_multivalued(self) -> None:
        """Raise ``ValueError`` unless every signature's probabilities sum to ≤ 1."""
        for A, sd in self._sets.items():
            sums = np.nansum(sd.probs, axis=1)
            bad = np.flatnonzero(sums > 1.0 + _SUM_TOL)
            if bad.size:
                i = int(bad[0])
                codes = self._decode(sd)[i]
                s = tuple(self._domains[a][int(c)].as_py() for a, c in zip(A, codes, strict=True))
                raise InputError(
                    f"knowledge: in the multi-valued model the probabilities of a signature "
                    f"must sum to <= 1, but signature {s} of attribute set {A} sums to "
                    f"{sums[i]:.12g} ({bad.size} such signature{'s' if bad.size > 1 else ''})")
        fb = self._fallback
        if isinstance(fb, dict):
            tot = sum(fb.values())
            if tot > 1.0 + _SUM_TOL:
                raise InputError(f"knowledge: fallback probabilities sum to {tot:.12g} > 1 "
                                 "(multi-valued model)")

    # ------------------------------------------------------------------ export
    def to_table(self) -> pa.Table:
        """Export the long form.

        Columns ``attributes`` (comma-joined set), one per QI column (null where the column
        is not in the set), ``value``, ``probability`` and ``support``;
        :meth:`from_table` with ``set_column="attributes"`` reads it back.
        """
        cols: dict[str, list] = {"attributes": []}
        for c in self._domains:
            cols[c] = []
        cols["value"] = []
        cols["probability"] = []
        cols["support"] = []
        vals = self.values
        for A, sd in self._sets.items():
            codes = self._decode(sd)
            labels = {a: self._domains[a].to_pylist() for a in A}
            for i in range(sd.keys.shape[0]):
                for k, v in enumerate(vals):
                    p = sd.probs[i, k]
                    if math.isnan(p):
                        continue
                    cols["attributes"].append(",".join(A))
                    for c in self._domains:
                        cols[c].append(labels[c][codes[i, A.index(c)]] if c in A else None)
                    cols["value"].append(v)
                    cols["probability"].append(float(p))
                    cols["support"].append(None if sd.support is None else int(sd.support[i]))
        types = {c: self._domains[c].type for c in self._domains}
        arrays = {"attributes": pa.array(cols["attributes"], pa.string())}
        for c in self._domains:
            arrays[c] = pa.array(cols[c], types[c])
        arrays["value"] = pa.array(cols["value"], self._values.type)
        arrays["probability"] = pa.array(cols["probability"], pa.float64())
        arrays["support"] = pa.array(cols["support"], pa.int64())
        return pa.table(arrays)

    def restrict(self, attribute_sets: Iterable[Any]) -> "Knowledge":
        """Return a knowledge object with only the given attribute sets."""
        keep = [_as_set(a, "attribute_sets") for a in attribute_sets]
        sets = {}
        for A in keep:
            sets[A] = self._set(A)
        used = {c for A in sets for c in A}
        doms = {c: d for c, d in self._domains.items() if c in used}
        return Knowledge(values=self._values, domains=doms, sets=sets,
                         fallback=self._fallback, info=self._info)

    # ------------------------------------------------------------------ construction
    @classmethod
    def _build(cls, raw: list[tuple[tuple[str, ...], dict[str, pa.Array], pa.Array,
                                    np.ndarray, np.ndarray | None]],
               *, fallback: Any, model: str | None, info: dict,
               values: pa.Array | None = None) -> "Knowledge":
        """Build from raw rows, one entry per attribute set.

        Each entry is (A, {column: labels per row}, value labels per row, probability per
        row, support per row or None). Rows with the same signature are merged; a
        (signature, value) pair given twice is an error.
        """
        if model is not None:
            check_choice(model, "model", MODELS)
        if values is None:
            allv = [canonical_labels(v) for _, _, v, _, _ in raw if len(v)]
            if not allv:
                raise InputError("knowledge is empty: no (signature, value, probability) rows")
            values = _unique_sorted(_concat(allv, "value"))
        else:
            values = canonical_labels(values)
        # shared per-column domains
        percol: dict[str, list[pa.Array]] = {}
        for A, sig, _, _, _ in raw:
            for a in A:
                percol.setdefault(a, []).append(canonical_labels(sig[a]))
        domains = {c: _unique_sorted(_concat(arrs, c)) for c, arrs in percol.items()}
        sets: dict[tuple[str, ...], _SetData] = {}
        nv = len(values)
        for A, sig, vals, probs, support in raw:
            if A in sets:
                raise InputError(f"attribute set {A} given twice")
            strides = np.ones(len(A), dtype=np.int64)
            span = 1
            for i in range(len(A) - 1, -1, -1):   # lexicographic key order
                strides[i] = span
                span *= max(len(domains[A[i]]), 1)
                if span >= _MAX_KEY:
                    raise InputError(f"attribute set {A}: too many signature combinations "
                                     f"(> 2^62) to index; use smaller attribute sets")
            n = len(vals)
            key = np.zeros(n, dtype=np.int64)
            for i, a in enumerate(A):
                c = pc.index_in(canonical_labels(sig[a]), value_set=domains[a])
                key += c.to_numpy(zero_copy_only=False).astype(np.int64) * strides[i]
            vcode = pc.index_in(canonical_labels(vals), value_set=values)
            if vcode.null_count:
                raise InputError(f"attribute set {A}: value labels not in values")
            vcode = vcode.to_numpy(zero_copy_only=False).astype(np.int64)
            probs = np.asarray(probs, dtype=np.float64)
            _check_probs(probs, A, sig, vals)
            ukeys, inv = np.unique(key, return_inverse=True)
            cell = inv.astype(np.int64) * nv + vcode
            order = np.argsort(cell, kind="stable")
            dup = np.flatnonzero(np.diff(cell[order]) == 0)
            if dup.size:
                i = int(order[dup[0]])
                s = tuple(sig[a][i].as_py() for a in A)
                raise InputError(f"attribute set {A}: p({s} : {vals[i].as_py()!r}) is given "
                                 "more than once")
            mat = np.full((ukeys.shape[0], nv), np.nan, dtype=np.float64)
            mat[inv, vcode] = probs
            sup = None
            if support is not None:
                sup = np.zeros(ukeys.shape[0], dtype=np.int64)
                sup[inv] = support
                sup = _ro(sup)
            sets[A] = _SetData(attributes=A, strides=_ro(strides), keys=_ro(ukeys),
                               probs=_ro(mat), support=sup)
        fb = _check_fallback(fallback, values)
        k = cls(values=values, domains=domains, sets=sets, fallback=fb, info=info)
        if model == "multivalued":
            k.check_multivalued()
        return k

    @classmethod
    def from_arrays(cls, attribute_set: Any, signatures: Any, values: Sequence[Any],
                    probabilities: Any, *, fallback: Any = None, support: Any = None,
                    model: str | None = None) -> "Knowledge":
        """One attribute set from arrays: a dense ``(n_signatures, n_values)`` matrix.

        Parameters
        ----------
        attribute_set : str or sequence of str
            The attributes of the set.
        signatures : table-like or mapping column -> sequence
            One row per signature with a column per attribute of the set.
        values : sequence
            Sensitive value labels of the matrix columns.
        probabilities : array-like (n_signatures, len(values))
            p(signature : value); NaN = not given.
        fallback : float or mapping, optional
            See :meth:`from_table`.
        model : {"binary", "multivalued"}, optional
            See :meth:`from_table`.
        support : array-like of int, optional
            Sample size behind each signature (shown in reports).

        """
        A = _as_set(attribute_set, "attribute_set")
        sig = as_table(signatures, param="signatures") if not isinstance(signatures, Mapping) \
            else pa.table({k: pa.array(list(v)) for k, v in signatures.items()})
        check_columns(A, sig.column_names, "signatures")
        P = np.asarray(probabilities, dtype=np.float64)
        vals = list(values)
        if P.ndim != 2 or P.shape != (sig.num_rows, len(vals)):
            raise InputError(f"probabilities must have shape (n_signatures, n_values) = "
                             f"({sig.num_rows}, {len(vals)}), got {P.shape}")
        ns, nv = P.shape
        keep = ~np.isnan(P)
        rows, cols = np.nonzero(keep)
        sigcols = {a: sig.column(a).combine_chunks().take(pa.array(rows)) for a in A}
        varr = pa.array(vals).take(pa.array(cols))
        sup = None
        if support is not None:
            s = np.asarray(support, dtype=np.int64)
            if s.shape != (ns,):
                raise InputError(f"support must have one entry per signature ({ns})")
            sup = s[rows]
        return cls._build([(A, sigcols, varr, P[rows, cols], sup)], fallback=fallback,
                          model=model, info={"source": "arrays"},
                          values=_unique_sorted(pa.array(vals)))

    @classmethod
    def from_table(cls, data: Any, *, attribute_set: Any = None, set_column: str | None = None,
                   value: str = "value", probability: str = "probability",
                   fallback: Any = None, model: str | None = None) -> "Knowledge":
        """Knowledge from a table of (signature columns, value, probability) rows.

        Parameters
        ----------
        data : table-like
            pyarrow/pandas/polars table, Parquet/CSV path, dict of columns.
        attribute_set : str or sequence of str, optional
            The signature columns, when the table describes one attribute set.
        set_column : str, optional
            Long form instead: this column names each row's attribute set (comma-joined
            column names, e.g. ``"race,sex"``); the row's signature is read from those
            columns (the others are ignored / null). Give exactly one of the two.
        value, probability : str
            Column names of the sensitive value and of p(signature : value).
        fallback : float or mapping value -> float, optional
            Probability for signatures absent from the table and unspecified pairs
            (e.g. the global rates). Without it, a model that needs such an entry raises.
        model : {"binary", "multivalued"}, optional
            ``"multivalued"`` also checks that each signature's probabilities sum to ≤ 1.

        Examples
        --------
        >>> k = Knowledge.from_table({"nationality": ["American", "Japanese"],
        ...                           "value": ["heart", "heart"],
        ...                           "probability": [0.1, 0.003]},
        ...                          attribute_set="nationality")
        >>> k.attribute_sets
        [('nationality',)]

        """
        if (attribute_set is None) == (set_column is None):
            raise InputError("give exactly one of attribute_set= (one attribute set) or "
                             "set_column= (long form naming each row's attribute set)")
        table = as_table(data, param="data")
        check_columns([value, probability], table.column_names, "data")
        ptype = table.schema.field(probability).type
        if not (pa.types.is_floating(ptype) or pa.types.is_integer(ptype)
                or pa.types.is_decimal(ptype)):
            raise InputTypeError(f"probability column {probability!r} must be numeric, got {ptype}")
        for c in (value, probability):
            if table.column(c).null_count:
                raise InputError(f"column {c!r} has {table.column(c).null_count} nulls")
        probs = table.column(probability).to_numpy().astype(np.float64)
        vals = table.column(value).combine_chunks()
        raw = []
        if attribute_set is not None:
            A = _as_set(attribute_set, "attribute_set")
            check_columns(A, table.column_names, "attribute_set")
            for a in A:
                if table.column(a).null_count:
                    raise InputError(f"signature column {a!r} has "
                                     f"{table.column(a).null_count} nulls")
            raw.append((A, {a: table.column(a).combine_chunks() for a in A}, vals, probs, None))
        else:
            check_columns([set_column], table.column_names, "set_column")
            names = table.column(set_column)
            if names.null_count:
                raise InputError(f"set_column {set_column!r} has nulls")
            names_np = np.asarray(names.to_pylist(), dtype=object)
            for name in dict.fromkeys(names_np.tolist()):
                A = tuple(s.strip() for s in str(name).split(",") if s.strip())
                A = _as_set(A, f"{set_column} value {name!r}")
                check_columns(A, table.column_names, f"{set_column} value {name!r}")
                idx = pa.array(np.flatnonzero(names_np == name))
                sig = {a: table.column(a).combine_chunks().take(idx) for a in A}
                for a in A:
                    if sig[a].null_count:
                        raise InputError(f"attribute set {A}: signature column {a!r} has "
                                         "nulls in rows of that set")
                raw.append((A, sig, vals.take(idx), probs[idx.to_numpy()], None))
        return cls._build(raw, fallback=fallback, model=model, info={"source": "table"})

    @classmethod
    def from_dict(cls, mapping: Mapping, *, fallback: Any = None,
                  model: str | None = None) -> "Knowledge":
        """Knowledge from nested mappings (tests, docs, small examples).

        ``{attribute_set: {signature: {value: probability}}}``; an attribute set is a
        column name or a tuple of names, a signature a scalar (one attribute) or a tuple.

        Examples
        --------
        >>> k = Knowledge.from_dict({"nationality": {"American": {"heart": 0.1},
        ...                                          "Japanese": {"heart": 0.003}}})
        >>> float(k.matrix("nationality")[1, 0])
        0.003

        """
        if not isinstance(mapping, Mapping) or not mapping:
            raise InputTypeError("mapping must be a non-empty dict {attribute_set: {signature: "
                            "{value: probability}}}")
        raw = []
        for A_in, dist in mapping.items():
            A = _as_set(A_in, "attribute set")
            if not isinstance(dist, Mapping):
                raise InputTypeError(f"attribute set {A}: expected a dict signature -> "
                                f"{{value: probability}}, got {type(dist).__name__}")
            cols: dict[str, list] = {a: [] for a in A}
            vals, probs = [], []
            for s, row in dist.items():
                st = s if isinstance(s, tuple) else (s,)
                if len(st) != len(A):
                    raise InputError(f"attribute set {A}: signature {s!r} has {len(st)} "
                                     f"values, expected {len(A)}")
                if not isinstance(row, Mapping):
                    raise InputTypeError(f"attribute set {A}, signature {s!r}: expected a dict "
                                    f"value -> probability")
                for v, p in row.items():
                    for a, sv in zip(A, st, strict=True):
                        cols[a].append(sv)
                    vals.append(v)
                    probs.append(check_real(p, f"p({s!r} : {v!r})"))
            if not vals:
                raise InputError(f"attribute set {A} has no probabilities")
            try:
                sig = {a: pa.array(cols[a]) for a in A}
                varr = pa.array(vals)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InputTypeError(f"attribute set {A}: labels of one column must share one "
                                f"type: {exc}") from None
            raw.append((A, sig, varr, np.asarray(probs, dtype=np.float64), None))
        return cls._build(raw, fallback=fallback, model=model, info={"source": "dict"})

    @classmethod
    def derive(cls, data: Any, *, qi: Sequence[str], sensitive: str | None = None,
               max_set_size: int | None = None, epsilon: float = 0.01,
               confidence: float = 0.9, min_support: int | None = None,
               weight: str | None = None, nulls: str = "error") -> "Knowledge":
        """Derive the true conditional frequencies of an original table (worst case).

        For every attribute set A ⊆ ``qi`` with 1 ≤ |A| ≤ ``max_set_size`` and every
        signature s of A with a reliable sample, p(s : x) = #(s ∧ x) / #s. Unreliable
        signatures (#s below ``min_support``, by default ⌈ln(2/δ)/(2ε²)⌉ with δ =
        ``confidence`` — see :func:`reliable_support`) are not stored: they fall back to the
        global rate #x / n. Attribute sets without any reliable signature are dropped with
        all their supersets (Apriori; listed in ``info["pruned"]``); the mining is
        :func:`fastpriv.rows.mine_reliable_signatures`, shared with the foreground attack.

        Parameters
        ----------
        data : table-like or Release
            The original table (one row per individual, or distinct rows with a
            multiplicity column ``weight``), or a Release carrying a row view of ``qi``
            (``Release.from_table(..., qi=, group=)``): its rows are read, not re-encoded.
        qi : sequence of str
            Quasi-identifier columns.
        sensitive : str
            Sensitive column (default for a Release: its sensitive column).
        max_set_size : int, optional
            Largest attribute set size (default: all of ``qi``).
        epsilon, confidence : float
            Hoeffding parameters of the reliability rule (papers: 0.01 and 0.9).
        min_support : int, optional
            Explicit reliable sample size (overrides ε, δ; 1 keeps every signature).
        weight : str, optional
            Multiplicity column (tables only): a row counts ``weight`` times.
        nulls : {"error", "drop", "value"}
            Null policy for the used columns (tables only).

        """
        from .release import Release, derive_view

        qi = list(_as_set(qi, "qi"))
        if sensitive is None and isinstance(data, Release):
            sensitive = data.sensitive_name
        if not isinstance(sensitive, str):
            raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
        if sensitive in qi:
            raise InputError(f"sensitive column {sensitive!r} is also a qi column")
        ms = check_max_set_size(max_set_size, len(qi))
        J = support_threshold(min_support, epsilon, confidence)
        view = derive_view(data, qi=qi, sensitive=sensitive, weight=weight, nulls=nulls)
        n = view.n_units
        nv = len(view.values)
        vcode = view.sensitive.astype(np.int64)
        rates = view.counts(vcode, nv) / n
        domains = {c: canonical_labels(view.qi_labels[c]) for c in qi}
        sets, pruned, coverage = _derived_sets(view, qi, ms, J, vcode, nv)
        fallback = {v: float(r) for v, r in zip(view.values.to_pylist(), rates, strict=True)}
        info = {"source": "derived", "epsilon": float(epsilon), "confidence": float(confidence),
                "min_support": J, "max_set_size": ms, "n_rows": n,
                "dropped_nulls": view.dropped_nulls,
                "qi": qi, "sensitive": sensitive, "pruned": pruned,
                "coverage": coverage}
        return cls(values=canonical_labels(view.values), domains=domains, sets=sets,
                   fallback=fallback, info=info)

    @classmethod
    def combine(cls, *knowledges: "Knowledge", fallback: Any = "first") -> "Knowledge":
        """Union of the attribute sets of several knowledge objects (sets must differ).

        ``fallback="first"`` keeps the first object's fallback; pass a value to replace it.
        """
        if not knowledges:
            raise InputError("combine needs at least one Knowledge")
        for k in knowledges:
            if not isinstance(k, Knowledge):
                raise InputTypeError(f"combine takes Knowledge objects, got {type(k).__name__}")
        raw = []
        for k in knowledges:
            for A, sd in k._sets.items():
                codes = k._decode(sd)
                rows, cols = np.nonzero(~np.isnan(sd.probs))
                sig = {a: k._domains[a].take(pa.array(codes[rows, i]))
                       for i, a in enumerate(A)}
                vals = k._values.take(pa.array(cols))
                sup = None if sd.support is None else sd.support[rows]
                raw.append((A, sig, vals, sd.probs[rows, cols], sup))
        values = _unique_sorted(_concat([k._values for k in knowledges], "value"))
        fb = knowledges[0]._fallback if isinstance(fallback, str) and fallback == "first" \
            else fallback
        return cls._build(raw, fallback=fb, model=None, info={"source": "combined"},
                          values=values)


# ---------------------------------------------------------------------- helpers
def support_threshold(min_support: Any, epsilon: Any, confidence: Any) -> int:
    """Return the reliable sample size J: ``min_support`` or :func:`reliable_support`.

    Shared by :meth:`Knowledge.derive` and the foreground attack's miner.
    """
    if min_support is None:
        return reliable_support(epsilon, confidence)
    return check_int(min_support, "min_support", minimum=1)


def _derived_sets(view: Any, qi: list[str], max_set_size: int, J: int, vcode: np.ndarray,
                  nv: int) -> tuple[dict, list, dict]:
    """p(s : x) = #(s ∧ x) / #s over the reliable signatures of every attribute set."""
    from .rows import mine_reliable_signatures

    n = view.n_units
    sets: dict[tuple[str, ...], _SetData] = {}
    pruned: list[tuple[str, ...]] = []
    coverage: dict[str, float] = {}
    for A, rs in mine_reliable_signatures(view, qi, J, max_set_size, first_major=True,
                                          key_limit=_MAX_KEY // max(nv, 1)):
        if rs is None:
            pruned.append(A)
            continue
        ok = rs.var_rows >= 0
        m = rs.keys.shape[0]
        cell = rs.var_rows[ok].astype(np.int64) * nv + vcode[ok]
        w = None if view.weight is None else view.weight[ok]
        joint = (np.bincount(cell, minlength=m * nv) if w is None else
                 np.bincount(cell, weights=w, minlength=m * nv).astype(np.int64)).reshape(m, nv)
        probs = joint / rs.support[:, None]
        sets[A] = _SetData(attributes=A, strides=_ro(rs.strides), keys=_ro(rs.keys),
                           probs=_ro(probs.astype(np.float64)),
                           support=_ro(rs.support.astype(np.int64)))
        coverage[",".join(A)] = float(rs.support.sum() / n)
    return sets, pruned, coverage


def _family(t: pa.DataType) -> str:
    """Type family within which labels are compared (casts never cross families)."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or \
            getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    return str(t)


def _concat(arrays: list[pa.Array], what: str) -> pa.Array:
    t = arrays[0].type
    try:
        return pa.concat_arrays([a if a.type == t else a.cast(t) for a in arrays])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InputTypeError(f"{what} labels of different types cannot be combined: "
                             f"{exc}") from None


def _unique_sorted(arr: pa.Array) -> pa.Array:
    arr = canonical_labels(arr)
    if arr.null_count:
        raise InputError("labels must not be null")
    u = pc.unique(arr)
    return u.take(pc.array_sort_indices(u))


def _check_probs(probs: np.ndarray, A: tuple[str, ...], sig: dict[str, pa.Array],
                 vals: pa.Array) -> None:
    bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        s = tuple(sig[a][i].as_py() for a in A)
        what = "is not finite" if not np.isfinite(probs[i]) else "is outside [0, 1]"
        raise InputError(f"knowledge: p({s} : {vals[i].as_py()!r}) = {probs[i]!r} {what} "
                         f"(attribute set {A}; {int(bad.sum())} bad entr"
                         f"{'ies' if bad.sum() > 1 else 'y'})")


def _check_fallback(fallback: Any, values: pa.Array) -> Any:
    if fallback is None:
        return None
    if isinstance(fallback, Mapping):
        out = {}
        for v, p in fallback.items():
            pv = check_real(p, f"fallback[{v!r}]")
            if not 0.0 <= pv <= 1.0:
                raise InputError(f"fallback[{v!r}] must be in [0, 1], got {p!r}")
            out[v] = pv
        return out
    pv = check_real(fallback, "fallback")
    if not 0.0 <= pv <= 1.0:
        raise InputError(f"fallback must be in [0, 1], got {fallback!r}")
    return pv
