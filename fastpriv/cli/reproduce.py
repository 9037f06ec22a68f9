"""``fastpriv reproduce``: rerun the papers' experiments (needs a source checkout).

The experiments live in the source tree's ``benchmarks/`` folder, which is not installed with
the package. They are loaded from the checkout this ``fastpriv`` package itself lives in (the
folder above ``fastpriv/``, whose ``pyproject.toml`` names fastpriv): its ``benchmarks/``
(and ``tests/``, whose reference kernels one benchmark imports), by file location, never
through ``sys.path`` — a ``benchmarks/`` folder in the current directory is never imported
(it could be anything). An installed wheel has no checkout around it, and the command says
so (exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType

from ..errors import InputError

ORDER = 90

#: The source tree's packages the experiments import, by their top-level names.
SOURCE_PACKAGES = ("benchmarks", "tests")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``reproduce`` sub-command."""
    from ._common import add_command

    p = add_command(
        sub, "reproduce", help="rerun the papers' experiments and write REPRODUCTION.md",
        description="Run every experiment of the specification's experiments.md that is in "
                    "this checkout (the benchmark functions of benchmarks/ and the drivers of "
                    "benchmarks/reproduce.py), write their result JSON and plots to OUT and "
                    "REPRODUCTION.md with our numbers beside the published ones and the "
                    "machine. Same as `python -m benchmarks.reproduce`; needs the source "
                    "tree: the benchmarks/ folder beside this fastpriv package (an installed "
                    "wheel does not include it; exit status 2 then).",
        example="fastpriv reproduce --out repro --quick --only martin_fig5")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--quick", action="store_true",
                   help="small sizes: a smoke run of every experiment (about a minute)")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these experiments")
    p.add_argument("--markdown", metavar="PATH",
                   help="also write REPRODUCTION.md at PATH (links relative to it)")
    p.set_defaults(func=run)


def source_root() -> Path:
    """Return the folder holding this ``fastpriv`` package (a checkout's root, or site-packages)."""
    import fastpriv

    return Path(fastpriv.__file__).resolve().parents[1]


def _is_checkout(root: Path) -> bool:
    """Whether ``root`` is fastpriv's source tree (its ``pyproject.toml`` names fastpriv).

    Site-packages is not, even where another distribution installed a top-level
    ``benchmarks`` package beside fastpriv: that one is never run.
    """
    import re

    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"""^name\s*=\s*["']fastpriv["']""", text, re.MULTILINE) is not None


def _load_package(name: str, folder: Path) -> None:
    """Make ``folder`` the package ``name`` (by file location, never through ``sys.path``).

    A package of that name already imported from ``folder`` is kept; one imported from
    anywhere else is refused (its modules would be run instead of the checkout's).
    """
    import importlib.util

    loaded = sys.modules.get(name)
    if loaded is not None:
        where = [str(Path(p).resolve()) for p in getattr(loaded, "__path__", ())]
        if str(folder) in where:
            return
        raise InputError(f"a different '{name}' package is already imported "
                         f"({', '.join(where) or loaded!r}); fastpriv reproduce runs only "
                         f"the checkout's own, {folder}")
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:  # pragma: no cover - a file location always has one
        raise InputError(f"cannot load {folder} as the package '{name}'")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def _runner() -> ModuleType:
    """Return the checkout's ``benchmarks.reproduce`` (loaded by location, see the module)."""
    import importlib

    root = source_root()
    folder = root / "benchmarks"
    if not (_is_checkout(root) and (folder / "__init__.py").is_file()
            and (folder / "reproduce.py").is_file()):
        raise InputError(
            f"this command needs a source checkout of fastpriv: the experiments are in the "
            f"repository's benchmarks/ folder, which an installed package does not include "
            f"(there is none beside {root / 'fastpriv'}); clone the repository, run "
            f"`pip install -e .` in it and run fastpriv reproduce again")
    for name in SOURCE_PACKAGES:
        if (root / name / "__init__.py").is_file():
            _load_package(name, root / name)
    return importlib.import_module("benchmarks.reproduce")


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv reproduce``."""
    mod = _runner()
    known = [e.id for e in mod.EXPERIMENTS]
    unknown = [x for x in args.only or () if x not in known]
    if unknown:
        raise InputError(f"--only: unknown experiment(s) {', '.join(unknown)}; known: "
                         f"{', '.join(known)}")
    index = mod.run(args.out, quick=args.quick, only=args.only, markdown=args.markdown)
    bad = [e["id"] for e in index["experiments"] if e["status"] == "failed"]
    print(f"wrote {args.out}/REPRODUCTION.md ({index['total_seconds']:.0f} s); failed: "
          f"{', '.join(bad) or 'none'}")
    return 1 if bad else 0
