"""Shared pieces of the sub-commands: data arguments, release loading, output."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .._timing import Timer

__all__ = ["Timer", "add_bucketize_argument", "add_command", "add_data_arguments",
           "add_encoding_argument", "add_knowledge_arguments", "add_nulls_argument",
           "add_output_arguments", "add_risk_arguments", "bucketize", "confidence",
           "emit_json", "epilog", "format_table", "load_data", "load_release", "print_remedy",
           "real_gt1"]


def add_data_arguments(p: argparse.ArgumentParser, *, require_grouping: bool = True) -> None:
    """Add ``DATA --sensitive COL (--group COL | --qi COL ...) [--nulls ...]`` to ``p``."""
    p.add_argument("data", help="Parquet/CSV file or Parquet directory, or 'adult' for the "
                                "bundled UCI Adult table")
    p.add_argument("--sensitive", required=True, help="sensitive column")
    g = p.add_mutually_exclusive_group(required=require_grouping)
    g.add_argument("--group", help="group-id column of a bucketized release")
    g.add_argument("--qi", nargs="+", metavar="COL",
                   help="generalized quasi-identifier columns (groups = distinct tuples)")
    add_nulls_argument(p)
    add_encoding_argument(p)
    p.add_argument("--weight", metavar="COL",
                   help="multiplicity column: each row stands for that many individuals, "
                        "e.g. the count of (group, value, count) triples exported by a SQL "
                        "GROUP BY or Spark")
    p.add_argument("--stream", choices=("auto", "yes", "no"), default="auto",
                   help="read the input in record batches with memory bounded by the number "
                        "of (group, value) pairs (auto: for Parquet directories and files "
                        "of 64 MiB or more; witnesses then name groups, not rows)")
    p.add_argument("--progress", action="store_true",
                   help="progress bar on stderr while streaming (rows, bytes, rows/s; "
                        "default: when stderr is a terminal)")
    p.add_argument("--n-jobs", type=int, default=None, metavar="N",
                   help="threads for the parallel kernels (default: all cores; 1: one "
                        "thread; -1: all, -2: all but one)")


def add_nulls_argument(p: Any) -> None:
    """``--nulls {error,drop,value}``: what to do with nulls in the used columns."""
    p.add_argument("--nulls", choices=("error", "drop", "value"), default="error",
                   help="nulls in the used columns (empty CSV fields are nulls): raise "
                        "(default), drop rows, or keep as a value")


def epilog(*examples: str) -> str:
    """Return the end of a command's ``--help``: examples that run on the bundled data."""
    return "example (runs as written on the bundled UCI Adult data):\n" + "\n".join(
        f"  {e}" for e in examples)


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
    p.add_argument("--fallback", type=float, metavar="P",
                   help="with --knowledge: probability for signatures/pairs the file does not "
                        "list")


def real_gt1(text: str) -> float:
    """Parse ``--r``, a number > 1 (argparse ``type=``)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--r expects a number > 1, got {text!r}") from None
    if not v > 1:
        raise argparse.ArgumentTypeError(f"--r must be > 1, got {text!r}")
    return v


def confidence(text: str) -> float:
    """Parse a confidence threshold in (0, 1] (argparse ``type=``)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return v


def add_risk_arguments(p: Any) -> None:
    """``--max-risk`` and ``--population`` of the re-identification risk measures."""
    p.add_argument("--max-risk", type=float, default=0.2, metavar="R",
                   help="highest acceptable prosecutor risk, 1/(smallest class) (default 0.2)")
    p.add_argument("--population", type=int, metavar="N",
                   help="population size for journalist risk and population uniques")


def print_remedy(args: argparse.Namespace, method: str, criteria: list[str]) -> None:
    """Print the ``fastpriv anonymize`` command that fixes the audited data."""
    from ..report.verdict import anonymize_command

    print("  To fix: " + anonymize_command(args.data, method=method, qi=args.qi,
                                          sensitive=args.sensitive, criteria=criteria))


