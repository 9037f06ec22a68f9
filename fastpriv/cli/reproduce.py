"""``fastpriv reproduce``: rerun the papers' experiments (needs a source checkout)."""

from __future__ import annotations

import argparse

from ..errors import InputError

ORDER = 90


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
                    "tree (the benchmarks/ folder is not installed with the package).",
        example="fastpriv reproduce --out repro --quick --only martin_fig5")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--quick", action="store_true",
                   help="small sizes: a smoke run of every experiment (about a minute)")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these experiments")
    p.add_argument("--markdown", metavar="PATH",
                   help="also write REPRODUCTION.md at PATH (links relative to it)")
    p.set_defaults(func=run)


def _runner():
    """Import ``benchmarks.reproduce`` from the working directory or the source tree."""
    import importlib
    import os
    import sys

    try:
        return importlib.import_module("benchmarks.reproduce")
    except ModuleNotFoundError as exc:
        if exc.name not in ("benchmarks", "benchmarks.reproduce"):
            raise
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for root in (os.getcwd(), here):
        if os.path.isfile(os.path.join(root, "benchmarks", "reproduce.py")):
            sys.path.insert(0, root)
            return importlib.import_module("benchmarks.reproduce")
    raise InputError("fastpriv reproduce needs a source checkout of fastpriv (the benchmarks/ "
                     "folder); run it from the repository root")


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv reproduce``."""
    mod = _runner()
    index = mod.run(args.out, quick=args.quick, only=args.only, markdown=args.markdown)
    bad = [e["id"] for e in index["experiments"] if e["status"] == "failed"]
    print(f"wrote {args.out}/REPRODUCTION.md ({index['total_seconds']:.0f} s); failed: "
          f"{', '.join(bad) or 'none'}")
    return 1 if bad else 0
