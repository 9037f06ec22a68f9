"""The on-disk kernel cache travels: it is keyed on source contents, not on install paths.

Each scenario runs fresh Python subprocesses against *copies* of the ``fastpriv`` package in
different directories (different absolute paths and file modification times) sharing one
``FASTPRIV_CACHE_DIR``. Compilations are counted with Numba's ``numba:compile`` event,
which Numba triggers around every real compilation (cache loads do not trigger it) and
which sees every dispatcher of the process, including helpers compiled inside a caller;
the dispatcher's own ``stats.cache_hits`` confirm that the kernel came from the cache.
The workload is one small kernel (``fastpriv._kernels.metrics.group_spread``), so each
cold subprocess compiles for about a second.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastpriv
from fastpriv import _cache

PKG = Path(fastpriv.__file__).resolve().parent

PROBE = r"""
import json, sys
import numpy as np
from numba.core import event as ev

compiles = []

class Count(ev.Listener):
    def on_start(self, event):
        compiles.append(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event):
        pass

ev.register("numba:compile", Count())
import fastpriv
from fastpriv._kernels import metrics as M

out = M.group_spread(np.array([0, 0, 1, -1], dtype=np.int64),
                     np.array([[1.0, 2.0], [3.0, 5.0], [5.0, 6.0], [9.0, 9.0]]), 2)
print(json.dumps({"file": fastpriv.__file__, "compiles": compiles,
                  "hits": int(sum(M.group_spread.stats.cache_hits.values())),
                  "cache": type(M.group_spread._cache).__name__,
                  "out": np.nan_to_num(out, nan=-1.0).tolist()}))
"""


def _install(dest: Path, mtime: float) -> Path:
    """A copy of the package under ``dest`` with every file's mtime set to ``mtime``."""
    shutil.copytree(PKG, dest / "fastpriv", ignore=shutil.ignore_patterns("__pycache__"))
    for p in (dest / "fastpriv").rglob("*"):
        os.utime(p, (mtime, mtime))
    return dest


