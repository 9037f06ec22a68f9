"""PEP 517 back end: setuptools', plus what compiling the kernels needs in a wheel build.

Building a wheel compiles fastpriv's kernels (``setup.py``), which runs fastpriv itself, so
the isolated build environment needs fastpriv's runtime dependencies (Numba, NumPy,
pyarrow, tqdm: ``[project] dependencies`` of ``pyproject.toml``). Only a wheel build asks
for them: an sdist or an editable install compiles nothing and installs nothing more.
"""

from __future__ import annotations

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every hook setuptools provides

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def _runtime_dependencies() -> list[str]:
    with open("pyproject.toml", "rb") as fh:     # the hooks run in the source tree
        return list(tomllib.load(fh)["project"]["dependencies"])


def get_requires_for_build_wheel(config_settings=None):
    """Return setuptools' requirements, and fastpriv's runtime ones to compile the kernels."""
    extra = [] if os.environ.get("FASTPRIV_BUILD_KERNELS", "1").strip().lower() in (
        "0", "false", "no", "off") else _runtime_dependencies()
    return _setuptools.get_requires_for_build_wheel(config_settings) + extra
