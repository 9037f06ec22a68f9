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
import traceback
from collections.abc import Sequence

from .._version import __version__
from ..errors import InputError

#: Exit statuses of every command: the verdict, then why there is none.
EXIT_HOLDS = 0
EXIT_FAILS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def _command_modules() -> list:
    mods = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mods.append(importlib.import_module(f"{__name__}.{info.name}"))
    return sorted(mods, key=lambda m: (getattr(m, "ORDER", 50), m.__name__))


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser (all discovered sub-commands)."""
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
    except (InputError, FileExistsError, FileNotFoundError, IsADirectoryError,
            NotADirectoryError, PermissionError) as exc:
        print(f"fastpriv {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"fastpriv {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemError as exc:
        # Ctrl-C inside a compiled kernel surfaces as "returned a result with an exception
        # set", the KeyboardInterrupt as its cause: still an interruption, not a bug
        if _interrupted(exc):
            print(f"fastpriv {args.command}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        return _internal_error(args.command)
    except Exception:  # anything else is a bug in fastpriv, not bad input
        return _internal_error(args.command)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was caused, directly or through its chain, by a KeyboardInterrupt."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _internal_error(command: str) -> int:
    traceback.print_exc()
    print(f"fastpriv {command}: internal error (a bug in fastpriv, not in your input); "
          "please report it with the traceback above", file=sys.stderr)
    return EXIT_INTERNAL

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
