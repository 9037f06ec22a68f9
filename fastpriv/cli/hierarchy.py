"""``fastpriv hierarchy``: build a generalization hierarchy from a few parameters.

Three builders, ARX's (see :meth:`fastpriv.Hierarchy.intervals`,
:meth:`~fastpriv.Hierarchy.ordering` and :meth:`~fastpriv.Hierarchy.masking`), over the
distinct non-null values of one column of ``DATA``. The hierarchy is written in ARX's ``;``
layout, so ``fastpriv anonymize --hierarchies DIR`` (a folder of ``<column>.csv`` files)
reads it back.

Numbers are exact end to end: the column's values reach the builder as its Arrow values
(int64 and uint64 extremes, decimals), and ``--widths``, ``--bounds``, ``--anchor``,
``--below`` and ``--above`` are read as the decimals written (``0.1`` is one tenth,
``1700000000000000001`` keeps its last digit), never through a float.
"""

from __future__ import annotations

import argparse
from decimal import Decimal, InvalidOperation
from typing import Any

ORDER = 45

BUILDERS = ("intervals", "ordering", "masking")


def _numbers(text: str) -> list[Any]:
    """Parse ``5,10,20,*``: exact numbers (ints when integral, else Decimal), a trailing ``*``."""
    out: list[Any] = []
    parts = [p.strip() for p in text.split(",")]
    for i, p in enumerate(parts):
        if p == "*" and i == len(parts) - 1 and i > 0:
            out.append("*")
            continue
        try:
            x = Decimal(p)
        except InvalidOperation:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated numbers (e.g. 5,10,20,*), got {p!r}") from None
        if not x.is_finite():
            raise argparse.ArgumentTypeError(f"expected finite numbers, got {p!r}")
        out.append(int(x) if x == x.to_integral_value() else x)
    return out


def _sizes(text: str) -> list[int]:
    """Parse ``2,4``: group sizes per level, each an integer >= 1."""
    out = []
    for p in (p.strip() for p in text.split(",")):
        if not p.isdigit() or int(p) < 1:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated group sizes >= 1 (e.g. 2,4), got {p!r}")
        out.append(int(p))
    return out


