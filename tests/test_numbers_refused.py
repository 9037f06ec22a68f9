"""Numbers exact or refused: counts past 2**63, NaN as a null, thresholds out of range,
non-tree hierarchies, wrongly typed probabilities and hostile CSV input get a one-line
InputError naming the parameter (or the right answer), never a silent wrong number."""

import math

import numpy as np
import pyarrow as pa
import pytest

import fastpriv as fp
from fastpriv import InputError, InputTypeError, Release

BIG = 2**62


def _weighted(ws, typ=pa.int64()):
    n = len(ws)
    return pa.table({"g": [1, 1, 2][:n], "s": ["a", "b", "a"][:n], "w": pa.array(ws, typ)})


# ---------------------------------------------------------------- 1. counts past 2**63
@pytest.mark.parametrize("call", [
    lambda t: Release.from_table(t, sensitive="s", group="g", weight="w"),
    lambda t: fp.classic.audit(t, sensitive="s", group="g", weight="w"),
    lambda t: Release.from_table(t.append_column("q", pa.array([0, 1, 0])), sensitive="s",
                                 group="g", qi=["q"], weight="w"),
    lambda t: Release.from_batches(t, sensitive="s", group="g", weight="w"),
])
def test_weights_summing_past_int64_are_refused(call):
    t = _weighted([BIG, BIG, 5])     # 2**63 + 5: would wrap to k = -2**63
    with pytest.raises(InputError, match=r"weight column 'w': the counts add up to "
                                         r"9223372036854775813, past 2\*\*63 - 1"):
        call(t)


def test_weights_summing_past_int64_across_batches_are_refused():
    acc = fp.counts.CountAccumulator("g", "s", weight="w")
    acc.add(_weighted([BIG, 5]))           # each batch alone fits
    with pytest.raises(InputError, match="weight column 'w': the counts add up to"):
        acc.add(_weighted([BIG, 1]))


def test_uint64_and_negative_weights_are_refused():
    with pytest.raises(InputError, match=r"weight column 'w' has weights over 2\*\*63 - 1"):
        Release.from_table(_weighted([2**63, 1], pa.uint64()), sensitive="s", group="g",
                           weight="w")
    with pytest.raises(InputError, match="weight column 'w' has negative weights"):
        Release.from_table(_weighted([-1, 1]), sensitive="s", group="g", weight="w")


def test_counts_past_int64_are_refused_in_every_constructor():
    with pytest.raises(InputError, match="count column 'n': the counts add up to"):
        Release.from_counts(pa.table({"g": [1, 1], "s": ["a", "b"], "n": [BIG, BIG]}),
                            group="g", sensitive="s", count="n")
    with pytest.raises(InputError, match=r"count column 'n' has counts over 2\*\*63 - 1"):
        Release.from_counts(pa.table({"g": [1, 1], "s": ["a", "b"],
                                      "n": pa.array([2**63, 1], pa.uint64())}),
                            group="g", sensitive="s", count="n")
    with pytest.raises(InputError, match="groups: the counts add up to"):
        Release.from_groups([{"a": BIG, "b": BIG}])
    with pytest.raises(InputError, match="groups: the counts add up to 18446744073709551616"):
        Release.from_groups([{"a": 2**64}])
    one = Release.from_groups([{"a": BIG}])
    with pytest.raises(InputError, match="merge: the counts add up to"):
        one.merge(one)
    with pytest.raises(InputError, match="sizes: the counts add up to"):
        Release.from_groups([{"a": 1}, {"a": 1}], sizes=[BIG, BIG])
    with pytest.raises(InputError, match="count column 'n': the counts add up to"):
        fp.risk.ClassCounts.from_counts(pa.table({"q": [1, 1], "n": [BIG, BIG]}), qi=["q"],
                                        count="n")


def test_counts_past_2_53_are_summed_exactly():
    # a float64 sum would give 2**53 + 2 or 2**53: the sizes are exact integers
    rel = Release.from_groups([{"a": 2**53 + 1, "b": 1}, {"a": 3}])
    assert rel.sizes.tolist() == [2**53 + 2, 3]
    assert fp.classic.k_anonymity(rel) == 3
    t = pa.table({"g": [1, 1], "s": ["a", "b"], "w": [2**53 + 1, 2]})
    assert Release.from_table(t, sensitive="s", group="g", weight="w").sizes.tolist() == \
        [2**53 + 3]
    cc = fp.risk.ClassCounts.from_counts(pa.table({"q": [1, 1], "n": [2**53 + 1, 2]}),
                                         qi=["q"], count="n")
    assert cc.sizes.tolist() == [2**53 + 3]


def test_largest_total_that_fits_is_accepted():
    t = _weighted([2**62, 2**62 - 1])        # exactly 2**63 - 1
    rel = Release.from_table(t, sensitive="s", group="g", weight="w")
    assert rel.n_rows == 2**63 - 1
    assert fp.classic.k_anonymity(rel) == 2**63 - 1
