"""Shared pieces of the sub-commands: data arguments, release loading, output."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def add_data_arguments(p: argparse.ArgumentParser, *, require_grouping: bool = True) -> None:
    """``DATA --sensitive COL (--group COL | --qi COL ...) [--nulls ...]``."""
    p.add_argument("data", help="Parquet/CSV file or Parquet directory, or 'adult' for the "
                                "bundled UCI Adult table")
    p.add_argument("--sensitive", required=True, help="sensitive column")
    g = p.add_mutually_exclusive_group(required=require_grouping)
    g.add_argument("--group", help="group-id column of a bucketized release")
    g.add_argument("--qi", nargs="+", metavar="COL",
                   help="generalized quasi-identifier columns (groups = distinct tuples)")
    p.add_argument("--nulls", choices=("error", "drop", "value"), default="error",
                   help="nulls in the used columns: raise (default), drop rows, or keep as a "
                        "value")


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--json OUT`` and ``--overwrite``."""
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def load_data(spec: str) -> Any:
    """The bundled Adult table for ``"adult"``, else the path itself (read lazily)."""
    if spec == "adult":
        from ..datasets import load_adult

        return load_adult()
    return spec


def load_release(args: argparse.Namespace):
    """Build the :class:`~fastpriv.Release` described by the data arguments."""
    from ..release import Release

    data = load_data(args.data)
    return Release.from_table(data, sensitive=args.sensitive, group=args.group, qi=args.qi,
                              nulls=args.nulls)


def format_table(headers: list[str], rows: list[list[Any]], *, title: str | None = None) -> str:
    """A plain-text table with aligned columns (no dependency on a terminal library)."""
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join("-" * w for w in widths)
    out = []
    if title:
        out.append(title)
    out.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    out.append(line)
    for r in cells:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
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
                          inputs=[args.data, *inputs])
        print(f"wrote {dest}", file=sys.stderr)


class Timer:
    """Context manager measuring wall time in seconds (``.seconds``)."""

    def __enter__(self) -> "Timer":
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self._t