def _number(text: str) -> int | Decimal:
    """Parse one finite number (ints when integral)."""
    vals = _numbers(text)
    if len(vals) != 1 or vals[0] == "*":
        raise argparse.ArgumentTypeError(f"expected one number, got {text!r}")
    return vals[0]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``hierarchy`` sub-command and its builders."""
    from ._common import add_command, add_encoding_argument

    p = add_command(
        sub, "hierarchy", help="build a generalization hierarchy (intervals, ordering, "
                               "masking) for a column",
        description="Build a generalization hierarchy over the distinct values of one "
                    "column, with ARX's builders: intervals (numeric ranges from widths or "
                    "cut points, with bottom/top coding), ordering (values in an order, "
                    "grouped in blocks per level) or masking (characters replaced by '*' "
                    "one by one, e.g. zip codes). Written in ARX's ';' layout: put the files "
                    "in a folder as <column>.csv and pass it to fastpriv anonymize "
                    "--hierarchies. Exit status 2 on bad input.",
        example=["fastpriv hierarchy masking adult --column native_country -o country.csv "
                 "--overwrite",
                 "fastpriv hierarchy intervals adult --column age --widths 5,10,20,* "
                 "-o age.csv --overwrite",
                 "fastpriv hierarchy ordering adult --column education_num --groups 2,4 "
                 "-o education_num.csv --overwrite"])
    builders = p.add_subparsers(dest="builder", metavar="BUILDER", required=True)

    def common(b: argparse.ArgumentParser) -> None:
        b.add_argument("data", metavar="DATA",
                       help="Parquet/CSV file or directory, '-' for standard input, or adult")
        b.add_argument("--column", required=True, metavar="COL",
                       help="the column whose distinct values the hierarchy covers")
        b.add_argument("-o", "--output", required=True, metavar="OUT.csv",
                       help="hierarchy file to write (ARX's ';' layout)")
        b.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
        add_encoding_argument(b)
        b.set_defaults(func=run)

    b = builders.add_parser(
        "intervals", help="numeric ranges [lo, hi), coarser per level",
        description="Ranges [lo, hi) per level: from nested widths (--widths 5,10,20,*) or "
                    "from cut points (--bounds 0,18,65,120) merged --groups per level; "
                    "--below/--above code values outside as '<x' / '>=x'.")
    common(b)
    b.add_argument("--widths", type=_numbers, metavar="W1,W2,...",
                   help="nested interval widths, each a multiple of the one before; a "
                        "trailing * adds the suppressed level (e.g. 5,10,20,*)")
    b.add_argument("--bounds", type=_numbers, metavar="B0,B1,...",
                   help="increasing cut points instead of --widths (e.g. 0,18,65,120)")
    b.add_argument("--groups", type=_sizes, metavar="N1,N2,...",
                   help="with --bounds: ranges merged per coarser level (e.g. 2,2)")
    b.add_argument("--anchor", type=_number, default=0,
                   help="with --widths: where intervals start (default 0)")
    b.add_argument("--below", type=_number, metavar="X",
                   help="bottom coding: values < X become '<X'")
    b.add_argument("--above", type=_number, metavar="X",
                   help="top coding: values >= X become '>=X'")

    b = builders.add_parser(
        "ordering", help="ordered values grouped in blocks per level",
        description="Values in an order (default sorted) grouped in blocks of --groups "
                    "sizes per level ({a, b}, then {a, b, c, d}, …), then '*'.")
    common(b)
    b.add_argument("--groups", type=_sizes, required=True, metavar="N1,N2,...",
                   help="block size per level (e.g. 2,4)")
    b.add_argument("--order", nargs="+", metavar="VALUE",
                   help="every value, in the order to group them (default: sorted)")
    b.add_argument("--labels", choices=("set", "bounds"), default="set",
                   help="group labels: set '{a, b}' (default) or bounds '[a, b]'")

    b = builders.add_parser(
        "masking", help="mask characters one by one (zip codes, ids)",
        description="Level i replaces i characters by the mask character, from the right "
                    "(default) or the left; the last level masks every character.")
    common(b)
    b.add_argument("--direction", choices=("right", "left"), default="right",
                   help="end masking starts from (default right: 47677 -> 4767*)")
    b.add_argument("--pad", metavar="CHAR",
                   help="pad shorter values to the longest with CHAR first")
    b.add_argument("--align", choices=("left", "right"),
                   help="with --pad: keep values left (pad right) or right (default: pad on "
                        "the side masked first)")
    b.add_argument("--mask", default="*", metavar="CHAR",
                   help="masking character (default *)")


def column_values(data: Any, column: str) -> Any:
    """Return the non-null values of ``column`` of ``data`` (a table or a path), in Arrow.

    The builders take the Arrow column itself, so its values keep their exact type.
    """
    from .._arrow import as_table
    from .._validation import check_columns

    table = as_table(data, param="DATA", roles={"--column": [column]})
    check_columns([column], table.column_names, "--column")
    return table.column(column).drop_null()


def build(args: argparse.Namespace, values: Any):
    """Build the hierarchy ``args.builder`` describes over ``values``."""
    from ..errors import InputError
    from ..hierarchies import Hierarchy

    name = args.column
    if args.builder == "intervals":
        if (args.widths is None) == (args.bounds is None):
            raise InputError("intervals: pass one of --widths and --bounds")
        if args.groups is not None and args.bounds is None:
            raise InputError("--groups: only with --bounds (with --widths each width is a "
                             "level)")
        if args.bounds is not None and "*" in args.bounds:
            raise InputError("--bounds: expected numbers only (the '*' level is added)")
        return Hierarchy.intervals(values, args.widths, name=name, anchor=args.anchor,
                                   bounds=args.bounds, groups=args.groups, below=args.below,
                                   above=args.above)
    if args.builder == "ordering":
        return Hierarchy.ordering(values, name=name, groups=args.groups, order=args.order,
                                  labels=args.labels)
    return Hierarchy.masking(values, name=name, direction=args.direction, pad=args.pad,
                             mask=args.mask, align=args.align)


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv hierarchy BUILDER``."""
    from .._io import check_outputs
    from ..errors import InputError
    from ._common import data_of

    check_outputs([args.output], overwrite=args.overwrite, inputs=[args.data])
    values = column_values(data_of(args),
                           args.column)
    if not len(values):
        raise InputError(f"--column {args.column!r} has no non-null values")
    h = build(args, values)
    path = h.to_csv(args.output, overwrite=args.overwrite)
    print(f"{args.builder} hierarchy of {args.column!r}: {len(h.values)} values, "
          f"{h.height} levels -> {path}")
    return 0
