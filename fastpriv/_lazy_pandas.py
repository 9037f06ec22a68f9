"""Keep pandas out of a process until something needs it.

pyarrow imports pandas, when it is installed, the first time any array or scalar is built
(``pyarrow.array``, ``pyarrow.scalar``, even ``import pyarrow.dataset``): its pandas shim
checks once whether the argument could be a pandas object. That import costs 0.15–0.2 s on
a 2-core machine — a quarter of a cached command, and of a first call in a fresh ETL or
Spark process — and a call that reads its table from a file never touches pandas.

:func:`defer_pandas` (run when :mod:`fastpriv._arrow` is first imported) lets that first
check run while ``import pandas`` is refused to this thread, so the shim records "no
pandas" without importing it, and arms a one-shot import hook: the first time anything in
the process really imports pandas (the caller, a Dask engine), the hook, once pandas has
loaded, asks the shim to look again (``_pandas_api.version`` retries the import, as every
pyarrow entry point that needs pandas does). From then on pyarrow sees pandas exactly as
in a process that never deferred it: categoricals convert to dictionary arrays,
``Table.from_pandas`` keeps the pandas types (``tests/test_lazy_pandas.py``). A process
that imported pandas, or used pyarrow, before fastpriv is left as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from typing import Any


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses ``import pandas`` to one thread while pyarrow's shim makes its first check.

    Another thread importing pandas meanwhile gets it.
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError("pandas is deferred", name=name)
        return None


class _RearmOnImport(importlib.abc.MetaPathFinder):
    """On the first real ``import pandas``: load it, then let pyarrow's shim look again."""

    def __init__(self, shim: Any) -> None:
        self.shim = shim

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas":
            return None
        try:
            sys.meta_path.remove(self)           # one shot: the real finders take over
        except ValueError:                       # another thread got here first
            return None
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


_deferred = False


def defer_pandas() -> None:
    """Let pyarrow's one-time pandas check pass without importing pandas (module docstring).

    A no-op when pandas is already imported, when pyarrow's shim has already looked, or
    when this pyarrow has no shim to re-arm (then nothing is deferred). Runs once.
    """
    global _deferred
    if _deferred or "pandas" in sys.modules:
        return
    _deferred = True
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
