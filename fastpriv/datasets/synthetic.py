"""Seeded synthetic releases of any size: the benchmarks' workhorse.

Every generator here is a pure function of its arguments: the same arguments (``seed``
included) always give the same rows, in the same order, on every platform NumPy supports,
and :func:`synthetic_batches` yields exactly the rows of :func:`synthetic`, whatever
``batch_rows`` is.

How the rows are drawn (the determinism contract)
-------------------------------------------------
Rows are generated in fixed internal blocks of ``BLOCK_ROWS`` (2**20) rows. Block ``b`` uses
its own generator, ``numpy.random.Generator(PCG64(SeedSequence(seed, spawn_key=(0, b))))``,
so any block can be produced independently of the others; batches of any size are cut from
the stream of blocks. Within a block, columns are drawn in a fixed order: the grouping
(``group`` or ``q0, q1, …``) first, then ``sensitive``.

* ``group_size=s``: row ``r`` belongs to group ``r // s`` (by position, no randomness), so
  every group has exactly ``s`` rows and ``n_rows / s`` groups exist.
* ``n_groups=G``: each row's group is uniform on ``0..G-1``. To make every group non-empty
  when ``n_rows >= G``, the first ``min(n_rows, G)`` rows take the groups of one random
  permutation of ``0..G-1`` (drawn once from ``SeedSequence(seed, spawn_key=(1,))``), the
  remaining rows draw their group independently and uniformly.
* ``qi_cardinalities=[c0, c1, …]``: int32 columns ``q0, q1, …`` drawn independently and
  uniformly, ``q_j`` on ``0..c_j-1``; the groups are the distinct QI tuples.
* ``sensitive``: a ``dictionary<int32, string>`` column over the labels ``"v00", "v01", …``
  (zero-padded to the width of ``n_values - 1``), drawn uniformly or from a Zipf law with
  ``P(rank i) ∝ 1 / i**zipf_s`` (rank 1 = ``"v00"``). Zipf draws use inversion of the CDF
  (exactly ``searchsorted(cdf, u, side="right")`` for ``u = rng.random()``), sped up by a
  guide table.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, InputTypeError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pyarrow as pa

# NumPy, pyarrow and fastpriv._validation are imported inside the functions so that
# ``import fastpriv.datasets`` (which re-exports these generators) stays cheap.

__all__ = ["synthetic", "synthetic_batches", "synthetic_release", "value_labels", "BLOCK_ROWS"]

#: Rows per internal generator block (part of the determinism contract: changing it changes
#: the generated data).
BLOCK_ROWS = 1 << 20

_DISTRIBUTIONS = ("uniform", "zipf")
_MAX_INT32 = 2**31 - 1
_GUIDE_SIZE = 1 << 12


def value_labels(n_values: int) -> list[str]:
    """Return the sensitive labels ``"v0…", …`` zero-padded to the width of ``n_values - 1``."""
    from .._validation import check_int

    n_values = check_int(n_values, "n_values", minimum=1)
    width = len(str(n_values - 1))
    return [f"v{i:0{width}d}" for i in range(n_values)]


# Arrays are built from buffers (zero-copy for NumPy) rather than with ``pyarrow.array``,
# which imports pandas (~0.3 s) on its first call when pandas is installed.

def _numeric_array(a: np.ndarray, type_: pa.DataType) -> pa.Array:
    """Zero-copy Arrow view of a contiguous 1-D NumPy array (no nulls)."""
    import numpy as np
    import pyarrow as pa

    a = np.ascontiguousarray(a, dtype=type_.to_pandas_dtype())
    return pa.Array.from_buffers(type_, a.size, [None, pa.py_buffer(a)])


def _string_array(labels: list[str]) -> pa.Array:
    """Arrow string array of ``labels`` (no nulls)."""
    import numpy as np
    import pyarrow as pa

    data = [x.encode("utf-8") for x in labels]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(x) for x in data], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(data),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


@dataclass(frozen=True)
class _Spec:
    n_rows: int
    mode: str  # "group_size" | "n_groups" | "qi"
    group_size: int
    n_groups: int
    qi_cardinalities: tuple[int, ...]
    n_values: int
    distribution: str
    zipf_s: float
    seed: int

    @property
    def n_blocks(self) -> int:
        return -(-self.n_rows // BLOCK_ROWS)

    def schema(self) -> pa.Schema:
        import pyarrow as pa

        fields = []
        if self.mode == "qi":
            fields += [pa.field(f"q{j}", pa.int32(), nullable=False)
                       for j in range(len(self.qi_cardinalities))]
        else:
            fields.append(pa.field("group", pa.int64(), nullable=False))
        fields.append(pa.field("sensitive", pa.dictionary(pa.int32(), pa.string()),
                               nullable=False))
        return pa.schema(fields)


def _validate(n_rows: Any, n_groups: Any, group_size: Any, qi_cardinalities: Any,
              n_values: Any, distribution: Any, zipf_s: Any, seed: Any) -> _Spec:
    import numpy as np

    from .._validation import check_choice, check_int

    n_rows = check_int(n_rows, "n_rows", minimum=1)
    given = [name for name, v in (("n_groups", n_groups), ("group_size", group_size),
                                  ("qi_cardinalities", qi_cardinalities)) if v is not None]
    if len(given) != 1:
        raise InputError("give exactly one of n_groups=, group_size= or qi_cardinalities= "
                         f"(got {', '.join(given) if given else 'none'})")
    gs = ng = 0
    cards: tuple[int, ...] = ()
    if group_size is not None:
        mode = "group_size"
        gs = check_int(group_size, "group_size", minimum=1)
        if n_rows % gs:
            raise InputError(f"group_size: n_rows ({n_rows}) must be a multiple of group_size "
                             f"({gs}) so that every group has exactly group_size rows")
        ng = n_rows // gs
    elif n_groups is not None:
        mode = "n_groups"
        ng = check_int(n_groups, "n_groups", minimum=1)
    else:
        mode = "qi"
        if isinstance(qi_cardinalities, (str, bytes)) or not isinstance(
                qi_cardinalities, Sequence) and not isinstance(qi_cardinalities, np.ndarray):
            raise InputTypeError("qi_cardinalities must be a sequence of integers, got "
                            f"{type(qi_cardinalities).__name__}")
        if len(qi_cardinalities) == 0:
            raise InputError("qi_cardinalities: at least one QI column is required")
        cards = tuple(check_int(c, f"qi_cardinalities[{j}]", minimum=1, maximum=_MAX_INT32)
                      for j, c in enumerate(qi_cardinalities))
    n_values = check_int(n_values, "n_values", minimum=1, maximum=_MAX_INT32)
    if not isinstance(distribution, str):
        raise InputTypeError(f"distribution must be a string, got {type(distribution).__name__}")
    distribution = check_choice(distribution, "distribution", _DISTRIBUTIONS)
    if isinstance(zipf_s, bool) or not isinstance(zipf_s, numbers.Real):
        raise InputTypeError(f"zipf_s must be a real number, got "
                             f"{type(zipf_s).__name__} {zipf_s!r}")
    zipf_s = float(zipf_s)
    if not math.isfinite(zipf_s) or zipf_s < 0:
        raise InputError(f"zipf_s must be a finite number >= 0, got {zipf_s!r}")
    seed = check_int(seed, "seed", minimum=0)
    return _Spec(n_rows=n_rows, mode=mode, group_size=gs, n_groups=ng, qi_cardinalities=cards,
                 n_values=n_values, distribution=distribution, zipf_s=zipf_s, seed=seed)


class _Generator:
    """Produces block ``b`` of the stream described by a :class:`_Spec`."""

    def __init__(self, spec: _Spec) -> None:
        import numpy as np

        self.spec = spec
        self._perm: np.ndarray | None = None
        self.labels = _string_array(value_labels(spec.n_values))
        if spec.distribution == "zipf" and spec.n_values > 1:
            w = 1.0 / np.arange(1, spec.n_values + 1, dtype=np.float64) ** spec.zipf_s
            cdf = np.cumsum(w / w.sum())
            cdf[-1] = 1.0  # u < 1 always, so the last code is the largest one returned
            self._cdf = cdf
            # guide[k] = searchsorted(cdf, k / G, "right"): the smallest code any u in
            # [k/G, (k+1)/G) can map to.
            self._guide = np.searchsorted(
                cdf, np.arange(_GUIDE_SIZE, dtype=np.float64) / _GUIDE_SIZE,
                side="right").astype(np.int32)
        else:
            self._cdf = None

    def _permutation(self) -> np.ndarray:
        import numpy as np

        if self._perm is None:
            spec = self.spec
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
                spec.seed, spawn_key=(1,))))
            dtype = np.int32 if spec.n_groups <= _MAX_INT32 else np.int64
            self._perm = rng.permutation(np.arange(spec.n_groups, dtype=dtype))
        return self._perm

    def _zipf_codes(self, rng: np.random.Generator, size: int) -> np.ndarray:
        import numpy as np

        u = rng.random(size)
        code = self._guide[(u * _GUIDE_SIZE).astype(np.intp)]
        cdf = self._cdf
        # Walk up while u >= cdf[code]; only rows in buckets straddling a CDF step move.
        idx = np.flatnonzero(u >= cdf[code])
        while idx.size:
            code[idx] += 1
            idx = idx[u[idx] >= cdf[code[idx]]]
        return code

    def block(self, b: int) -> dict[str, np.ndarray]:
        """Columns (NumPy arrays; ``sensitive`` as int32 codes) of rows of block ``b``."""
        import numpy as np

        spec = self.spec
        lo = b * BLOCK_ROWS
        hi = min(spec.n_rows, lo + BLOCK_ROWS)
        size = hi - lo
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            spec.seed, spawn_key=(0, b))))
        out: dict[str, np.ndarray] = {}
        if spec.mode == "group_size":
            out["group"] = np.arange(lo, hi, dtype=np.int64) // spec.group_size
        elif spec.mode == "n_groups":
            g = rng.integers(0, spec.n_groups, size, dtype=np.int64)
            head = min(spec.n_groups, spec.n_rows)
            if lo < head:
                stop = min(hi, head)
                g[:stop - lo] = self._permutation()[lo:stop]
            out["group"] = g
        else:
            for j, c in enumerate(spec.qi_cardinalities):
                out[f"q{j}"] = rng.integers(0, c, size, dtype=np.int32)
        if spec.n_values == 1:
            out["sensitive"] = np.zeros(size, dtype=np.int32)
        elif self._cdf is None:
            out["sensitive"] = rng.integers(0, spec.n_values, size, dtype=np.int32)
        else:
            out["sensitive"] = self._zipf_codes(rng, size)
        return out

    def to_batch(self, cols: dict[str, np.ndarray]) -> pa.RecordBatch:
        import pyarrow as pa

        schema = self.spec.schema()
        arrays = []
        for field in schema:
            a = cols[field.name]
            if field.name == "sensitive":
                arrays.append(pa.DictionaryArray.from_arrays(
                    _numeric_array(a, pa.int32()), self.labels))
            else:
                arrays.append(_numeric_array(a, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def synthetic(n_rows: int, *, n_groups: int | None = None, group_size: int | None = None,
              qi_cardinalities: Sequence[int] | None = None, n_values: int = 20,
              distribution: str = "uniform", zipf_s: float = 1.1, seed: int = 0) -> pa.Table:
    """Generate a seeded synthetic SVPI table (one row per individual).

    Parameters
    ----------
    n_rows : int
        Number of rows (individuals), >= 1.
    n_groups : int, optional
        Number of groups G: each row's ``group`` is uniform on ``0..G-1`` and every group is
        non-empty when ``n_rows >= G`` (see the module docstring for how).
    group_size : int, optional
        Every group has exactly this many rows: row ``r`` is in group ``r // group_size``.
        ``n_rows`` must be a multiple of it.
    qi_cardinalities : sequence of int, optional
        Instead of a ``group`` column, int32 QI columns ``q0, q1, …`` drawn uniformly with
        ``q_j`` on ``0..c_j-1``; the groups are the distinct QI tuples. Give exactly one of
        ``n_groups``, ``group_size`` and ``qi_cardinalities``.
    n_values : int
        Size of the sensitive domain; labels ``"v00", "v01", …`` zero-padded to the width of
        ``n_values - 1``.
    distribution : {"uniform", "zipf"}
        Distribution of the sensitive value of each row: uniform over the labels, or Zipf
        with ``P(value of rank i) ∝ 1 / i**zipf_s`` (rank 1 = the first label).
    zipf_s : float
        Zipf exponent (>= 0; 0 is uniform), used when ``distribution="zipf"``.
    seed : int
        Non-negative seed; same arguments and seed always give the same table.

    Returns
    -------
    pyarrow.Table
        Columns ``group`` (int64) or ``q0, q1, …`` (int32), then ``sensitive``
        (``dictionary<int32, string>``, the full label list as dictionary).

    Examples
    --------
    >>> t = synthetic(1_000, group_size=10, n_values=5, seed=1)
    >>> t.num_rows, t.column_names
    (1000, ['group', 'sensitive'])

    """
    import numpy as np
    import pyarrow as pa

    spec = _validate(n_rows, n_groups, group_size, qi_cardinalities, n_values, distribution,
                     zipf_s, seed)
    gen = _Generator(spec)
    schema = spec.schema()
    full = {f.name: np.empty(spec.n_rows, dtype=np.int32 if f.name != "group" else np.int64)
            for f in schema}
    for b in range(spec.n_blocks):
        lo = b * BLOCK_ROWS
        for name, a in gen.block(b).items():
            full[name][lo:lo + a.size] = a
    return pa.Table.from_batches([gen.to_batch(full)], schema=schema)


def synthetic_batches(n_rows: int, *, batch_rows: int = 1_000_000,
                      **kwargs: Any) -> Iterator[pa.RecordBatch]:
    """Yield the rows of :func:`synthetic` as record batches of ``batch_rows`` rows.

    The concatenation of the batches equals ``synthetic(n_rows, **kwargs)`` for any
    ``batch_rows`` (the last batch may be shorter). Memory stays O(``batch_rows`` +
    ``BLOCK_ROWS``), plus O(``n_groups``) for the group permutation with ``n_groups=``.

    Parameters
    ----------
    n_rows : int
        Total number of rows.
    batch_rows : int
        Rows per yielded batch (>= 1).
    **kwargs
        ``n_groups``, ``group_size``, ``qi_cardinalities``, ``n_values``, ``distribution``,
        ``zipf_s``, ``seed`` — as for :func:`synthetic`.

    """
    from .._validation import check_int

    allowed = {"n_groups", "group_size", "qi_cardinalities", "n_values", "distribution",
               "zipf_s", "seed"}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise InputTypeError(f"synthetic_batches() got unexpected keyword argument(s) {unknown}; "
                        f"allowed: {sorted(allowed)}")
    spec = _validate(n_rows, kwargs.get("n_groups"), kwargs.get("group_size"),
                     kwargs.get("qi_cardinalities"), kwargs.get("n_values", 20),
                     kwargs.get("distribution", "uniform"), kwargs.get("zipf_s", 1.1),
                     kwargs.get("seed", 0))
    batch_rows = check_int(batch_rows, "batch_rows", minimum=1)
    return _iter_batches(spec, batch_rows)


def _iter_batches(spec: _Spec, batch_rows: int) -> Iterator[pa.RecordBatch]:
    import numpy as np

    gen = _Generator(spec)
    names = spec.schema().names
    pending: list[dict[str, np.ndarray]] = []
    n_pending = 0
    for b in range(spec.n_blocks):
        cols = gen.block(b)
        pending.append(cols)
        n_pending += cols["sensitive"].size
        if n_pending < batch_rows:
            continue
        merged = {k: np.concatenate([p[k] for p in pending]) if len(pending) > 1
                  else pending[0][k] for k in names}
        start = 0
        while n_pending - start >= batch_rows:
            yield gen.to_batch({k: v[start:start + batch_rows] for k, v in merged.items()})
            start += batch_rows
        rest = {k: v[start:] for k, v in merged.items()}
        pending = [rest] if n_pending - start else []
        n_pending -= start
    if n_pending:
        merged = {k: np.concatenate([p[k] for p in pending]) for k in names}
        yield gen.to_batch(merged)


def synthetic_release(n_rows: int, *, n_groups: int | None = None,
                      group_size: int | None = None,
                      qi_cardinalities: Sequence[int] | None = None, n_values: int = 20,
                      distribution: str = "uniform", zipf_s: float = 1.1,
                      seed: int = 0) -> Any:
    """Return ``Release.from_table(synthetic(...))`` for the same arguments.

    Groups are the ``group`` column, or the distinct ``(q0, q1, …)`` tuples when
    ``qi_cardinalities`` is given; ``sensitive`` is the sensitive attribute. Only the values
    actually drawn enter the release's domain (``rel.n_values <= n_values``).
    """
    from ..release import Release

    table = synthetic(n_rows, n_groups=n_groups, group_size=group_size,
                      qi_cardinalities=qi_cardinalities, n_values=n_values,
                      distribution=distribution, zipf_s=zipf_s, seed=seed)
    if qi_cardinalities is not None:
        qi = [n for n in table.column_names if n != "sensitive"]
        return Release.from_table(table, sensitive="sensitive", qi=qi)
    return Release.from_table(table, sensitive="sensitive", group="group")
