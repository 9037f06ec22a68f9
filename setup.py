"""setuptools hooks: a wheel, and a non-editable ``pip install .``, ship compiled kernels.

``build_py`` copies the sources into the build directory, then compiles every kernel — the
warm-up workload of ``fastpriv warmup`` — for a portable CPU (the architecture's baseline;
``FASTPRIV_KERNEL_TARGETS=x86-64-v3,generic`` adds AVX2 code) into
``<build>/fastpriv/_kernel_cache`` (``python -m fastpriv._package_cache build``, run on the
copied package in fresh processes; 1-2 minutes of CPU per target; progress lines on stderr,
which pip shows with ``-v``). Everything in the build directory goes into the wheel, so the
kernels ship as package data, and the wheel is tagged for this Python and platform
(``cp311-cp311-linux_x86_64``): the machine code is for this architecture and the cache for
this Python.

An editable install (``pip install -e .``) compiles nothing: kernels compile on first use
and are cached in the user's cache (``fastpriv warmup`` compiles them all ahead).
``FASTPRIV_BUILD_KERNELS=0`` builds a wheel without kernels (pure Python, compiled on first
use). The build back end (``build_backend/fastpriv_build.py``) gives a wheel build the
runtime dependencies the warm-up needs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py


def kernels_wanted() -> bool:
    """Return whether a (non-editable) build compiles the kernels (``FASTPRIV_BUILD_KERNELS``)."""
    return os.environ.get("FASTPRIV_BUILD_KERNELS", "1").strip().lower() not in (
        "0", "false", "no", "off")


class BuildPyWithKernels(build_py):
    """``build_py``, then the kernels compiled into the built package (not when editable)."""

    def run(self) -> None:
        """Copy the sources, then compile the kernels into the copy."""
        super().run()
        if self.editable_mode or not kernels_wanted():
            return
        lib = Path(self.build_lib).resolve()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(lib), env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "fastpriv._package_cache", "build",
               str(lib / "fastpriv" / "_kernel_cache")]
        with tempfile.TemporaryDirectory() as tmp:     # not the source tree's fastpriv
            proc = subprocess.run(cmd, cwd=tmp, env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit("compiling fastpriv's kernels failed (above); "
                             "FASTPRIV_BUILD_KERNELS=0 builds without them (they then "
                             "compile on first use)")


class KernelDistribution(Distribution):
    """A distribution holding machine code: its wheel is for one Python and platform.

    Not ``py3-none-any``, and installed as platform-specific (the wheel's root is
    ``platlib``), like a package with C extensions.
    """

    def has_ext_modules(self) -> bool:
        """Return whether the build compiles the kernels (the wheel then holds machine code)."""
        return kernels_wanted()


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPyWithKernels}, distclass=KernelDistribution)
