"""The ``fastpriv`` command.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``; modules are discovered, so adding a command never touches this
file. Command modules import only ``argparse`` at module level and import NumPy, Arrow and
the kernels inside their run function, so ``fastpriv --help`` stays fast.

Exit statuses: 0 every check holds, 1 one fails, 2 bad input (including a flag argparse
refuses), 3 internal error, 130 interrupted, and 141 (128 + SIGPIPE, what a Unix tool
killed by SIGPIPE reports) when standard output was closed before the command finished —
``fastpriv audit … | head`` ends quietly, without a traceback, like ``cat`` or ``yes``.

Text output goes through :class:`~fastpriv.cli._common.TerminalSafe` (control characters
in names and values shown escaped); with ``--json -`` the JSON goes to standard output and
the text to standard error.
"""

from __future__ import annotations

import argparse
import importlib
import os
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
#: Standard output was closed early (a pipe into ``head``): 128 + SIGPIPE, as Unix tools.
EXIT_BROKEN_PIPE = 141


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
    from ._common import TerminalSafe, escape, forget_buffered

    forget_buffered()
    real_stdout = sys.stdout
    args.stdout = real_stdout                 # machine output (--json -) goes here, as is
    text_to = sys.stderr if getattr(args, "json", None) == "-" else real_stdout
    sys.stdout = TerminalSafe(text_to)
    try:
        from .._io import output_set

        _note_inputs(args)
        with output_set():                    # every file the command writes: one unit
            status = int(args.func(args) or 0)
        sys.stdout.flush()                    # a closed pipe shows here, not at exit
        real_stdout.flush()
        return status
    except BrokenPipeError:
        return _stdout_closed(real_stdout)
    except (InputError, FileExistsError, FileNotFoundError, IsADirectoryError,
            NotADirectoryError, PermissionError) as exc:
        print(f"fastpriv {args.command}: error: {escape(exc)}", file=sys.stderr)
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
    finally:
        sys.stdout = real_stdout


#: Options whose value is a path the command writes (every other existing path is an input).
OUTPUT_OPTIONS = frozenset({"output", "json", "html", "auditor_view", "distributions",
                            "tuples", "anatomy_tables", "out", "markdown", "stdout"})


def _note_inputs(args: argparse.Namespace) -> None:
    """Record every existing path among the options as an input no output may replace.

    Data, hierarchy folders, knowledge files, population tables: whatever the command reads,
    compared by real path and inode (:func:`fastpriv._io.note_input`).
    """
    import os

    from .._io import note_input

    for name, value in vars(args).items():
        if name in OUTPUT_OPTIONS or name == "func":
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str) and v not in ("", "-") and os.path.exists(v):
                note_input(v)


def _stdout_closed(stream: object) -> int:
    """Point standard output at the null device and return :data:`EXIT_BROKEN_PIPE`.

    Python flushes standard output again at exit: that flush then goes nowhere instead of
    failing. A reader that went away is not an error.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())  # type: ignore[attr-defined]
        finally:
            os.close(devnull)
    except (AttributeError, OSError, ValueError):  # not a file (tests capture it)
        pass
    return EXIT_BROKEN_PIPE


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
