"""Shared pieces of the sub-commands: data arguments, release loading, output.

* Numeric flags are parsed by the argparse ``type=`` validators below (:func:`bounded` and
  its instances), so a NaN, an infinity or an out-of-range value fails at parse time with
  exit status 2 and a message naming the flag, before any data is read.
* ``DATA`` may be ``-`` (or ``/dev/stdin``, or another pipe such as ``<(cmd)``): the bytes
  are read whole, recognised as Parquet by the ``PAR1`` magic, as an Arrow IPC file by
  ``ARROW1``, else read as CSV (gzip-compressed input is decompressed first), and handed on
  as a ``pyarrow.Table`` (:func:`load_data`).
* ``--json -`` writes the JSON to standard output (:func:`emit_json`); the text report then
  goes to standard error, so ``fastpriv audit … --json - | jq`` reads clean JSON.
* Text output shows terminal control characters in column names and values escaped
  (:class:`TerminalSafe`, :func:`fastpriv.report.text.escape_control`).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._flags import (  # noqa: F401 - the commands' numeric flag types, re-exported here
    at_least_1,
    bounded,
    confidence,
    count,
    ell,
    hoeffding_confidence,
    nonnegative,
    positive,
    probability,
    real_gt1,
    risk_bound,
    seed,
    size,
)
from .._timing import Timer

__all__ = ["STDIN", "PipeSafe", "TerminalSafe", "Timer", "add_bucketize_argument",
           "add_command", "add_data_arguments", "add_encoding_argument", "add_knowledge_arguments",
           "add_nulls_argument", "add_output_arguments", "add_risk_arguments", "bounded",
           "bucketize", "bucketize_spec", "check_grouping", "confidence", "count",
           "emit_json", "epilog", "escape", "examples_of", "file_output", "forget_buffered",
           "format_table",
           "hoeffding_confidence", "load_data", "load_release", "n_jobs", "nonnegative",
           "positive", "print_remedy", "probability", "read_stream", "real_gt1",
           "remedy_options", "seed",
           "size", "write_stdout"]

#: ``DATA`` names that mean standard input.
STDIN = ("-", "/dev/stdin")


# ============================================================================ flag types
def n_jobs(text: str) -> int:
    """Parse ``--n-jobs``: a nonzero integer (``-1`` all threads, ``-2`` all but one, ...)."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v == 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, -1 (all threads), -2 "
                                         f"(all but one), ...; got {text!r}")
    return v


def bucketize_spec(text: str) -> str:
    """Parse ``--bucketize``: ``anatomy:L`` with an integer ``L >= 2`` (returned as given)."""
    method, _, level = text.partition(":")
    if method != "anatomy" or not level.isdigit() or int(level) < 2:
        raise argparse.ArgumentTypeError(f"expected anatomy:L with an integer L >= 2, got "
                                         f"{text!r}")
    return text


#: Help of an optional ``--sensitive`` (commands that also audit the QI classes alone).
OPTIONAL_SENSITIVE_HELP = ("sensitive column (optional: without it every column of --qi is a "
                           "quasi-identifier and only k-anonymity and re-identification "
                           "risk of their classes are measured, as in ARX)")


def add_data_arguments(p: argparse.ArgumentParser, *, require_grouping: bool = True,
                       require_sensitive: bool = True) -> None:
    """Add ``DATA --sensitive COL (--group COL | --qi COL ...) [--nulls ...]`` to ``p``."""
    p.add_argument("data", help="Parquet/CSV file or Parquet directory, '-' for standard "
                                "input (Parquet or CSV), or 'adult' for the bundled UCI Adult "
                                "table")
    p.add_argument("--sensitive", required=require_sensitive,
                   help="sensitive column" if require_sensitive else OPTIONAL_SENSITIVE_HELP)
    g = p.add_mutually_exclusive_group(required=require_grouping)
    g.add_argument("--group", nargs="+", metavar="COL",
                   help="group-id column(s) of a bucketized release")
    g.add_argument("--qi", nargs="+", metavar="COL",
                   help="generalized quasi-identifier columns (groups = distinct tuples)")
    add_nulls_argument(p)
    add_encoding_argument(p)
    add_weight_argument(p)
    add_stream_argument(p, "; witnesses then name groups, not rows")
    p.add_argument("--progress", action="store_true",
                   help="progress bar on stderr while streaming (rows, bytes, rows/s; "
                        "default: when stderr is a terminal)")
    p.add_argument("--n-jobs", type=n_jobs, default=None, metavar="N",
                   help="threads for the parallel kernels (default: all cores; 1: one "
                        "thread; -1: all, -2: all but one)")


