"""A stream in any order folded through files: the QI hash that splits it, and the words.

``stream_counts.class_histogram(split_out=)`` and ``population_histogram(split_out=)`` write
the stream into files by a hash of the QI (:mod:`fastpriv._buckets`) and fold them one by
one; their answers equal memory's in the property tests of ``test_engine_folds.py``,
``test_population_folds.py`` and ``test_sampling_histogram.py``. Here: the hash gives equal
values to the keys fastpriv holds equal (NaN and null, ``-0.0`` and ``0.0``; dictionary and
large strings as strings) whatever the batch, refusals keep memory's words, and the files
are removed.
"""

from __future__ import annotations

import glob
import math
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import InputError, risk, stream_counts
from fastpriv._buckets import key_hash, split_by_key

_VALUES = {
    "int": (pa.int32(), st.integers(-3, 3)),
    "float": (pa.float64(), st.sampled_from([0.0, -0.0, 1.5, float("nan"), -2.0])),
    "text": (pa.string(), st.sampled_from(["", "a", "ab", "ba", "é", "a\x00"])),
    "bool": (pa.bool_(), st.booleans()),
}


def _key(value):
    """A value as fastpriv compares keys: NaN is a null, -0.0 is 0.0."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return 0.0 if value == 0.0 and isinstance(value, float) else value


@st.composite
def tables(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(_VALUES)), min_size=1, max_size=3))
    n = draw(st.integers(1, 30))
    cols = {}
    for i, kind in enumerate(kinds):
        typ, elem = _VALUES[kind]
        cols[f"c{i}"] = pa.array(draw(st.lists(st.one_of(elem, st.none()), min_size=n,
                                                max_size=n)), typ)
    return pa.table(cols)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(table=tables(), cut=st.integers(0, 30), buckets=st.integers(1, 7))
def test_keys_fastpriv_holds_equal_hash_equal_in_any_batch(table, cut, buckets):
    qi = table.column_names
    h = key_hash(table, qi)
    rows = [tuple(_key(v) for v in r.values()) for r in table.to_pylist()]
    for i in range(len(rows)):
        for j in range(len(rows)):
            if rows[i] == rows[j]:
                assert h[i] == h[j], (rows[i], rows[j])
    cut = min(cut, table.num_rows)
    parts = [key_hash(table.slice(0, cut), qi), key_hash(table.slice(cut), qi)]
    assert np.concatenate(parts).tolist() == h.tolist()
    split = split_by_key(table, qi, buckets)
    assert sum(p.num_rows for p in split) == table.num_rows
    seen = {}
    for b, part in enumerate(split):
        for r in part.to_pylist():
            assert seen.setdefault(tuple(_key(v) for v in r.values()), b) == b


def test_distinct_keys_spread_over_the_buckets():
    t = pa.table({"a": np.arange(20_000), "b": pa.array([f"x{i % 7}" for i in range(20_000)])})
    sizes = [p.num_rows for p in split_by_key(t, ["a", "b"], 8)]
    assert max(sizes) < 1.15 * 20_000 / 8


def test_dictionary_and_large_strings_hash_as_strings():
    plain = pa.table({"s": pa.array(["x", None, "yz", "x"])})
    for other in (pa.array(["x", None, "yz", "x"]).dictionary_encode(),
                  pa.array(["x", None, "yz", "x"], pa.large_string())):
        assert key_hash(pa.table({"s": other}), ["s"]).tolist() == \
            key_hash(plain, ["s"]).tolist()


def test_spilled_refusals_keep_memorys_words_and_no_file_is_left():
    t = pa.table({"a": [1.0, float("nan"), 2.0, None, 3.0], "b": ["x", "y", None, "y", "x"]})
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "fastpriv-spill-*")))
    with pytest.raises(InputError) as memory:
        risk.audit(t, qi=["a", "b"])
    with pytest.raises(InputError) as spilled:
        stream_counts.class_histogram(t.to_batches(max_chunksize=2), qi=["a", "b"],
                                      split_out=3)
    assert str(spilled.value) == str(memory.value)
    pop = pa.table({"a": [1.0, 1.0], "b": ["x", "x"]})         # lacks (3.0, "x")
    kw = dict(qi=["a", "b"], nulls="drop")
    with pytest.raises(InputError) as memory:
        risk.audit(t, population=pop, **kw)
    with pytest.raises(InputError) as spilled:
        stream_counts.population_histogram(t.to_batches(max_chunksize=2),
                                           population=pop.to_batches(max_chunksize=1),
                                           split_out=4, **kw)
    assert str(spilled.value) == str(memory.value)
    after = set(glob.glob(os.path.join(tempfile.gettempdir(), "fastpriv-spill-*")))
    assert after == before


def test_split_out_is_checked():
    t = pa.table({"a": [1, 2]})
    with pytest.raises(InputError, match="split_out"):
        stream_counts.class_histogram(t, qi="a", split_out=0)
    with pytest.raises(InputError, match="split_out.*clustered"):
        stream_counts.class_histogram(t, qi="a", split_out=2, clustered=True)
    with pytest.raises(InputError, match="split_out"):
        stream_counts.population_histogram(t, qi="a", population=t, split_out="2")
