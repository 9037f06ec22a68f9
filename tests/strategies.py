"""Hypothesis strategies for small random releases, shared by every model's tests.

Small means brute force is feasible: total individuals ≤ ``max_people`` and few values.
Values are short strings ``"a"``, ``"b"``, … so releases print readably in failures.
"""

from __future__ import annotations

from hypothesis import strategies as st

VALUES = "abcdefgh"


@st.composite
def svpi_groups(draw, max_people: int = 7, max_groups: int = 3, max_values: int = 4,
                min_group: int = 1):
    """A list of groups, each a list of values (one per individual)."""
    n_groups = draw(st.integers(1, max_groups))
    budget = max_people
    groups = []
    for g in range(n_groups):
        remaining_groups = n_groups - g - 1
        hi = budget - remaining_groups * min_group
        if hi < min_group:
            break
        size = draw(st.integers(min_group, max(min_group, min(hi, max_people))))
        budget -= size
        groups.append(draw(st.lists(st.sampled_from(VALUES[:max_values]), min_size=size,
                                    max_size=size)))
    return groups


@st.composite
def mvpi_groups(draw, case: str = "mvpi-set", max_people: int = 4, max_groups: int = 2,
                max_values: int = 3, max_count: int = 3):
    """``(sizes, groups)`` for an MVPI release; groups are ``{value: count}`` dicts.

    For ``"mvpi-set"`` every count is ≤ the group size.
    """
    n_groups = draw(st.integers(1, max_groups))
    sizes, groups = [], []
    for _ in range(n_groups):
        n = draw(st.integers(1, max_people))
        cap = n if case == "mvpi-set" else max_count
        counts = {}
        for v in VALUES[:max_values]:
            c = draw(st.integers(0, cap))
            if c:
                counts[v] = c
        sizes.append(n)
        groups.append(counts)
    return sizes, groups
