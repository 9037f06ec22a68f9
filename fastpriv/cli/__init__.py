"""The ``fastpriv`` command.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``; modules are discovered, so adding a command never touches this
file. Command modules import only ``argparse`` at module level and import NumPy, Arrow and
the kernels inside their run function, so ``fastpriv --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from .._version import __version__


def _command_modules() -> list:
    mods = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mods.append(importlib.import_module(f"{__name__}.{info.name}"))
    return sorted(mods, key=lambda m: (getattr(m, "ORDER", 50), m.__name__))


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (all discovered sub-commands)."""
    parser = argparse.ArgumentParser(
        prog="fastpriv",
        description="Audit anonymized releases against adversaries with background knowledge, "
                    "and produce releases that are safe against them.")
    parser.add_argument("--version", action="version", version=f"fastpriv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _command_modules():
        mod.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fastpriv`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileExistsError, FileNotFoundError) as exc:
        print(f"fastpriv {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
