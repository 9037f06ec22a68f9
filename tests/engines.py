"""Shared by the engine tests (DuckDB push-down, Spark): random small tables and the
comparison of every count-based audit between two releases."""

from __future__ import annotations

import datetime
import re
from collections import Counter

import pyarrow as pa
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, Release, ck_safety, classic, skyline

#: skyline points (l1, l2, l3, c) of the comparison (Chen et al. §4)
POINTS = [(0, 0, 0, 0.9), (1, 1, 1, 0.7), (2, 2, 0, 0.5)]
CK_K = 2

# -0.0 is left out of the float labels: it and 0.0 are distinct labels that compare
# equal, so their order in a release follows first appearance (see the report of issue 25)
_FLOATS = [0.0, 1.5, -2.25, float("nan"), 1e300]
_KINDS = {
    "int64": (pa.int64(), st.integers(-3, 3)),
    "int32": (pa.int32(), st.integers(0, 4)),
    "string": (pa.string(), st.sampled_from(["a", "b", "ç", "", "a b"])),
    "bool": (pa.bool_(), st.booleans()),
    "date": (pa.date32(), st.sampled_from([datetime.date(2020, 1, d) for d in (1, 2, 31)])),
    "float": (pa.float64(), st.sampled_from(_FLOATS)),
}


@st.composite
def tables(draw, max_rows: int = 30, key_kinds=tuple(_KINDS), value_kinds=("string", "int64"),
           allow_nulls: bool = True):
    """``(table, keys, sensitive)``: a small table with 1–3 key columns of mixed types,
    a sensitive column ``s`` and an unused column; nulls sometimes."""
    n = draw(st.integers(1, max_rows))
    n_keys = draw(st.integers(1, 3))
    cols = {}
    keys = []
    for i in range(n_keys + 1):
        kind = draw(st.sampled_from(value_kinds if i == n_keys else key_kinds))
        typ, elems = _KINDS[kind]
        if allow_nulls and draw(st.booleans()):
            elems = st.one_of(elems, st.none()) if draw(st.booleans()) else elems
        name = "s" if i == n_keys else f"k{i} {kind}"   # names with spaces: quoting
        cols[name] = pa.array(draw(st.lists(elems, min_size=n, max_size=n)), type=typ)
        if i < n_keys:
            keys.append(name)
    cols["unused"] = pa.array(range(n), type=pa.int64())
    return pa.table(cols), keys, "s"


def triples(table: pa.Table, keys: list[str], sensitive: str) -> Counter:
    """Oracle: the (key tuple, value) → count multiset of the rows, in plain Python."""
    def norm(x):   # NaN != NaN: one key for all NaNs
        return "<nan>" if isinstance(x, float) and x != x else x

    cols = [table.column(c).to_pylist() for c in keys + [sensitive]]
    return Counter(tuple(norm(x) for x in row) for row in zip(*cols, strict=True))


def result_triples(result: pa.Table, keys: list[str], sensitive: str, count: str) -> Counter:
    """The triples of an aggregated result as the same Counter as :func:`triples`."""
    out = Counter()
    expand = result.select(keys + [sensitive]).to_pylist()
    for row, c in zip(expand, result.column(count).to_pylist(), strict=True):
        key = tuple("<nan>" if isinstance(x, float) and x != x else x for x in row.values())
        out[key] += c
    return out


def _outcome(fn, *args, **kw):
    try:
        return ("ok", fn(*args, **kw).to_dict())
    except ValueError as exc:   # InputError, e.g. a model that needs two values
        return ("error", type(exc).__name__, str(exc))


def audits(rel: Release) -> dict:
    """Classical audit, (c,k)-safety audit and SkylineCheck of ``rel`` as JSON-safe dicts."""
    return {"classic": _outcome(classic.audit, rel),
            "ck": _outcome(ck_safety.audit, rel, k=CK_K),
            "skyline": _outcome(skyline.check, rel, skylines={"*": POINTS})}


