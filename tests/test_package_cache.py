"""Kernels compiled with the package: loaded without compiling, or compiled with one reason.

A copy of the package gets a ``_kernel_cache`` filled the way a wheel build fills it
(``python -m fastpriv._package_cache build``, in a subprocess whose code generator targets
the ``generic`` x86-64 CPU), but with one small kernel instead of the whole warm-up. Fresh
processes then run that kernel with an empty user cache: they load the package's entry —
compiled for another CPU than the host's — and compile nothing; with a manifest naming
another Numba version, they compile, and one line says why. Compilations are counted with
Numba's ``numba:compile`` event (cache loads do not trigger it).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastpriv
from fastpriv import _cache as C
from fastpriv import _package_cache as P

PKG = Path(fastpriv.__file__).resolve().parent

WORK = r"""
import numpy as np
from fastpriv._kernels import metrics as M

out = M.group_spread(np.array([0, 0, 1, -1], dtype=np.int64),
                     np.array([[1.0, 2.0], [3.0, 5.0], [5.0, 6.0], [9.0, 9.0]]), 2)
"""

PROBE = r"""
import json
from numba.core import event as ev

compiles = []

class Count(ev.Listener):
    def on_start(self, event):
        compiles.append(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event):
        pass

ev.register("numba:compile", Count())
import fastpriv
""" + WORK + r"""
print(json.dumps({"file": fastpriv.__file__, "compiles": compiles,
                  "hits": int(sum(M.group_spread.stats.cache_hits.values())),
                  "cache": type(M.group_spread._cache).__name__, "out": out.tolist()}))
