"""What a ``fastpriv`` process does before its command runs: keep pandas out unless needed.

pyarrow imports pandas, when it is installed, the first time any array or scalar is built
(``pyarrow.array``, ``pyarrow.scalar``, even ``import pyarrow.dataset``): its pandas shim
checks once whether the argument could be a pandas object. That import costs 0.15–0.2 s on
a 2-core machine — a quarter of a cached command — and a command that reads its table
from a file never touches pandas.

:func:`defer_pandas` lets that first check run while ``import pandas`` is refused, so the
shim records "no pandas" without importing it, and arms a one-shot import hook: the first
time anything in the process really imports pandas (a Dask engine, a user's plug-in), the
hook, once pandas has loaded, asks the shim to look again (``_pandas_api.version`` retries
the import, as every pyarrow entry point that needs pandas does). From then on pyarrow sees
pandas exactly as in a process that never deferred it: categoricals convert to dictionary
arrays, ``Table.from_pandas`` keeps the pandas types (``tests/test_cli_startup.py``).

Only the console script and ``python -m fastpriv`` defer pandas; :func:`fastpriv.cli.main`
called from Python (a notebook, a test) leaves the process as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses ``import pandas`` while pyarrow's shim makes its first check."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is deferred", name=name)
        return None


class _RearmOnImport(importlib.abc.MetaPathFinder):
    """On the first real ``import pandas``: load it, then let pyarrow's shim look again."""

    def __init__(self, shim: Any) -> None:
        self.shim = shim

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas":
            return None
        sys.meta_path.remove(self)               # one shot: the real finders take over
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        shim, exec_module = self.shim, spec.loader.exec_module

        def exec_and_rearm(module: Any) -> None:
            exec_module(module)
            try:
                _ = shim.version                 # retries the import: pandas is now there
            except ImportError:                  # an incomplete pandas: pyarrow refuses it
                pass

        spec.loader.exec_module = exec_and_rearm
        return spec


def defer_pandas() -> None:
    """Let pyarrow's one-time pandas check pass without importing pandas (module docstring).

    A no-op when pandas is already imported, when pyarrow's shim has already looked, or
    when this pyarrow has no shim to re-arm (then nothing is deferred).
    """
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    shim = getattr(getattr(pa, "lib", None), "_pandas_api", None)
    if shim is None or not hasattr(type(shim), "version"):
        return
    refuse = _Refuse()
    sys.meta_path.insert(0, refuse)
    try:
        pa.scalar(0)                             # the shim's first (and only) lookup
    finally:
        sys.meta_path.remove(refuse)
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _RearmOnImport(shim))