def assert_same(got: Release, ref: Release, ref_audits: dict | None = None) -> None:
    """``got`` equals ``ref`` (groups, labels, label types, counts) and every audit
    answers the same, to the bit."""
    assert got.equals(ref)
    assert got.group_labels == ref.group_labels or _nan_equal(got.group_labels,
                                                              ref.group_labels)
    assert got.groups.schema == ref.groups.schema
    assert got.value_labels.type == ref.value_labels.type
    want = ref_audits if ref_audits is not None else audits(ref)
    assert repr(audits(got)) == repr(_without_rows(want))


def _without_rows(x):
    """Witness atoms name the table row of an individual (``"row"``) only when the release
    keeps the rows (``Release.from_table``); aggregated counts have none (``None``), and the
    witness formulas then do not say "(row i)"."""
    if isinstance(x, str):
        return re.sub(r" \(row \d+\)", "", x)
    if isinstance(x, dict):
        return {k: (None if k == "row" else _without_rows(v)) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_without_rows(v) for v in x)
    return x


def _nan_equal(a: list, b: list) -> bool:
    return repr(a) == repr(b)


# ------------------------------------------------------------------ refusals
#: the table the row-count refusals read, and each engine's refusals of ``row_counts``:
#: (keywords, error type, what the message names)
ROW_REFUSAL_TABLE = {"q": [1, 2], "g": [1, 1], "s": ["a", "b"], "w": [1, -1],
                     "wn": pa.array([1, None], pa.int64()), "wf": [1.0, 2.0]}
ROW_REFUSALS = [
    (dict(qi=None, group="g", sensitive="s"), InputError, "qi"),
    (dict(qi="q", group=None, sensitive="s"), InputError, "group"),
    (dict(qi=[], group="g", sensitive="s"), InputError, "qi"),
    (dict(qi="q", group="q", sensitive="s"), InputError, "group: column 'q' is also"),
    (dict(qi="q", group="g", sensitive="g"), InputError, "also a group column"),
    (dict(qi=["q", "q"], group="g", sensitive="s"), InputError, "qi"),
    (dict(qi="q", group="g", sensitive=1), InputTypeError, "sensitive"),
    (dict(qi="q", group="g", sensitive="s", count="q"), InputError, "count='q'"),
    (dict(qi="q", group="g", sensitive="s", weight="g"), InputError, "weight column 'g'"),
    (dict(qi="nope", group="g", sensitive="s"), InputError, "'nope' not found"),
    (dict(qi="q", group="g", sensitive="s", weight="w"), InputError, "negative"),
    (dict(qi="q", group="g", sensitive="s", weight="wn"), InputError, "1 nulls"),
    (dict(qi="q", group="g", sensitive="s", weight="wf"), InputTypeError, "integers"),
]

#: the table the class-count refusals read, and each engine's refusals of ``class_counts``
CLASS_REFUSAL_TABLE = {"q": [1, 2], "r": ["a", "b"], "w": [1, -1],
                       "wn": pa.array([1, None], pa.int64()), "wf": [1.0, 2.0], "w0": [0, 0]}
CLASS_REFUSALS = [
    (dict(qi=None), InputError, "qi: give the quasi-identifier"),
    (dict(qi=[]), InputError, "qi: at least one column"),
    (dict(qi=["q", "q"]), InputError, "qi: column 'q' is named twice"),
    (dict(qi=[1]), InputTypeError, "qi: column names must be strings"),
    (dict(qi="nope"), InputError, "'nope' not found"),
    (dict(qi="q", nulls="maybe"), InputError, "nulls"),
    (dict(qi="q", weight="q"), InputError, "weight column 'q' is also a qi column"),
    (dict(qi="q", weight=3), InputTypeError, "weight must be a column name"),
    (dict(qi="q", weight="w"), InputError, "negative"),
    (dict(qi="q", weight="wn"), InputError, "1 nulls"),
    (dict(qi="q", weight="wf"), InputTypeError, "integers"),
    (dict(qi="q", weight="w0"), InputError, "no rows"),
]