def add_bucketize_argument(p: argparse.ArgumentParser) -> None:
    """``--bucketize anatomy:L`` and ``--bucketize-seed`` for the row-level audits."""
    p.add_argument("--bucketize", metavar="anatomy:L",
                   help="bucketize DATA first with Anatomy at ℓ = L (seeded by "
                        "--bucketize-seed) and audit that release; use it for an original "
                        "table such as the bundled 'adult' (instead of --group)")
    p.add_argument("--bucketize-seed", type=int, default=0, metavar="SEED",
                   help="seed of --bucketize (default 0)")


def bucketize(args: argparse.Namespace, data: Any) -> tuple[Any, Any]:
    """Apply ``--bucketize``: return the auditor's view and its group column (or the input)."""
    from ..errors import InputError

    spec = getattr(args, "bucketize", None)
    if spec is None:
        if not args.group:
            raise InputError("give --group (the release's group-id column) or --bucketize "
                             "anatomy:L to bucketize an original table first")
        return data, args.group
    method, _, level = spec.partition(":")
    if method != "anatomy" or not level.isdigit() or int(level) < 2:
        raise InputError(f"--bucketize expects anatomy:L with an integer L >= 2, got {spec!r}")
    if args.group:
        raise InputError("--bucketize builds the groups itself: drop --group")
    from ..anonymize import anatomy

    res = anatomy(data, sensitive=args.sensitive, l=int(level), seed=args.bucketize_seed,
                  qi=args.qi,
                  nulls="drop" if getattr(args, "nulls", "error") == "drop" else "error")
    print(f"bucketized {args.data} with Anatomy at ℓ = {level} (seed {args.bucketize_seed}): "
          f"{res.release.n_groups:,} groups of {int(res.release.sizes.min())}–"
          f"{int(res.release.sizes.max())} people", file=sys.stderr)
    return res.auditor_view(data), "group_id"


def add_encoding_argument(p: argparse.ArgumentParser) -> None:
    """Add ``--encoding`` (text encoding of CSV input) to ``p``."""
    p.add_argument("--encoding", metavar="NAME",
                   help="text encoding of a CSV input (default utf-8; e.g. latin-1)")


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--json OUT`` and ``--overwrite``."""
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def load_data(spec: str, encoding: str | None = None) -> Any:
    """Return the bundled Adult table for ``"adult"``, else the path itself (read lazily).

    With ``encoding`` (``--encoding``), a CSV file is read in that text encoding.
    """
    if spec == "adult":
        from ..datasets import load_adult

        return load_adult()
    if encoding:
        from .._arrow import is_csv, read_csv

        if is_csv(spec):
            return read_csv(spec, encoding=encoding, param="DATA")
    return spec


def load_release(args: argparse.Namespace):
    """Build the :class:`~fastpriv.Release` described by the data arguments.

    Parquet directories and large files are streamed (``--stream auto``): only the group
    and sensitive columns are read, batch by batch, with memory bounded by the number of
    (group, value) pairs, and a progress bar goes to stderr (``--progress``, or when stderr
    is a terminal). MVPI tables (``--individual``) are read whole.
    """
    from .._arrow import count_rows, is_large_source
    from ..release import Release

    n_jobs = getattr(args, "n_jobs", None)
    if n_jobs is not None:
        import numba

        from .._threads import resolve_n_jobs

        numba.set_num_threads(resolve_n_jobs(n_jobs, name="--n-jobs"))
    data = load_data(args.data, getattr(args, "encoding", None))
    individual = getattr(args, "individual", None)
    mode = getattr(args, "stream", "auto") or "auto"
    stream = individual is None and (mode == "yes" or (mode == "auto" and is_large_source(data)))
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
    """Format a plain-text table with aligned columns (no terminal library needed)."""
    cells = [[_fmt(c) for c in r] for r in rows]
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
    """Write ``payload`` to ``--json`` atomically (never over an input)."""
    if getattr(args, "json", None):
        from .._io import write_json

        dest = write_json(args.json, payload, overwrite=args.overwrite,
                          inputs=[getattr(args, "data", None), *inputs])
        print(f"wrote {dest}", file=sys.stderr)
