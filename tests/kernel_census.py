"""Every compiled kernel of the package, for the tests that count their specializations.

Read by ``tests/test_jit_policy.py`` (the policy of every kernel) and
``tests/test_zz_signatures.py`` (no kernel compiled twice in a session).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

from numba.core.registry import CPUDispatcher

import fastpriv._kernels


def kernel_modules() -> Iterator[ModuleType]:
    """Every module of :mod:`fastpriv._kernels`, imported."""
    for info in pkgutil.iter_modules(fastpriv._kernels.__path__):
        yield importlib.import_module(f"fastpriv._kernels.{info.name}")


def dispatchers() -> Iterator[tuple[str, CPUDispatcher]]:
    """``(qualified name, dispatcher)`` of every kernel defined in :mod:`fastpriv._kernels`."""
    for mod in kernel_modules():
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.__module__ == mod.__name__:
                yield f"{mod.__name__}.{name}", obj