"""


def _env(site: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_", "FASTPRIV_")) and k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A copy of the package whose ``_kernel_cache`` holds ``group_spread`` for ``generic``."""
    base = tmp_path_factory.mktemp("shipped")
    site = base / "site"
    shutil.copytree(PKG, site / "fastpriv", ignore=shutil.ignore_patterns("__pycache__",
                                                                           "_kernel_cache"))
    proc = subprocess.run([sys.executable, "-m", "fastpriv._package_cache", "build",
                           str(site / "fastpriv" / "_kernel_cache"), "--target", "generic",
                           "--code", WORK], cwd=base, env=_env(site), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "compiled 1 kernel for generic" in proc.stderr, proc.stderr
    return site


def _probe(site: Path, user_cache: Path) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=site.parent,
                          env=_env(site, FASTPRIV_CACHE_DIR=str(user_cache)),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(res["file"]).resolve().is_relative_to(site.resolve()), res["file"]
    assert res["out"] == [[2.0, 3.0], [0.0, 0.0]]          # the right answer, always
    return res, proc.stderr


def test_the_package_cache_holds_generic_code(site):
    manifest = json.loads((site / "fastpriv" / "_kernel_cache" / C.MANIFEST).read_text())
    (target,) = manifest["targets"]
    assert target["name"] == "generic" and target["magic"][1:] == ["generic", ""]
    assert target["kernels"] == 1
    import llvmlite
    import numba

    assert (manifest["numba"], manifest["llvmlite"]) == (numba.__version__, llvmlite.__version__)
    index = next((site / "fastpriv" / "_kernel_cache" / target["dir"]).rglob("*.nbi"))
    with open(index, "rb") as fh:
        assert pickle.load(fh) == numba.__version__
        _, overloads = pickle.loads(fh.read())
    (key,) = overloads                  # (signature, magic tuple, bytecode hashes)
    assert list(key[1]) == target["magic"]


def test_fresh_process_with_empty_user_cache_loads_without_compiling(site, tmp_path):
    res, err = _probe(site, tmp_path / "user")
    assert res["compiles"] == [] and res["hits"] == 1, res
    assert res["cache"] == "FastprivCache" and err == ""
    assert not list((tmp_path / "user").rglob("*.nb*"))   # nothing compiled, nothing saved


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_untrusted_user_cache_still_loads_the_package_kernels(site, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)                 # others could plant code: the user cache is ignored
    res, err = _probe(site, shared)
    assert res["compiles"] == [] and res["hits"] == 1 and res["cache"] == "_PackageOnlyCache"
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "ignoring the kernel cache" in lines[0], err
    assert "loaded from the package's compiled kernels or compiled in memory" in lines[0]


def test_other_numba_version_compiles_and_says_why_in_one_line(site, tmp_path):
    other = tmp_path / "site"
    shutil.copytree(site, other)
    path = other / "fastpriv" / "_kernel_cache" / C.MANIFEST
    manifest = json.loads(path.read_text())
    built = manifest["numba"]
    manifest["numba"] = "0.1.0"
    path.write_text(json.dumps(manifest))
    res, err = _probe(other, tmp_path / "user")
    assert "group_spread" in res["compiles"] and res["hits"] == 0
    lines = [line for line in err.splitlines()          # beside the compile notice, one line
             if line.strip() and not line.startswith("fastpriv: compil")]
    assert len(lines) == 1, err
    assert "built with Numba 0.1.0; installed: Numba " + built in lines[0], lines
    assert "compiled on first use" in lines[0]
    res, err = _probe(other, tmp_path / "user")          # the user's cache serves it now
    assert res["compiles"] == [] and res["hits"] == 1 and err == ""


def test_target_is_picked_by_the_cpu_features(monkeypatch, tmp_path):
    versions = C._versions()
    triple = "x86_64-unknown-linux-gnu"
    manifest = {**versions, "triple": triple, "targets": [
        {"name": t, "requires": list(C.TARGETS[t][1]), "magic": [triple, C.TARGETS[t][0], ""],
         "dir": f"d-{t}"} for t in ("x86-64-v3", "generic")]}
    (tmp_path / C.MANIFEST).write_text(json.dumps(manifest))
    monkeypatch.setattr(C, "PACKAGE_CACHE", tmp_path)
    v3 = ",".join("+" + f for f in C.TARGETS["x86-64-v3"][1])
    for features, expected in ((v3 + ",+avx512f", "x86-64-v3"),
                               (v3.replace("+avx2", "-avx2"), "generic"), ("", "generic")):
        monkeypatch.setattr(C, "_host_magic", lambda f=features: (triple, "somecpu", f))
        C.shipped.cache_clear()
        found = C.shipped()
        assert found is not None and found.target == expected, (features, found)
        assert found.root == tmp_path / f"d-{expected}"
        assert found.magic == (triple, C.TARGETS[expected][0], "")
    C.shipped.cache_clear()


def test_target_env_drops_the_builders_numba_settings():
    env = P.target_env("generic", "/x", {"NUMBA_OPT": "0", "NUMBA_BOUNDSCHECK": "1",
                                         "FASTPRIV_NO_CACHE": "1", "HOME": "/h"})
    assert env["NUMBA_CPU_NAME"] == "generic" and env["NUMBA_CPU_FEATURES"] == ""
    assert env["FASTPRIV_CACHE_DIR"] == "/x" and env["HOME"] == "/h"
    assert "NUMBA_OPT" not in env and "NUMBA_BOUNDSCHECK" not in env
    assert "FASTPRIV_NO_CACHE" not in env and int(env["NUMBA_NUM_THREADS"]) >= 2


def test_no_user_cache_location_still_loads_the_package_kernels(site, monkeypatch, caplog):
    """In process (root writes anywhere, so no subprocess lacks every location)."""
    import numpy as np

    from fastpriv import _cache
    from fastpriv._kernels import metrics as M

    def nowhere(*a, **k):
        raise RuntimeError("cannot cache function: no locator available")

    shipped = site / "fastpriv" / "_kernel_cache"
    monkeypatch.setattr(_cache, "FastprivCache", nowhere)
    monkeypatch.setattr(_cache, "PACKAGE_CACHE", shipped)
    monkeypatch.setattr(_cache, "_NOTED", set())
    C.shipped.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="fastpriv"):
            cache = _cache.make_cache(M.group_spread.py_func)
        assert type(cache).__name__ == "_PackageOnlyCache"
        assert "loaded from the package's compiled kernels" in caplog.text
        args = (np.array([0, 0, 1, -1], dtype=np.int64),        # as WORK calls it
                np.array([[1.0, 2.0], [3.0, 5.0], [5.0, 6.0], [9.0, 9.0]]), 2)
        sig = tuple(M.group_spread.typeof_pyval(a) for a in args)
        cres = cache.load_overload(sig, M.group_spread.targetctx)
        assert cres is not None         # rebuilt from the package's generic entry
        assert cres.entry_point(*args).tolist() == [[2.0, 3.0], [0.0, 0.0]]
        cache.save_overload(sig, cres)  # never written
        assert len(list(shipped.rglob("*.nbc"))) == 1
    finally:
        C.shipped.cache_clear()


def test_a_manifest_that_does_not_parse_is_one_line_never_an_error(monkeypatch, tmp_path,
                                                                    caplog):
    monkeypatch.setattr(C, "PACKAGE_CACHE", tmp_path)
    for text in ("{not json", json.dumps({**C._versions(), "targets": [{"name": "generic"}]})):
        (tmp_path / C.MANIFEST).write_text(text)
        monkeypatch.setattr(C, "_NOTED", set())
        C.shipped.cache_clear()
        with caplog.at_level("WARNING", logger="fastpriv"):
            caplog.clear()
            assert C.shipped() is None
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1 and "is unreadable" in lines[0] and "compiled on first use" \
            in lines[0], lines
    C.shipped.cache_clear()