def _run(root: Path, cache_dir: str | None, **extra: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "FASTPRIV_NO_CACHE", "FASTPRIV_CACHE_DIR",
                        "NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = str(root)
    if cache_dir is not None:
        env["FASTPRIV_CACHE_DIR"] = cache_dir
    env.update(extra)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(res["file"]).resolve().is_relative_to(root.resolve()), res["file"]
    assert res["out"] == [[2.0, 3.0], [0.0, 0.0]]
    return res, proc.stderr


@pytest.fixture(scope="module")
def installs(tmp_path_factory):
    base = tmp_path_factory.mktemp("installs")
    a = _install(base / "site-a", 1_000_000_000.0)
    b = _install(base / "deep" / "other" / "site-b", 1_600_000_000.0)
    return a, b


@pytest.mark.slow
def test_cache_built_in_one_install_is_hit_by_a_copy(installs, tmp_path):
    a, b = installs
    cache = str(tmp_path / "shared-cache")
    warm, _ = _run(a, cache)
    assert "group_spread" in warm["compiles"] and warm["hits"] == 0
    assert warm["cache"] == "FastprivCache"
    cold_copy, err = _run(b, cache)
    assert cold_copy["compiles"] == [], cold_copy  # zero compilations in the other install
    assert cold_copy["hits"] == 1
    assert err == ""
    # the cache lives where the user said, under a directory named by source contents
    found = list(Path(cache).rglob("metrics.group_spread-*.nbi"))
    assert len(found) == 1
    assert found[0].parent == _cache.cache_dir_for(PKG / "_kernels" / "metrics.py",
                                                   Path(cache))


@pytest.mark.slow
def test_changed_source_is_recompiled(installs, tmp_path):
    a, b = installs
    cache = str(tmp_path / "cache")
    _run(a, cache)
    edited = tmp_path / "edited"
    shutil.copytree(b, edited)
    with open(edited / "fastpriv" / "_kernels" / "metrics.py", "a", encoding="utf-8") as fh:
        fh.write("\n# an edit changes the source hash\n")
    res, _ = _run(edited, cache)
    assert "group_spread" in res["compiles"] and res["hits"] == 0


def test_helper_module_edit_changes_the_callers_hash(tmp_path):
    kern = tmp_path / "k"
    kern.mkdir()
    (kern / "helper.py").write_text("X = 1\n")
    (kern / "caller.py").write_text("from .helper import X\n")
    before = _cache.source_hash(kern / "caller.py")
    (kern / "helper.py").write_text("X = 2\n")
    assert _cache.source_hash(kern / "caller.py") != before


@pytest.mark.slow
def test_read_only_cache_is_read_and_unusable_dir_falls_back(installs, tmp_path):
    a, b = installs
    cache = tmp_path / "ro-cache"
    _run(a, str(cache))
    if os.geteuid() != 0:  # root ignores permission bits
        for p in [cache, *cache.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            res, err = _run(b, str(cache))
            assert res["compiles"] == [] and res["hits"] == 1 and err == ""
        finally:
            for p in [cache, *cache.rglob("*")]:
                p.chmod(0o755 if p.is_dir() else 0o644)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res, err = _run(b, str(blocker / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    assert res["hits"] == 0 and "group_spread" in res["compiles"]
    notes = [line for line in err.splitlines()   # beside the compile lines, one note
             if line.strip() and not line.startswith("fastpriv: compil")]
    assert len(notes) == 1 and "FASTPRIV_CACHE_DIR" in notes[0], err


@pytest.mark.slow
def test_no_cache_switch(installs, tmp_path):
    _, b = installs
    cache = tmp_path / "unused"
    res, _ = _run(b, str(cache), FASTPRIV_NO_CACHE="1")
    assert res["cache"] == "NullCache" and res["compiles"]
    assert not cache.exists()


def test_default_root_honours_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("FASTPRIV_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert _cache.cache_root() == tmp_path / "fastpriv" / "numba"
    monkeypatch.setenv("FASTPRIV_CACHE_DIR", str(tmp_path / "mine"))
    assert _cache.cache_root() == tmp_path / "mine"
    assert len(_cache.source_hash(PKG / "_kernels" / "metrics.py")) == 64


def test_read_only_locator_loads_and_never_fails_a_save(monkeypatch, tmp_path):
    """In-process version of the read-only case (the subprocess one needs a non-root user)."""
    from fastpriv._kernels import metrics as M

    monkeypatch.setenv("FASTPRIV_CACHE_DIR", str(tmp_path))
    py_file = str(PKG / "_kernels" / "metrics.py")
    target = _cache.cache_dir_for(py_file)
    target.mkdir(parents=True)
    monkeypatch.setattr(_cache, "_writable", lambda *a: False)
    loc = _cache._ContentLocator.from_function(M.group_spread.py_func, py_file)
    assert loc is not None and loc.read_only and loc.get_cache_path() == str(target)
    with pytest.raises(OSError):
        loc.ensure_cache_path()
    cache = _cache.FastprivCache(M.group_spread.py_func)
    assert cache.cache_path == str(target)
    from fastpriv._validation import kernel_array

    disp = M.group_spread   # read-only inputs: production's one signature
    disp(kernel_array(np.zeros(1), np.int64), kernel_array(np.zeros((1, 1)), np.float64), 1)
    sig = disp.signatures[0]
    cache.save_overload(sig, disp.overloads[sig])  # swallowed: read-only
    assert list(target.iterdir()) == []
    target.rmdir()  # neither writable nor existing: numba's default locators take over
    assert _cache._ContentLocator.from_function(M.group_spread.py_func, py_file) is None


# ============================================================================ progress
@pytest.mark.slow
def test_compile_progress_goes_to_stderr_never_to_stdout(installs, tmp_path):
    _, b = installs
    res, err = _run(b, str(tmp_path / "c1"), FASTPRIV_PROGRESS="1")  # stdout JSON parses
    assert "compiling metrics kernels" in err
    assert "fastpriv: compiled 1 kernels (metrics)" in err
    res, err = _run(b, str(tmp_path / "c2"))  # stderr is a pipe: plain lines, still stderr
    assert res["compiles"] and "fastpriv: compiling metrics kernels for first use" in err
    res, err = _run(b, str(tmp_path / "c3"), FASTPRIV_PROGRESS="0")  # silenced
    assert res["compiles"] and err == ""
    res, err = _run(b, str(tmp_path / "c2"), FASTPRIV_PROGRESS="1")  # cached: nothing to say
    assert res["compiles"] == [] and err == ""


def test_progress_callback_live_and_quiet(monkeypatch):
    import io

    from fastpriv._progress import Progress, wanted

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("FASTPRIV_PROGRESS", raising=False)
    tty = Tty()
    assert wanted(stream=tty) and not wanted(stream=io.StringIO())
    bar = Progress("nodes tagged", stream=tty)
    for i in range(1, 11):
        bar(i, 10)
    bar.done()
    assert "nodes tagged" in tty.getvalue() and "10/10" in tty.getvalue()
    quiet = io.StringIO()
    bar = Progress("groups", stream=quiet)
    bar(3, 7)
    assert quiet.getvalue() == ""       # no live bar off a terminal ...
    bar.done()
    assert quiet.getvalue().startswith("  groups: 3/7 in ")  # ... one summary line at the end


def test_progress_env_switch(monkeypatch):
    import io

    from fastpriv._progress import wanted

    monkeypatch.setenv("FASTPRIV_PROGRESS", "1")
    assert wanted(stream=io.StringIO())
    monkeypatch.setenv("FASTPRIV_PROGRESS", "0")
    assert not wanted(True, io.StringIO())


# ============================================================================ cluster
@pytest.mark.slow
def test_dask_workers_share_one_cache(monkeypatch, tmp_path):
    """fastpriv.distributed.warm_workers on a LocalCluster of worker processes sharing one
    FASTPRIV_CACHE_DIR: the first worker compiles, the second only loads."""
    distributed = pytest.importorskip("distributed")
    from fastpriv.distributed import warm_workers

    cache = tmp_path / "cluster-cache"
    monkeypatch.setenv("FASTPRIV_CACHE_DIR", str(cache))  # inherited by the worker processes
    monkeypatch.delenv("FASTPRIV_NO_CACHE", raising=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as lc, \
            distributed.Client(lc) as client:
        report = warm_workers(client, models=["metrics"])
    first, second = (report[w] for w in sorted(report))
    assert first["pid"] != second["pid"]
    assert first["cache_dir"] == second["cache_dir"] == str(cache)
    assert first["compiled"] > 0 and not first["failed"]
    # the entry points load from the cache (their helpers are linked inside them)
    assert second["compiled"] == 0 and 0 < second["loaded"] <= first["compiled"]
    assert not second["failed"]


# ============================================================================ damage, trust
TINY = '''
import numpy as np
from fastpriv._jit import kernel


@kernel
def triple_sum(x):
    s = 0.0
    for v in x:
        s += v
    return 3.0 * s
'''

# the compile-counting preamble of PROBE, then the tiny module instead of fastpriv
TINY_PROBE = PROBE[:PROBE.index("import fastpriv")] + r"""import tinykern

out = tinykern.triple_sum(np.arange(5.0))
print(json.dumps({"out": out, "compiles": compiles,
                  "hits": int(sum(tinykern.triple_sum.stats.cache_hits.values())),
                  "cache": type(tinykern.triple_sum._cache).__name__}))
"""


def _tiny(tmp_path: Path, cache: Path) -> tuple[dict, str]:
    """Run the tiny kernel in a fresh interpreter with ``FASTPRIV_CACHE_DIR=cache``."""
    mod = tmp_path / "mod"
    mod.mkdir(exist_ok=True)
    (mod / "tinykern.py").write_text(TINY)
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTPRIV_NO_CACHE", "FASTPRIV_PROGRESS", "NUMBA_CACHE_DIR")}
    env["FASTPRIV_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(mod), str(PKG.parent)])
    proc = subprocess.run([sys.executable, "-c", TINY_PROBE], cwd=mod, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["out"] == 30.0          # 3 * (0 + 1 + 2 + 3 + 4): the right answer, always
    return res, proc.stderr


def _one_file(cache: Path, pattern: str) -> Path:
    found = list(cache.rglob(pattern))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow
def test_damaged_cache_entries_are_recompiled_and_overwritten(tmp_path):
    cache = tmp_path / "cache"
    first, err = _tiny(tmp_path, cache)
    assert first["compiles"] == ["triple_sum"] and first["hits"] == 0 and err == ""
    for pattern in ("tinykern.triple_sum-*.nbi", "tinykern.triple_sum-*.nbc"):
        entry = _one_file(cache, pattern)
        data = entry.read_bytes()
        entry.write_bytes(data[: len(data) // 2])           # truncated to half
        res, err = _tiny(tmp_path, cache)
        assert res["compiles"] == ["triple_sum"] and res["hits"] == 0
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "unreadable" in lines[0] and entry.name in lines[0], err
        assert entry.read_bytes() != data[: len(data) // 2]    # replaced
        res, err = _tiny(tmp_path, cache)                    # overwritten: a hit again
        assert res["compiles"] == [] and res["hits"] == 1 and err == ""
    entry = _one_file(cache, "tinykern.triple_sum-*.nbc")
    entry.write_bytes(b"\x80\x05garbage, not a pickle" * 3)
    res, err = _tiny(tmp_path, cache)
    assert res["compiles"] == ["triple_sum"] and "unreadable" in err


def test_damaged_index_reads_as_a_miss_in_process(tmp_path, caplog):
    f = _cache._TolerantCacheFile(str(tmp_path), "k-1.py311", "stamp")
    Path(f._index_path).write_bytes(b"\x80\x05\x95")        # a pickle cut short
    with caplog.at_level("WARNING", logger="fastpriv"):
        assert f._load_index() == {}
        assert f.load(("any", "key")) is None
    assert any("unreadable" in r.getMessage() for r in caplog.records)
    f.save("key", {"x": 1})                                   # rewritten, readable again
    assert f.load("key") == {"x": 1}
    Path(f._data_path(f._load_index()["key"])).write_bytes(b"not a pickle")
    assert f.load("key") is None


def test_cache_directories_are_created_private(monkeypatch, tmp_path):
    from fastpriv._kernels import metrics as M

    root = tmp_path / "fresh" / "root"
    monkeypatch.setenv("FASTPRIV_CACHE_DIR", str(root))
    _cache._writable.cache_clear()
    py_file = str(PKG / "_kernels" / "metrics.py")
    loc = _cache._ContentLocator.from_function(M.group_spread.py_func, py_file)
    assert loc is not None and not loc.read_only
    levels = _cache._levels(root, Path(loc.get_cache_path()))
    assert len(levels) == 4 and levels[-1].is_dir()
    if os.name == "posix":
        for level in levels:
            assert (level.stat().st_mode & 0o777) == 0o700, level


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_unsafe_reason_rules(tmp_path):
    root = tmp_path / "root"
    kern = root / "a" / "b"
    kern.mkdir(parents=True, mode=0o700)
    for p in (root, root / "a", kern):
        p.chmod(0o700)
    me = os.geteuid()
    assert _cache.unsafe_reason(root, kern, euid=me) is None
    (root / "a").chmod(0o757)                                  # others may write a level
    assert "writable by others" in _cache.unsafe_reason(root, kern, euid=me)
    (root / "a").chmod(0o770)
    assert "writable by its group" in _cache.unsafe_reason(root, kern, euid=me)
    (root / "a").chmod(0o755)
    if me == 0:
        # owned by root and not writable by others: what a read-only image layer holds
        assert _cache.unsafe_reason(root, kern, euid=1000) is None
        os.chown(kern, 12345, -1)                              # another (non-root) user's
        assert "owned by another user" in _cache.unsafe_reason(root, kern, euid=1000)
        assert "owned by another user" in _cache.unsafe_reason(root, kern, euid=0)
        assert _cache.unsafe_reason(root, kern, euid=12345) is None


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_world_writable_cache_is_ignored_in_process(monkeypatch, tmp_path, caplog):
    from fastpriv._kernels import metrics as M

    root = tmp_path / "shared"
    monkeypatch.setenv("FASTPRIV_CACHE_DIR", str(root))
    monkeypatch.setattr(_cache, "_NOTED", set())
    _cache._writable.cache_clear()
    assert type(_cache.make_cache(M.group_spread.py_func)).__name__ == "FastprivCache"
    root.chmod(0o777)
    with caplog.at_level("WARNING", logger="fastpriv"):
        cache = _cache.make_cache(M.group_spread.py_func)
        again = _cache.make_cache(M.group_spread.py_func)
    assert type(cache).__name__ == type(again).__name__ == "NullCache"
    notes = [r.getMessage() for r in caplog.records if "ignoring the kernel cache" in
             r.getMessage()]
    assert len(notes) == 1 and str(root) in notes[0] and "0777" in notes[0]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_world_writable_cache_dir_is_not_read(tmp_path):
    cache = tmp_path / "cache"
    res, err = _tiny(tmp_path, cache)                          # fill it
    assert res["cache"] == "FastprivCache" and err == ""
    assert (cache.stat().st_mode & 0o777) == 0o700
    cache.chmod(0o777)
    res, err = _tiny(tmp_path, cache)
    assert res["cache"] == "NullCache" and res["compiles"] == ["triple_sum"]
    assert res["hits"] == 0                                    # compiled in memory, right answer
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "ignoring the kernel cache" in lines[0], err
    assert str(cache) in lines[0]
