"""The ``fastpriv`` command.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``; modules are discovered, so adding a command never touches this
file. Command modules import only ``argparse`` at module level and import NumPy, Arrow and
the kernels inside their run function, so ``fastpriv --help`` stays fast.

Exit statuses: 0 every check holds, 1 one fails, 2 bad input (including a flag argparse
refuses), 3 internal error, 130 interrupted, and 141 (128 + SIGPIPE, what a Unix tool
killed by SIGPIPE reports) when standard output was closed before the command finished and
its verdict was 0 — ``fastpriv audit … | head`` ends quietly, without a traceback, like
``cat`` or ``yes``. A closed standard output never costs a file: the command runs on (its
output goes to the null device, :class:`~fastpriv.cli._common.PipeSafe`), every file it
writes is committed, and standard error says in one line what was not delivered and which
files were written (:func:`_undelivered`).

A flag a command does not know is reported with that command's usage and the nearest valid
flag ("did you mean --min-size?"); flags are never abbreviated (a prefix could name another
flag once one is added). ``fastpriv --help`` ends with examples read from the commands' own
``--help`` (:data:`HELP_EXAMPLES`).

Text output goes through :class:`~fastpriv.cli._common.TerminalSafe` (control characters
in names and values shown escaped); with ``--json -`` the JSON goes to standard output and
the text to standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

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


#: Commands whose first ``--help`` example ``fastpriv --help`` ends with, in this order.
HELP_EXAMPLES = ("demo", "audit", "report", "anonymize")


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors name the nearest valid flag or choice.

    Sub-command parsers are made by ``add_subparsers`` with the parent's class, so every
    command and builder parser is one of these. :func:`_parse` gives each the command line
    (``_argv``); an error then ends with "did you mean --min-size?" for every flag of the
    line the parser does not know that is close to one it does, or for an invalid choice
    close to a valid one.
    """

    _argv: Sequence[str] = ()
    _top = False        # True for ``fastpriv`` itself (its flags are hinted, not its commands')

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviations: a prefix that names one flag today names another once a flag is
        # added (--min-k, renamed --min-size, became --min-k-map), silently
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Report ``message`` with a hint (see the class) and exit with status 2.

        A bad value of a known flag (``argument --max-risk: expected …``, an invalid
        choice) is one line on stderr, as every other bad input; an unknown flag or a
        missing argument also prints the command's usage.
        """
        hint = _did_you_mean(self, message)
        text = f"{message}; {hint}" if hint else message
        if _BAD_VALUE.match(message):
            self.exit(2, f"{self.prog}: error: {text}\n")
        super().error(text)


#: argparse's message for a bad value of a known flag (a type or choice error).
_BAD_VALUE = re.compile(r"^argument [^:]+: (expected |invalid )")


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                None)


_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _unknown_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """Return the flags of ``argv`` that ``parser`` does not accept.

    Values attached to a short flag (``-oFILE``) or a long one (``--json=OUT``), negative
    numbers and anything after ``--`` are accepted; abbreviations only where the parser
    allows them (fastpriv's do not).
    """
    known = _option_strings(parser)
    out = []
    for token in argv:
        if token == "--":
            break
        flag = token.split("=", 1)[0]
        if not flag.startswith("-") or flag == "-" or _NUMBER.match(flag):
            continue
        if flag.startswith("--"):
            ok = any(k == flag or (parser.allow_abbrev and k.startswith(flag)) for k in known)
        else:
            ok = flag[:2] in known          # -o FILE, -oFILE
        if not ok and flag not in out:
            out.append(flag)
    return out


def _did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """Return "did you mean …?" naming the nearest valid flag(s) or choice ("" if none is near)."""
    import difflib

    if "did you mean" in message or "maybe you meant" in message:   # argparse's own hint
        return ""
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        valid = [c.strip().strip("'\"") for c in choice.group(2).split(",")]
        near = difflib.get_close_matches(choice.group(1), valid, n=1)
        return f"did you mean {near[0]}?" if near else ""
    if _subparsers(parser) is not None and not getattr(parser, "_top", False):
        return ""       # a command with builders: the builder's parser reports its flags
    options = [o for o in _option_strings(parser) if o.startswith("--")] or \
        _option_strings(parser)
    unknown = [(flag, difflib.get_close_matches(flag, options, n=1))
               for flag in _unknown_flags(parser, parser._argv)]
    if message.startswith("unrecognized arguments"):     # argparse names them already
        pairs = [(flag, near[0]) for flag, near in unknown if near]
        if len(pairs) == 1:
            return f"did you mean {pairs[0][1]}?"
        return "did you mean " + ", ".join(f"{n} (for {f})" for f, n in pairs) + "?" \
            if pairs else ""
    # another error came first: the unknown flags would have been refused next
    return "also unrecognized: " + ", ".join(
        f"{flag} (did you mean {near[0]}?)" if near else flag
        for flag, near in unknown) if unknown else ""


def _epilog(sub: argparse._SubParsersAction) -> str:
    """``fastpriv --help``'s end: the first example of each of :data:`HELP_EXAMPLES`.

    The examples are read from the commands' own ``--help`` (:func:`._common.examples_of`):
    written once, where each command is declared.
    """
    from ._common import examples_of

    lines = [f"  {examples_of(sub.choices[name])[0]}" for name in HELP_EXAMPLES]
    return "\n".join(["examples (each runs as written on the bundled UCI Adult data):", *lines,
                      "every command's --help ends with its own: fastpriv COMMAND --help"])


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser (all discovered sub-commands)."""
    parser = _Parser(
        prog="fastpriv",
        description="Audit anonymized releases against adversaries with background knowledge,"
                    "\nand produce releases that are safe against them.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser._top = True
    parser.add_argument("--version", action="version", version=f"fastpriv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _command_modules():
        mod.register(sub)
    parser.epilog = _epilog(sub)
    return parser


def _selected(parser: argparse.ArgumentParser,
              args: argparse.Namespace) -> argparse.ArgumentParser:
    """Return the innermost parser ``args`` went through (a command's, or a builder's)."""
    while (action := _subparsers(parser)) is not None:
        name = getattr(args, action.dest, None) if action.dest != argparse.SUPPRESS else None
        if name not in action.choices:
            break
        parser = action.choices[name]
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with unknown flags reported by the command they follow.

    argparse reports an unrecognized argument with the top-level usage; here the innermost
    command's parser reports it, with its own usage and the nearest valid flag ("did you
    mean --min-size?"), exit status 2.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    stack = [parser]
    while stack:                                   # every parser of the tree sees the line
        p = stack.pop()
        p._argv = argv
        if (action := _subparsers(p)) is not None:
            stack.extend(action.choices.values())
    args, extras = parser.parse_known_args(argv)
    if extras:
        _selected(parser, args).error(f"unrecognized arguments: {' '.join(extras)}")
    args.argv = argv                               # which flags were written out
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (``argv``: the words after ``fastpriv``; default ``sys.argv``).

    Returns the exit status.
    """
    parser = build_parser()
    args = _parse(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from ._common import PipeSafe, TerminalSafe, escape, forget_buffered

    forget_buffered()
    real_stdout = sys.stdout
    machine = PipeSafe(real_stdout)
    args.stdout = machine                     # machine output (--json -, -o -): as is
    to_stdout = "-" not in (getattr(args, "json", None), getattr(args, "output", None))
    text = TerminalSafe(real_stdout if to_stdout else sys.stderr)
    sys.stdout = text
    try:
        from .._io import output_set

        _note_inputs(args)
        with _warnings_on_one_line(args.command), output_set() as outputs:
            status = int(args.func(args) or 0)   # every file it writes: one unit
        text.flush()                          # a closed pipe shows here, if not before
        machine.flush()
        return _undelivered(args.command, status, summary_lost=text.lost and to_stdout,
                            json_lost=machine.lost, written=outputs.committed)
    except BrokenPipeError:
        machine.to_devnull()
        return EXIT_BROKEN_PIPE
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


def _undelivered(command: str, status: int, *, summary_lost: bool, json_lost: bool,
                 written: list[str]) -> int:
    """Return the exit status of a command whose standard output may have been closed.

    Nothing lost: ``status``. Otherwise the command's own verdict when it is not 0, else
    :data:`EXIT_BROKEN_PIPE`; one line on standard error says what was not delivered and
    which files were written — when the JSON was lost (``--json -``), or when files were
    written (the summary alone lost, with nothing written, ends quietly, as Unix tools do).
    """
    if not (summary_lost or json_lost):
        return status
    if json_lost or written:
        from ._common import escape

        what = ("the JSON (--json -) was not delivered" if json_lost
                else "the summary was not shown")
        files = ("; written: " + ", ".join(escape(p) for p in written) if written
                 else "; no file was written")
        with contextlib.suppress(OSError, ValueError):
            print(f"fastpriv {command}: standard output was closed: {what}{files}",
                  file=sys.stderr)
    return status or EXIT_BROKEN_PIPE


@contextlib.contextmanager
def _warnings_on_one_line(command: str) -> Iterator[None]:
    """Show a :class:`fastpriv._io.JournalWarning` as one line ``fastpriv CMD: warning: …``."""
    import warnings

    from .._io import JournalWarning
    from ._common import escape

    plain = warnings.formatwarning

    def one_line(message: Any, category: type, filename: str, lineno: int,
                 line: str | None = None) -> str:
        if issubclass(category, JournalWarning):
            return f"fastpriv {command}: warning: {escape(message)}\n"
        return plain(message, category, filename, lineno, line)

    warnings.formatwarning = one_line
    try:
        yield
    finally:
        warnings.formatwarning = plain


def console() -> NoReturn:
    """Run the command line of this process and exit with its status (the console script).

    The command has closed and committed everything it writes when :func:`main` returns,
    so what is alive then is frozen out of the exit's garbage collections (0.05 CPU-s):
    the process's end frees it.
    """
    import gc

    status = main()
    gc.freeze()
    sys.exit(status)


#: Options whose value is a path the command writes (every other existing path is an input).
OUTPUT_OPTIONS = frozenset({"output", "json", "html", "auditor_view", "distributions",
                            "tuples", "anatomy_tables", "out", "markdown", "stdout"})


def _note_inputs(args: argparse.Namespace) -> None:
    """Record every existing path among the options as an input no output may replace.

    Data, hierarchy folders, knowledge files, population tables: whatever the command reads,
    compared by real path and inode (:func:`fastpriv._io.note_input`). An option that reads
    standard input (``-``, ``/dev/stdin``) records the file it was redirected from, if any
    (``fastpriv anonymize - … -o data.csv < data.csv``; :func:`fastpriv._io.note_input_stream`).
    """
    from .._io import note_input, note_input_stream
    from ._common import STDIN

    for name, value in vars(args).items():
        if name in OUTPUT_OPTIONS or name in ("func", "argv"):
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(v, str):
                continue
            if v in STDIN:
                note_input_stream(0)
            if v not in ("", "-") and os.path.exists(v):
                note_input(v)


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
