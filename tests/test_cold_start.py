"""Cold-start machinery: the GC pause around compiles, the compile-phase profile, and the
one-segment drivers that reuse the batched kernels instead of linking their own copies."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv._jit import kernel
from fastpriv._kernels import possible_worlds as pw
from fastpriv._validation import kernel_array


def _fresh_kernel(fn):
    """``fn`` as a fastpriv kernel (its module named like one) that always compiles."""
    from numba.core.caching import NullCache

    fn.__module__ = "fastpriv._kernels.cold_start_probe"
    disp = kernel(fn)
    disp._cache = NullCache()  # never loaded from a disk cache: it compiles in every run
    return disp


def test_gc_paused_while_a_kernel_compiles_and_restored_after():
    from numba.core import event as ev

    seen = []

    class Probe(ev.Listener):
        def on_start(self, event):
            seen.append(gc.isenabled())

        def on_end(self, event):
            pass

    def _cold_start_probe(a):  # a fresh kernel: compiles in this test
        s = 0
        for x in a:
            s += x
        return s

    _cold_start_probe = _fresh_kernel(_cold_start_probe)

    assert gc.isenabled()
    probe = Probe()
    ev.register("numba:run_pass", probe)
    try:
        assert _cold_start_probe(np.arange(4, dtype=np.int64)) == 6
    finally:
        ev.unregister("numba:run_pass", probe)
    assert seen and not any(seen)        # every compiler pass ran with the GC paused
    assert gc.isenabled()                # and it is back on afterwards


def test_gc_left_off_when_the_caller_turned_it_off():
    def _cold_start_probe2(a):
        return a[0] + 1

    _cold_start_probe2 = _fresh_kernel(_cold_start_probe2)

    gc.disable()
    try:
        _cold_start_probe2(np.arange(3, dtype=np.int64))
        assert not gc.isenabled()        # the pause never re-enables a GC the user disabled
    finally:
        gc.enable()


def _one_segment_batch(f, n):
    fa = kernel_array(np.asarray(f, dtype=np.float64), np.float64)
    return pw.binary_posteriors_csr(kernel_array(np.array([0, fa.shape[0]]), np.int64), fa,
                                    kernel_array(np.array([n]), np.int64),
                                    int(pw.PREFIX_LIMIT), 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.data())
def test_binary_loo_posteriors_are_the_batch_kernels_bit_for_bit(f, data):
    """binary_loo(mode 0) and a batch of one segment give identical bits, closed form
    (min(n, N - n) <= 1) included."""
    n = data.draw(st.sampled_from(sorted({0, 1, len(f) - 1, len(f), len(f) // 2})))
    n = max(0, min(n, len(f)))
    st_, p, _, le = pw.binary_loo(kernel_array(np.asarray(f), np.float64), n,
                                  int(pw.PREFIX_LIMIT), 0, 0)
    ref_p, ref_st, ref_le = _one_segment_batch(f, n)
    assert st_ == ref_st[0]
    assert p.tobytes() == ref_p.tobytes()
    assert np.float64(le).tobytes() == ref_le[:1].tobytes()


def test_binary_loo_closed_form_matches_the_definition():
    """n = 1: p_j = f_j Π_{i≠j}(1 - f_i) / Σ_k f_k Π_{i≠k}(1 - f_i) (plain Python)."""
    f = [0.2, 0.5, 0.9, 0.3]
    w = []
    for j, fj in enumerate(f):
        prod = fj
        for i, fi in enumerate(f):
            if i != j:
                prod *= 1.0 - fi
        w.append(prod)
    expected = [x / sum(w) for x in w]
    st_, p, _, _ = pw.binary_loo(kernel_array(np.asarray(f), np.float64), 1,
                                 int(pw.PREFIX_LIMIT), 0, 0)
    assert st_ == pw.STATUS_OK
    np.testing.assert_allclose(p, expected, rtol=1e-13)


def test_compile_profile_has_phases():
    """The cold-start bench's recorder splits a compile into phases that add up."""
    from benchmarks.bench_cold_start import PHASES, SMOKE_CODE, run_fresh

    cold = run_fresh("code", SMOKE_CODE, [], cache=None)
    assert cold["rc"] == 0, cold["stderr_tail"]
    assert cold["compiled_kernels"] == 1
    phases = cold["compile_phases_s"]
    assert set(phases) >= set(PHASES)
    assert phases["llvm"] > 0 and phases["lowering"] > 0 and phases["typing"] > 0
    assert abs(sum(phases.values()) - cold["compile_s"]) < 0.05 + 0.01 * cold["compile_s"]
    row = next(iter(cold["compiles"].values()))
    assert abs(sum(row["phases"].values()) - row["s"]) < 1e-6


def test_split_models_keeps_the_shared_kernels_together_and_covers_every_model():
    from fastpriv._warmup import MODELS, split_models

    for jobs in (1, 2, 3, 9, 20):
        groups = split_models(MODELS, jobs)
        assert sorted(m for g in groups for m in g) == sorted(MODELS)
        assert len(groups) <= max(1, jobs)
        if jobs > 1:
            assert any({"art", "foreground", "robustness"} <= set(g) for g in groups)
    assert split_models(["classic"], 4) == [["classic"]]


@pytest.mark.slow   # compiles every model in worker processes
def test_warmup_jobs_fills_one_cache_that_a_later_process_hits(tmp_path):
    """Two worker processes warm disjoint models into one cache directory; a fresh process
    then compiles nothing for those models."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "FASTPRIV_NO_CACHE"}
    env["FASTPRIV_CACHE_DIR"] = str(tmp_path / "cache")
    out = tmp_path / "w.json"
    cmd = [sys.executable, "-m", "fastpriv", "warmup", "--models", "metrics", "art"]
    subprocess.run(cmd + ["--jobs", "2", "--json", str(out)], check=True, env=env,
                   capture_output=True)
    first = json.loads(out.read_text())
    assert first["jobs"] == 2 and sorted(first["models"]) == ["art", "metrics"]
    assert first["compiled"] > 0
    again = tmp_path / "again.json"
    subprocess.run(cmd + ["--json", str(again)], check=True, env=env, capture_output=True)
    second = json.loads(again.read_text())
    # nothing compiles; entry points load (callees come inside their callers' code)
    assert second["compiled"] == 0 and second["loaded"] > 0
