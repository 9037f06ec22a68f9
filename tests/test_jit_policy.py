"""The JIT policy of fastpriv/_jit.py is enforced, not just documented."""

import ast
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pytest

import fastpriv
import fastpriv._kernels
from fastpriv import _jit
from tests.kernel_census import dispatchers, kernel_modules

PKG = Path(fastpriv.__file__).resolve().parent


def test_every_kernel_goes_through_the_policy_decorator():
    found = list(dispatchers())
    assert found, "no kernels found"
    registered = {id(d) for d in _jit.KERNELS}
    for name, disp in found:
        assert id(disp) in registered, f"{name} was not created by fastpriv._jit.kernel"
        opts = disp.targetoptions
        assert opts["nogil"] is True, name
        assert opts["error_model"] == "numpy", name
        assert set(opts.get("fastmath") or ()) <= _jit.SAFE_FASTMATH, name
        assert "nnan" not in set(opts.get("fastmath") or ()), name
        assert type(disp._cache).__name__ == ("FastprivCache" if _jit.CACHE_ENABLED
                                               else "NullCache"), name


@pytest.mark.slow
def test_no_raw_numba_decorators_outside_jit_module():
    offenders = []
    for path in PKG.rglob("*.py"):
        if path.name == "_jit.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("njit", "jit", "vectorize",
                                                                  "guvectorize", "cfunc"):
                if isinstance(node.value, ast.Name) and node.value.id == "numba":
                    offenders.append(f"{path}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "numba":
                names = {a.name for a in node.names}
                if names & {"njit", "jit", "vectorize", "guvectorize", "cfunc"}:
                    offenders.append(f"{path}:{node.lineno}")
    assert not offenders, f"raw numba decorators: {offenders}"


def test_kernels_import_no_arrow():
    for mod in kernel_modules():
        src = Path(mod.__file__).read_text(encoding="utf-8")
        assert "pyarrow" not in src, f"{mod.__name__} imports pyarrow"


def test_one_specialization_per_kernel_for_varied_inputs():
    """Arrow (read-only), NumPy (writable), pandas and lists all reach the same signature."""
    import pandas as pd
    import polars as pl

    from fastpriv import Release, classic

    data = {"g": [3, 1, 1, 2, 3, 3], "s": ["x", "y", "x", "z", "z", "z"]}
    sources = [pa.table(data), pd.DataFrame(data), pl.DataFrame(data),
               pa.table({"g": pa.array(data["g"], pa.int32()), "s": pa.array(data["s"])}),
               pa.table({"g": pa.array(data["g"]),
                         "s": pa.array(data["s"]).dictionary_encode()})]
    for src in sources:
        rel = Release.from_table(src, sensitive="s", group="g")
        classic.audit(rel, l=2)
        rel.rows_of_group(0)
    Release.from_groups([["a", "b"], {"a": 3}])
    Release.from_groups([[1, 2], [2, 2]])
    Release.from_counts(pa.table({"g": [1, 2], "s": ["a", "b"], "count": pa.array([2, 3],
                                                                                  pa.int32())}),
                        group="g", sensitive="s")
    for name, disp in dispatchers():
        assert len(disp.signatures) <= 1, f"{name} compiled {len(disp.signatures)} times: " \
                                          f"{disp.signatures}"


def test_kernel_array_is_read_only_and_zero_copy():
    from fastpriv._validation import kernel_array

    a = np.arange(5, dtype=np.int64)
    v = kernel_array(a, np.int64)
    assert not v.flags.writeable and np.shares_memory(a, v)
    assert a.flags.writeable  # the caller's array is untouched
    assert kernel_array([1, 2], np.int32).dtype == np.int32


def test_numba_threading_layer_available():
    assert numba.config.NUMBA_NUM_THREADS >= 1


@_jit.kernel
def _sum_with_prefetch(a, ahead):
    s = 0
    for i in range(a.shape[0]):
        _jit.prefetch(a, i + ahead)    # past the end for the last rows: a hint, no fault
        s += a[i]
    return s


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_prefetch_is_a_hint(dtype):
    # llvm.prefetch of any element, in or far out of range, changes nothing
    a = np.arange(1, 1001, dtype=dtype)
    for ahead in (0, _jit.AHEAD, 1 << 40, -(1 << 40)):
        assert _sum_with_prefetch(a, np.int64(ahead)) == int(a.astype(np.int64).sum())
