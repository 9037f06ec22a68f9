"""Loading cached kernels pays for the runtime, not for Numba's compiler set-up.

A process whose kernels are all in the cache never compiles, so it skips Numba's refresh of
its typing and target contexts (every implementation registry of the CPU target, and the
BLAS probe that imports ``scipy.linalg``); compiling a kernel later in the same process
still sets everything up. Each scenario runs a fresh interpreter against one
``FASTPRIV_CACHE_DIR``: the first run compiles ``fastpriv._kernels.metrics.group_spread``
(about a second), the next ones load it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, sys
import numpy as np
from fastpriv._kernels import metrics as M
from fastpriv._validation import kernel_array

if sys.argv[1] == "fallback":       # the first, lazy load fails (say, a missing symbol)
    from numba.core import caching

    real = caching.FunctionCache._load_overload
    calls = []

    def fail_once(self, sig, ctx):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("symbols not found")
        return real(self, sig, ctx)

    caching.FunctionCache._load_overload = fail_once
out = M.group_spread(kernel_array(np.array([0, 0, 1, -1]), np.int64),
                     kernel_array(np.array([[1.0, 2.0], [3.0, 5.0], [5.0, 6.0], [9.0, 9.0]]),
                                  np.float64), 2)
loaded = {"hits": int(sum(M.group_spread.stats.cache_hits.values())),
          "out": np.nan_to_num(out, nan=-1.0).tolist(),
          # what Numba's full set-up imports (registries) and what its BLAS probe imports
          "registries": "numba.typed.typeddict" in sys.modules,
          "scipy_linalg": "scipy.linalg" in sys.modules}
if sys.argv[1] == "then-compile":   # a new kernel in the same process: the full set-up runs
    from fastpriv._jit import kernel

    def _cache_load_probe(a):
        return np.sort(a)[::-1].copy()

    fresh = kernel(_cache_load_probe)
    from numba.core.caching import NullCache
    fresh._cache = NullCache()
    loaded["compiled"] = fresh(np.array([3.0, 1.0, 2.0])).tolist()
    loaded["registries_after"] = "numba.typed.typeddict" in sys.modules
if sys.argv[1] == "fallback":
    loaded["calls"] = len(calls)
print(json.dumps(loaded))
"""


def _run(cache, mode="load"):
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTPRIV_NO_CACHE", "NUMBA_CACHE_DIR")}
    env["FASTPRIV_CACHE_DIR"] = str(cache)
    env["FASTPRIV_PROGRESS"] = "0"
    proc = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["out"] == [[2.0, 3.0], [0.0, 0.0]]
    return res, proc.stderr


def test_cached_kernel_loads_without_the_compiler_set_up(tmp_path):
    cache = tmp_path / "cache"
    first, _ = _run(cache)
    assert first["hits"] == 0 and first["registries"]      # compiled: full set-up
    res, err = _run(cache)
    assert res["hits"] == 1, err                            # loaded from the cache ...
    assert not res["registries"] and not res["scipy_linalg"], res   # ... without the set-up
    assert err == ""
    res, err = _run(cache, "then-compile")
    assert res["hits"] == 1 and not res["registries"]
    assert res["compiled"] == [3.0, 2.0, 1.0] and res["registries_after"]


def test_arraymath_imported_without_the_blas_probe_answers_like_numba(tmp_path):
    code = ("import sys, fastpriv._jit; from numba.core.registry import cpu_target; "
            "from fastpriv._cache import _runtime_only; "
            "_runtime_only(cpu_target.target_context); "
            "from numba.np import arraymath, linalg; "
            "print(arraymath._HAVE_BLAS, 'scipy.linalg' in sys.modules, "
            "arraymath.ensure_blas is linalg.ensure_blas, "
            "linalg.ensure_blas.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    numba_says = subprocess.run(    # Numba's own answer, probe included, in a fresh process
        [sys.executable, "-c", "import numba.np.arraymath as a; print(a._HAVE_BLAS)"],
        capture_output=True, text=True, timeout=300, check=True).stdout.split()
    assert out == [*numba_says, "False", "True", "numba.np.linalg"]


def test_a_failed_lazy_load_is_retried_after_the_full_set_up(tmp_path):
    cache = tmp_path / "cache"
    _run(cache)
    res, err = _run(cache, "fallback")
    # loaded on the second try, after Numba's refresh; not recompiled, nothing logged
    assert res["calls"] == 2 and res["hits"] == 1 and res["registries"], res
    assert err == ""


EXIT = r"""
import atexit, gc, sys
# registered first, so it runs last: after fastpriv's exit handler
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0, flush=True))
import fastpriv._jit

class Finalized:
    def __del__(self):
        print("finalized", flush=True)

cycle = Finalized()
cycle.me = cycle
del cycle                       # garbage with a finalizer, left to the exit
if sys.argv[1] == "gc-off":
    gc.disable()
"""


def test_exit_finalizes_the_garbage_then_freezes_the_rest():
    def run(mode):
        return subprocess.run([sys.executable, "-c", EXIT, mode], capture_output=True,
                              text=True, timeout=300, check=True).stdout.split("\n")

    out = run("gc-on")
    assert "finalized" in out and "frozen True" in out
    assert out.index("finalized") < out.index("frozen True")
    out = run("gc-off")             # a program that turned the collector off is left as is
    assert "frozen False" in out