def add_stream_argument(p: Any, effect: str = "", default: str = "auto") -> None:
    """``--stream {auto,yes,no}``: read the input in record batches (bounded memory)."""
    p.add_argument("--stream", choices=("auto", "yes", "no"), default=default,
                   help="read the input in record batches with memory bounded by the number "
                        "of (group, value) pairs (auto: for Parquet directories and files "
                        f"of 64 MiB or more{effect}; default {default})")


def streamed(args: argparse.Namespace, data: Any) -> bool:
    """Whether ``--stream`` reads ``data`` in record batches (``auto``: a large source)."""
    from .._arrow import is_large_source

    mode = getattr(args, "stream", "auto") or "auto"
    return mode == "yes" or (mode == "auto" and is_large_source(data))


def add_risk_switch(p: Any) -> None:
    """``--risk`` / ``--no-risk``: measure re-identification risk of the QI classes.

    One meaning in every command: on by default whenever ``--qi`` names the classes.
    """
    p.add_argument("--risk", action=argparse.BooleanOptionalAction, default=None,
                   help="measure re-identification risk from the QI class sizes: prosecutor/"
                        "journalist/marketer, sample and population uniques (default: on "
                        "whenever --qi is given; --no-risk skips it)")


def risk_wanted(args: argparse.Namespace) -> bool:
    """Whether the re-identification risk runs: ``--risk``/``--no-risk``, else with --qi."""
    return bool(args.qi) if args.risk is None else bool(args.risk)


def add_nulls_argument(p: Any) -> None:
    """``--nulls {error,drop,value}``: what to do with nulls in the used columns."""
    p.add_argument("--nulls", choices=("error", "drop", "value"), default="error",
                   help="nulls in the used columns (empty CSV fields are nulls): raise "
                        "(default), drop rows, or keep as a value")


#: First line of every command's epilog (:func:`epilog`); :func:`examples_of` reads after it.
EPILOG_HEADER = "example (runs as written on the bundled UCI Adult data):"


def epilog(*examples: str) -> str:
    """Return the end of a command's ``--help``: examples that run on the bundled data."""
    return EPILOG_HEADER + "\n" + "\n".join(f"  {e}" for e in examples)


def examples_of(parser: argparse.ArgumentParser) -> list[str]:
    """Return the examples a command's :func:`epilog` shows (empty without one).

    The command's ``--help`` is the one place its examples are written; ``fastpriv --help``
    reads them from there.
    """
    lines = (parser.epilog or "").splitlines()
    if not lines or lines[0] != EPILOG_HEADER:
        return []
    return [ln.strip() for ln in lines[1:] if ln.strip()]


