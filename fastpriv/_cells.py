"""Distinct combinations ("cells") of integer code columns.

Anonymizers (lattice search, Mondrian, SkylineAnonymize) and utility metrics compress rows to
their distinct (QI codes, sensitive code) cells once, and then work on cells with weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._validation import kernel_array

__all__ = ["compress", "DENSE_LIMIT"]

#: Largest product of cardinalities regrouped with a dense table (a hash table above).
DENSE_LIMIT = 1 << 22


def compress(columns: Sequence[np.ndarray], cards: Sequence[int]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Find the distinct combinations (cells) of code columns.

    Parameters
    ----------
    columns : sequence of int arrays
        Code columns of equal length; column ``j`` holds codes in ``[0, cards[j])``.
    cards : sequence of int
        Cardinality of each column.

    Returns
    -------
    (cell, first, weights) : tuple of numpy.ndarray
        The cell of each row, the first row of each cell and the rows per cell; cells are
        numbered in lexicographic order of the codes.

    """
    from ._kernels.generalize import regroup, weighted_first

    full = np.stack([np.asarray(c, dtype=np.int32) for c in columns])
    n = full.shape[1]
    ident = np.concatenate([np.arange(c, dtype=np.int32) for c in cards])
    offs = np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)
    cell, m = regroup(kernel_array(full, np.int32), kernel_array(ident, np.int32),
                      kernel_array(offs, np.int64), kernel_array(cards, np.int64),
                      max(DENSE_LIMIT, 4 * n))
    weights, first = weighted_first(kernel_array(cell, np.int32),
                                    kernel_array(np.empty(0, np.int64), np.int64), int(m))
    return cell, first, weights
