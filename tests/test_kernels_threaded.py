"""The serial chunk kernels behind former ``parallel=True`` kernels (issue 22).

``solve_systems``, ``build_systems``, ``dedupe_groups`` (foreground) and the one-segment /
one-group posterior drivers (``binary_loo``, ``mv_posteriors_one``) are Python drivers of
serial ``nogil`` kernels: their results must not depend on the number of threads or chunks,
and the drivers must reuse the batched path's compiled code (no extra specialization).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from fastpriv import foreground
from fastpriv._jit import Threaded
from fastpriv._kernels import foreground as kf
from fastpriv._kernels import possible_worlds as pw
from fastpriv._threads import n_jobs, pool_size
from fastpriv._validation import kernel_array


def _table(seed: int, n: int = 240) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"q0": rng.integers(0, 4, n), "q1": rng.integers(0, 3, n),
                     "gid": np.repeat(np.arange(n // 4), 4),
                     "s": rng.choice(list("abcd"), n)})


def _attack_arrays(table: pa.Table, seed: int) -> dict:
    res = foreground.attack(table, qi=["q0", "q1"], sensitive="s", group="gid", r=2.0,
                            min_support=2, n_random=2, seed=seed)
    return {k: v for k, v in vars(res).items() if isinstance(v, np.ndarray)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_foreground_attack_does_not_depend_on_threads(seed):
    if pool_size() < 2:
        pytest.skip("one thread in the pool")  # pragma: no cover
    t = _table(seed)
    with n_jobs(1):
        one = _attack_arrays(t, seed)
    with n_jobs(2):
        two = _attack_arrays(t, seed)
    assert one and one.keys() == two.keys()
    for k in one:
        np.testing.assert_array_equal(one[k], two[k], err_msg=k)


def _systems(seed: int):
    rng = np.random.default_rng(seed)
    G, R = 30, 120
    goff = kernel_array(np.arange(0, R + 1, 4), np.int64)
    order = kernel_array(rng.permutation(R), np.int64)
    n_sets, n_x = 2, 3
    m_of_a = kernel_array(np.array([3, 5]), np.int64)
    var_rows = kernel_array(np.concatenate([rng.integers(-1, m, R) for m in (3, 5)]), np.int32)
    gcount = kernel_array(rng.integers(0, 5, n_x * G), np.int64)
    sys_a = kernel_array(np.repeat(np.arange(n_sets), n_x), np.int64)
    sys_x = kernel_array(np.tile(np.arange(n_x), n_sets), np.int64)
    return goff, order, var_rows, gcount, sys_a, sys_x, m_of_a


@pytest.mark.parametrize("seed", [0, 3])
def test_build_and_dedupe_do_not_depend_on_threads(seed):
    args = _systems(seed)
    out = {}
    for t in (1, 2):
        with n_jobs(t):
            built = kf.build_systems(*args)
            _, _, _, _, grp_off, grp_n, grp_N, cls_off, cls_var, cls_mult = built[:10]
            ded = kf.dedupe_groups(*(kernel_array(a, np.int64) for a in (grp_off, grp_n, grp_N)),
                                   kernel_array(np.ones(grp_n.shape[0]), np.float64),
                                   *(kernel_array(a, np.int64) for a in (cls_off, cls_var,
                                                                         cls_mult)))
        out[t] = (built, ded)
    for a, b in zip(out[1][0] + out[1][1], out[2][0] + out[2][1], strict=True):
        np.testing.assert_array_equal(a, b)
    # the deduplicated groups carry every group: the weights add up per system
    ngo, w = out[1][1][0], out[1][1][3]
    grp_off = out[1][0][4]
    for s in range(ngo.shape[0] - 1):
        assert w[ngo[s]:ngo[s + 1]].sum() == grp_off[s + 1] - grp_off[s]


def test_drivers_reuse_the_batched_kernels():
    """binary_loo and mv_posteriors_one run the batch path's compiled code."""
    rng = np.random.default_rng(0)
    f = rng.uniform(0.05, 0.95, 40)
    off = kernel_array(np.array([0, 10, 40]), np.int64)
    pw.binary_posteriors_csr(off, kernel_array(f, np.float64),
                             kernel_array(np.array([3, 7]), np.int64), int(pw.PREFIX_LIMIT), 2)
    st, p, _, _ = pw.binary_loo(kernel_array(f[10:], np.float64), 7, int(pw.PREFIX_LIMIT), 0, 0)
    ref, _, _ = pw.binary_posteriors_csr(kernel_array(np.array([0, 30]), np.int64),
                                         kernel_array(f[10:], np.float64),
                                         kernel_array(np.array([7]), np.int64),
                                         int(pw.PREFIX_LIMIT), 1)
    assert st == pw.STATUS_OK
    np.testing.assert_allclose(p, ref, rtol=1e-12)
    M = rng.uniform(0.1, 1.0, (4, 3))
    mult = kernel_array(np.array([2, 1, 1]), np.int64)
    post, st2, _, _ = pw.mv_posteriors_one(kernel_array(M.ravel(), np.float64), mult,
                                           int(pw.METHOD_DP))
    batch, st3, _, _ = pw.mv_posteriors_csr(kernel_array(M.ravel(), np.float64),
                                            kernel_array(np.array([0, 12]), np.int64), mult,
                                            kernel_array(np.array([0, 3]), np.int64),
                                            int(pw.METHOD_DP))
    assert st2 == st3[0] == pw.STATUS_OK
    np.testing.assert_array_equal(post, batch)
    for d in (pw.loo_core, pw.binary_posteriors_range, pw.mv_posteriors_range):
        assert len(d.signatures) == 1, (d, d.signatures)
    for t in (pw.binary_loo, pw.mv_posteriors_one, kf.solve_systems, kf.build_systems,
              kf.dedupe_groups):
        assert isinstance(t, Threaded)