def add_command(sub: Any, name: str, *, help: str, description: str,  # noqa: A002
                example: str | Sequence[str] = ()) -> argparse.ArgumentParser:
    """Add sub-command ``name`` with its help, description and runnable examples."""
    examples = [example] if isinstance(example, str) else list(example)
    return sub.add_parser(name, help=help, description=description,
                          epilog=epilog(*examples) if examples else None,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def add_knowledge_arguments(p: Any) -> None:
    """``--knowledge FILE`` and ``--fallback P``: the adversary's distributions from a file."""
    p.add_argument("--knowledge", metavar="FILE",
                   help="adversary's distributions for r-robustness: long table (Parquet/CSV) "
                        "with columns attributes (comma-joined set), the QI columns, value, "
                        "probability (default: derived from DATA, the worst case)")
    p.add_argument("--fallback", type=probability, metavar="P",
                   help="with --knowledge: probability for signatures/pairs the file does not "
                        "list")


def add_risk_arguments(p: Any) -> None:
    """``--max-risk`` and ``--population`` of the re-identification risk measures."""
    p.add_argument("--max-risk", type=risk_bound, default=0.2, metavar="R",
                   help="highest acceptable prosecutor risk, 1/(smallest class), in (0, 1] "
                        "(default 0.2)")
    p.add_argument("--population", type=population_arg, metavar="N|TABLE",
                   help="population size N (journalist risk, population uniques) or a "
                        "population table holding the data (exact journalist risk, k-map, "
                        "δ-presence: --min-k-map, --max-delta)")
    p.add_argument("--sampling-weight", metavar="COL",
                   help="survey weights (sdcMicro's weightVar): the population members each "
                        "record stands for, finite and > 0; a class's sum estimates its "
                        "population size (individual risk, Benedetti-Franconi; journalist "
                        "and marketer risk without --population TABLE)")
    from ..registry import add_threshold_flags

    add_threshold_flags(p, {"size": size, "probability": probability})


def point_lkm(text: str) -> tuple[int, int, int]:
    """Parse a skyline point ``L,K,M`` (integers ≥ 0): ``fastpriv skyline``'s format, no c."""
    parts = text.split(",")
    try:
        point = tuple(int(x) for x in parts)
    except ValueError:
        point = ()
    if len(point) != 3 or min(point) < 0:
        raise argparse.ArgumentTypeError(f"expected L,K,M: three integers >= 0 separated by "
                                         f"commas (e.g. 1,1,1), got {text!r}")
    return point  # type: ignore[return-value]


def population_arg(text: str) -> int | str:
    """Parse ``--population``: an integer population size, or a population table path."""
    try:
        return size(text)
    except argparse.ArgumentTypeError:
        if os.path.exists(text):
            return text
        raise argparse.ArgumentTypeError(
            f"expected a population size (an integer >= 1) or an existing table file, got "
            f"{text!r}") from None


def population_size(args: argparse.Namespace) -> int | None:
    """Return ``--population`` as a number of people (a table: its number of rows)."""
    pop = getattr(args, "population", None)
    if not isinstance(pop, str):
        return pop
    from .._arrow import count_rows

    n = count_rows(pop)
    return int(n) if n is not None else int(load_population(args).num_rows)


def load_population(args: argparse.Namespace) -> Any:
    """Return the ``--population`` value: a size, a loaded table, or None."""
    pop = getattr(args, "population", None)
    return data_of(args, pop) if isinstance(pop, str) else pop


def remedy_options(args: argparse.Namespace) -> dict[str, Any]:
    """Return how this command read ``DATA``, for the commands it suggests.

    Every suggested command (a remedy, the command that publishes a chosen node) reads the
    data as the command that prints it did: its ``--weight``, ``--nulls``, ``--encoding``
    and ``--delimiter`` (the keywords of :func:`fastpriv.report.verdict.anonymize_command`).
    Options that do not decide which people the data holds are not carried over
    (``--population``: ``fastpriv anonymize`` reads it only with ``--max-uniqueness``;
    ``--stream``, ``--n-jobs``: how, not what, it reads).
    """
    return {"weight": getattr(args, "weight", None),
            "nulls": getattr(args, "nulls", None) or "error",
            "encoding": getattr(args, "encoding", None),
            "delimiter": getattr(args, "delimiter", None)}


def print_remedy(args: argparse.Namespace, method: str, criteria: list[str], *,
                 unreachable: str | None = None) -> None:
    """Print the ``fastpriv anonymize`` command that fixes the audited data.

    The command reads ``DATA`` as this command read it
    (:func:`remedy_options`), so that it runs as printed. With ``unreachable`` (why not
    even one group holding the whole table meets the threshold) that sentence is printed
    instead: a command that cannot succeed is never offered; nor one that would read the
    data otherwise (``--nulls value``: :data:`fastpriv.report.verdict.NULLS_VALUE_REMEDY`).
    """
    from ..report.verdict import NULLS_VALUE_REMEDY, anonymize_command

    if unreachable:
        print(f"  No generalization of these quasi-identifiers can pass: {unreachable}.")
        return
    if remedy_options(args)["nulls"] == "value":
        print("  " + NULLS_VALUE_REMEDY)
        return
    print("  To fix: " + anonymize_command(args.data, method=method, qi=args.qi,
                                          sensitive=args.sensitive, criteria=criteria,
                                          **remedy_options(args)))


def add_bucketize_argument(p: argparse.ArgumentParser) -> None:
    """``--bucketize anatomy:L`` and ``--bucketize-seed`` for the row-level audits."""
    p.add_argument("--bucketize", type=bucketize_spec, metavar="anatomy:L",
                   help="bucketize DATA first with Anatomy at ℓ = L (seeded by "
                        "--bucketize-seed) and audit that release; use it for an original "
                        "table such as the bundled 'adult' (instead of --group)")
    p.add_argument("--bucketize-seed", type=seed, default=0, metavar="SEED",
                   help="seed of --bucketize (default 0)")


def check_grouping(args: argparse.Namespace) -> None:
    """Check that exactly one of ``--group`` and ``--bucketize`` is given (before any work)."""
    from ..errors import InputError

    if getattr(args, "bucketize", None) is None:
        if not args.group:
            raise InputError("give --group (the release's group-id column) or --bucketize "
                             "anatomy:L to bucketize an original table first")
    elif args.group:
        raise InputError("--bucketize builds the groups itself: drop --group")


def bucketize(args: argparse.Namespace, data: Any) -> tuple[Any, Any]:
    """Apply ``--bucketize``: return the auditor's view and its group column (or the input)."""
    check_grouping(args)
    spec = getattr(args, "bucketize", None)
    if spec is None:
        return data, args.group
    check_weight_bucketize(args)
    _, _, level = bucketize_spec(spec).partition(":")
    from ..anonymize import anatomy

    res = anatomy(data, sensitive=args.sensitive, l=int(level), seed=args.bucketize_seed,
                  qi=args.qi,
                  nulls="drop" if getattr(args, "nulls", "error") == "drop" else "error")
    print(f"bucketized {escape(args.data)} with Anatomy at ℓ = {level} "
          f"(seed {args.bucketize_seed}): "
          f"{res.release.n_groups:,} groups of {int(res.release.sizes.min())}–"
          f"{int(res.release.sizes.max())} people", file=sys.stderr)
    return res.auditor_view(data), "group_id"


def add_weight_argument(p: argparse.ArgumentParser, detail: str = "") -> None:
    """Add ``--weight COL``: how many identical people each row stands for.

    ``detail``: what it means for this command, appended to the help.
    """
    p.add_argument("--weight", metavar="COL",
                   help="multiplicity column: each row stands for that many individuals, "
                        "e.g. the count of a SQL or Spark GROUP BY" + detail)


def check_weight_bucketize(args: argparse.Namespace) -> None:
    """Refuse ``--weight`` with ``--bucketize`` (Anatomy buckets rows, not weighted rows)."""
    from ..errors import InputError

    if getattr(args, "weight", None) and getattr(args, "bucketize", None):
        raise InputError("--weight cannot be combined with --bucketize: Anatomy buckets rows, "
                         "not weighted rows; bucketize the table of individual rows, or "
                         "audit a weighted release that has a --group column")


def add_encoding_argument(p: argparse.ArgumentParser) -> None:
    """Add ``--encoding`` and ``--delimiter`` (how CSV input is read) to ``p``."""
    p.add_argument("--encoding", metavar="NAME",
                   help="text encoding of a CSV input (default utf-8; e.g. latin-1)")
    p.add_argument("--delimiter", type=delimiter_arg, metavar="CHAR",
                   help="field delimiter of a CSV input, a file or standard input (default: "
                        "the one of ',', ';', tab and '|' the header line uses; '\\t' for "
                        "tab)")


def delimiter_arg(text: str) -> str:
    """Parse ``--delimiter``: one character (the two characters backslash-t are tab)."""
    sep = "\t" if text in ("\\t", "tab") else text
    if len(sep) != 1 or sep in "\n\r\"":
        raise argparse.ArgumentTypeError(f"expected one character (e.g. ';' or '\\t'), "
                                         f"got {text!r}")
    return sep


#: help of ``--json``
JSON_HELP = ("also write the results as JSON to OUT ('-': to standard output, and the text "
             "report to standard error)")


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--json OUT`` and ``--overwrite``."""
    p.add_argument("--json", metavar="OUT", help=JSON_HELP)
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def file_output(path: str | None) -> str | None:
    """Return ``path`` unless it is ``-`` (standard output): the outputs to check as files."""
    return None if path == "-" else path


#: tables read from standard input or a pipe, by DATA name (read once per command)
_BUFFERED: dict[str, Any] = {}


def forget_buffered() -> None:
    """Drop the tables read from standard input (each command invocation reads its own)."""
    _BUFFERED.clear()


def _is_pipe(spec: str) -> bool:
    """Whether ``spec`` names a FIFO or character device (``<(cmd)``, ``/dev/fd/N``)."""
    try:
        mode = os.stat(spec).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def read_stream(spec: str, encoding: str | None = None, delimiter: str | None = None) -> Any:
    """Read ``DATA`` from standard input (``-``, ``/dev/stdin``) or a pipe, whole.

    The bytes are buffered, then read as Parquet (``PAR1`` magic), an Arrow IPC file
    (``ARROW1``) or CSV (empty fields are nulls, text in ``encoding``, default UTF-8; the
    ``delimiter`` given, else the one the header line uses, as for a file:
    :func:`fastpriv._arrow.delimiter_of_header`); gzip-compressed bytes are decompressed
    first.

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    InputError
        No input, or bytes that are neither Parquet, Arrow nor CSV in ``encoding``.

    """
    import pyarrow as pa

    from ..errors import InputError

    what = "standard input" if spec in STDIN else repr(spec)
    if spec in STDIN:
        if sys.stdin is None:
            raise InputError("DATA: '-' reads standard input, but there is none")
        stream = getattr(sys.stdin, "buffer", sys.stdin)
        raw = stream.read()
        if isinstance(raw, str):
            raw = raw.encode(encoding or "utf-8")
    else:
        with open(spec, "rb") as fh:
            raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        import gzip

        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"DATA: cannot decompress {what} (gzip): {exc}") from None
    if not raw.strip():
        raise InputError(f"DATA: {what} is empty; give a Parquet or CSV table")
    try:
        if raw[:4] == b"PAR1":
            import pyarrow.parquet as pq

            return pq.read_table(pa.BufferReader(raw))
        if raw[:6] == b"ARROW1":
            return pa.ipc.open_file(pa.BufferReader(raw)).read_all()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OSError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"DATA: cannot read {what}: {first}") from None
    import pyarrow.csv as pacsv

    from .._arrow import delimiter_of_header

    enc = encoding or "utf8"
    sep = delimiter or delimiter_of_header(raw[:1 << 20])
    try:
        table = pacsv.read_csv(pa.BufferReader(raw),
                               read_options=pacsv.ReadOptions(encoding=enc),
                               parse_options=pacsv.ParseOptions(delimiter=sep),
                               convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    except (pa.ArrowInvalid, LookupError, UnicodeDecodeError) as exc:
        raise InputError(f"DATA: cannot read {what} as CSV ({enc}): "
                         f"{(str(exc).splitlines() or [''])[0]}") from None
    binary = [f.name for f in table.schema if pa.types.is_binary(f.type)
              or pa.types.is_large_binary(f.type)]
    if binary:
        raise InputError(f"DATA: column {binary[0]!r} of {what} is not valid {enc} text; "
                         "give its encoding with --encoding (e.g. latin-1)")
    return table


def data_of(args: argparse.Namespace, spec: str | None = None) -> Any:
    """Return :func:`load_data` of ``spec`` (default ``DATA``) as the command reads it.

    The command's ``--encoding`` and ``--delimiter`` apply.
    """
    return load_data(args.data if spec is None else spec, getattr(args, "encoding", None),
                     getattr(args, "delimiter", None))


def load_data(spec: str, encoding: str | None = None, delimiter: str | None = None) -> Any:
    """Return what ``DATA`` names: a table to read, or a path that is read lazily.

    ``"adult"`` is the bundled Adult table; ``-`` and ``/dev/stdin`` (and other pipes)
    are read whole by :func:`read_stream` — once per command, later calls get the same
    table; any other path is returned as it is. With ``encoding`` (``--encoding``) or
    ``delimiter`` (``--delimiter``; default: sniffed from the header line, for a path and
    standard input alike), a CSV file is read with them. Pandas stays out of the process
    unless something needs it (:mod:`fastpriv._lazy_pandas`).
    """
    from .._lazy_pandas import defer_pandas

    defer_pandas()
    if spec == "adult":
        from ..datasets import load_adult

        return load_adult()
    if spec in STDIN or _is_pipe(spec):
        if spec not in _BUFFERED:
            _BUFFERED[spec] = read_stream(spec, encoding, delimiter)
        return _BUFFERED[spec]
    if encoding or delimiter:
        from .._arrow import is_csv, read_csv
        from ..errors import InputError

        if is_csv(spec):
            return read_csv(spec, encoding=encoding or "utf8", param="DATA",
                            delimiter=delimiter)
        if delimiter:
            raise InputError(f"--delimiter: {spec!r} is not a CSV file (the delimiter applies "
                             "to CSV input only)")
    return spec


def load_release(args: argparse.Namespace):
    """Build the :class:`~fastpriv.Release` described by the data arguments.

    Parquet directories and large files are streamed (``--stream auto``): only the group
    and sensitive columns are read, batch by batch, with memory bounded by the number of
    (group, value) pairs, and a progress bar goes to stderr (``--progress``, or when stderr
    is a terminal). MVPI tables (``--individual``) are read whole.
    """
    from .._arrow import count_rows
    from ..release import Release

    n_jobs = getattr(args, "n_jobs", None)
    if n_jobs is not None:
        import numba

        from .._threads import resolve_n_jobs

        numba.set_num_threads(resolve_n_jobs(n_jobs, name="--n-jobs"))
    data = data_of(args)
    individual = getattr(args, "individual", None)
    stream = individual is None and streamed(args, data)
    weight = getattr(args, "weight", None)
    if not stream:
        kw = {"individual": individual} if individual is not None else {}
        return Release.from_table(data, sensitive=args.sensitive, group=args.group, qi=args.qi,
                                  nulls=args.nulls, weight=weight, **kw)
    from .._progress import RowsProgress, wanted

    show = wanted(True if getattr(args, "progress", False) else None)
    bar = RowsProgress(total_rows=count_rows(data) if show else None, enabled=show)
    try:
        return Release.from_batches(data, sensitive=args.sensitive, group=args.group,
                                    qi=args.qi, nulls=args.nulls, progress=bar, weight=weight)
    finally:
        bar.close()


def format_table(headers: list[str], rows: list[list[Any]], *, title: str | None = None) -> str:
    """Format a plain-text table with aligned columns (no terminal library needed).

    Control characters in the cells and headers are shown escaped.
    """
    headers = [escape(h) for h in headers]
    cells = [[escape(_fmt(c)) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join("-" * w for w in widths)
    out = []
    if title:
        out.append(title)
    out.append("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)))
    out.append(line)
    for r in cells:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)))
    return "\n".join(out)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        return f"{v:.6g}"
    return str(v)


def emit_json(args: argparse.Namespace, payload: dict, inputs: list[Any] = ()) -> None:
    """Write ``payload`` to ``--json``.

    A path is written atomically (never over an input); ``-`` prints the JSON to the real
    standard output (:func:`write_stdout`).
    """
    dest = getattr(args, "json", None)
    if not dest:
        return
    if dest == "-":
        import json

        from .._io import to_jsonable

        write_stdout(args, json.dumps(to_jsonable(payload), indent=2, allow_nan=False) + "\n")
        return
    from .._io import announce_written, write_json

    dest = write_json(dest, payload, overwrite=args.overwrite,
                      inputs=[getattr(args, "data", None), *inputs])
    announce_written(escape(dest))


def write_stdout(args: argparse.Namespace, text: str) -> None:
    """Write machine-readable ``text`` (JSON) to the real standard output, unescaped.

    :func:`fastpriv.cli.main` keeps it in ``args.stdout`` while ``sys.stdout`` (the text
    report) may point at standard error.
    """
    stream = getattr(args, "stdout", None) or sys.stdout
    stream.write(text)
    stream.flush()


# ============================================================================ terminal safety
def escape(text: Any) -> str:
    """``str(text)`` with terminal control characters escaped (see ``escape_control``)."""
    from ..report.text import escape_control

    return escape_control(str(text))


class PipeSafe:
    """A text stream that outlives its reader (a pipe closed by ``head``).

    A write or flush that finds the pipe closed (``BrokenPipeError``) points the stream's
    file descriptor at the null device (:meth:`to_devnull`) — later writes, and Python's flush
    at exit, go nowhere instead of failing — and sets :attr:`lost`: what the command wrote
    there was not all delivered. The command goes on, so its files are still written;
    :func:`fastpriv.cli.main` then reports the loss. :func:`fastpriv.cli.main` puts the
    machine output (``--json -``) behind one.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        #: whether the reader went away before everything written here was delivered
        self.lost = False

    def _render(self, text: str) -> str:
        return text

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self.stream.write(self._render(text))
            except BrokenPipeError:
                self.to_devnull()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self.to_devnull()

    def to_devnull(self) -> None:
        """Record the stream as lost and point its descriptor at the null device."""
        self.lost = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.stream.fileno())
            finally:
                os.close(devnull)
        except (AttributeError, OSError, ValueError):  # not a file (tests capture it)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class TerminalSafe(PipeSafe):
    r"""A text stream that shows terminal control characters escaped (``\x1b``).

    Newlines and tabs pass through. :func:`fastpriv.cli.main` puts the text output of every
    command behind one, so a column name or value holding an escape sequence cannot drive
    the terminal (recolour, move the cursor, retitle the window, hide text with ``\r``).
    A closed pipe is survived as by :class:`PipeSafe`.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._escape: Callable[..., str] | None = None

    def _render(self, text: str) -> str:
        if self._escape is None:
            from ..report.text import escape_control

            self._escape = escape_control
        return self._escape(text, keep_lines=True)
