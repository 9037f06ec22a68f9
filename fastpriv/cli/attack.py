"""``fastpriv attack``: the foreground-knowledge attack (Wong et al.) as an audit."""

from __future__ import annotations

import argparse
import math

from ..errors import InputError

ORDER = 45


def _unreliable(text: str) -> object:
    if text in ("pooled", "uniform", "global"):
        return text
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 <= v <= 1:                      # also refuses nan
        raise argparse.ArgumentTypeError(
            f"expected pooled, uniform, global or a probability in [0, 1], got {text!r}")
    return v


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``attack`` sub-command."""
    from .._budget import MAX_SECONDS, max_seconds_arg
    from ._common import (
        add_bucketize_argument,
        add_command,
        add_encoding_argument,
        add_nulls_argument,
        add_output_arguments,
        add_weight_argument,
        count,
        hoeffding_confidence,
        positive,
        real_gt1,
        seed,
        size,
    )

    p = add_command(
        sub, "attack", help="foreground-knowledge attack: mine a release's patterns, find breaches",
        description="Mine, from the release itself, the distributions p(signature : x) that "
                    "best explain the published group counts (every attribute subset of the "
                    "QI with reliable signatures, maximum likelihood, all systems solved in "
                    "one batched kernel), then compute every tuple's posterior under them and "
                    "flag tuples with p > 1/r. DATA is either the joined table (QI columns, "
                    "group id, sensitive value per row: only the per-group value counts are "
                    "used) or, with --sensitive-table, Anatomy's QI table. Exit status 1 when "
                    "some tuple is breached (0 none, 2 bad input, 3 internal error).",
        example=("fastpriv attack adult --qi age sex race --sensitive occupation "
                 "--bucketize anatomy:4 --r 2"))
    p.add_argument("data", help="Parquet/CSV file: the joined release, or the QI table")
    p.add_argument("--qi", nargs="+", required=True, metavar="COL",
                   help="quasi-identifier columns (exact values)")
    p.add_argument("--sensitive", required=True, help="sensitive column")
    p.add_argument("--group", nargs="+", metavar="COL",
                   help="group-id column(s) of the release (or --bucketize)")
    add_bucketize_argument(p)
    p.add_argument("--r", type=real_gt1, required=True, help="privacy parameter r > 1")
    p.add_argument("--sensitive-table", metavar="FILE",
                   help="Anatomy's sensitive table (group id, value, count columns)")
    p.add_argument("--count", default="count",
                   help="count column of --sensitive-table (default count)")
    p.add_argument("--sensitive-values", nargs="+", metavar="VALUE",
                   help="attack these values separately (default: every value)")
    p.add_argument("--value-set", action="append", metavar="V1,V2,...",
                   help="attack this comma-separated set of values as ONE value x "
                        "(repeatable), e.g. Preschool,1st-4th,5th-6th,7th-8th")
    p.add_argument("--original", metavar="FILE",
                   help="original table, row-aligned with DATA: report recall, false flags, "
                        "average breach probability and the error of the mined distributions")
    p.add_argument("--max-set-size", type=size, metavar="K",
                   help="largest attribute set (default: all of --qi)")
    p.add_argument("--epsilon", type=positive, default=0.01,
                   help="Hoeffding ε > 0 (default 0.01)")
    p.add_argument("--confidence", type=hoeffding_confidence, default=0.9,
                   help="Hoeffding δ in (0, 2): the reliable sample size is ⌈ln(2/δ)/(2ε²)⌉ "
                        "(default 0.9, as the paper)")
    p.add_argument("--min-support", type=size, metavar="J",
                   help="reliable sample size (overrides --epsilon, --confidence)")
    p.add_argument("--unreliable", type=_unreliable, default="pooled",
                   help="tuples with an unreliable signature: pooled (one extra unknown per "
                        "attribute set, default), uniform (fixed 1/2, the paper's rule), "
                        "global (fixed rate of x) or a number")
    p.add_argument("--verbose", action="store_true",
                   help="also print the solver's terms (systems, reliable sample size J)")
    p.add_argument("--n-random", type=count, default=2, metavar="N",
                   help="random solver starts per system (default 2)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random starts (>= 0)")
    add_nulls_argument(p)
    add_weight_argument(p, "; every count and posterior is over people")
    p.add_argument("--top", type=size, metavar="N", default=10,
                   help="worst tuples to print (default 10)")
    p.add_argument("--max-seconds", type=max_seconds_arg, default=MAX_SECONDS, metavar="S",
                   help="refuse, before starting, when the mining's solve would take longer "
                        "than S seconds by its estimate from the group sizes (default "
                        f"{MAX_SECONDS:g}; none: no bound); a long run shows its estimate")
    p.add_argument("--distributions", metavar="OUT",
                   help="write the mined distributions (long table, Parquet/CSV)")
    p.add_argument("--tuples", metavar="OUT",
                   help="write every tuple's worst posterior and witness (Parquet/CSV)")
    add_output_arguments(p)
    add_encoding_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv attack``."""
    from .. import foreground
    from .._io import announce_written, check_outputs, write_table
    from .._progress import Progress
    from ._common import (
        Timer,
        bucketize,
        check_grouping,
        data_of,
        emit_json,
        escape,
        file_output,
        format_table,
    )

    check_grouping(args)
    for spec in args.value_set or []:
        if not [v for v in spec.split(",") if v.strip()]:
            raise InputError(f"--value-set {spec!r} is empty")
    inputs = [args.data] + [f for f in (args.sensitive_table, args.original) if f]
    check_outputs([args.distributions, args.tuples, file_output(args.json)],
                  overwrite=args.overwrite, inputs=inputs)
    data, group = bucketize(args, data_of(args))
    if isinstance(group, list) and len(group) == 1:    # --group COL: the attack reads one
        group = group[0]
    targets: list = list(args.sensitive_values or [])
    for spec in args.value_set or []:
        members = [v.strip() for v in spec.split(",") if v.strip()]
        if not members:
            raise InputError(f"--value-set {spec!r} is empty")
        targets.append(members)
    bar = Progress("attribute sets")
    with Timer() as t:
        res = foreground.attack(
            data, qi=args.qi, sensitive=args.sensitive, group=group, r=args.r,
            sensitive_table=args.sensitive_table, count=args.count,
            sensitive_values=targets or None, max_set_size=args.max_set_size,
            epsilon=args.epsilon, confidence=args.confidence, min_support=args.min_support,
            original=args.original, nulls=args.nulls, weight=args.weight, n_random=args.n_random,
            seed=args.seed, unreliable=args.unreliable, progress=bar,
            max_seconds=args.max_seconds)
    bar.done()
    md = res.mined
    print(res.summary(verbose=args.verbose))
    if res.n_problematic:
        _print_remedy(args)
    print(f"  total time {t.seconds:.2f} s")
    if args.top > 0:
        worst = res.worst(args.top)
        weighted = res.row_weight is not None      # a row stands for `people` of them
        rows = [[w["row"], *([w["people"]] if weighted else []), w["group"],
                 ",".join(w.get("attribute_set") or []) or "-", str(w.get("value", "-")),
                 w["posterior"]] for w in worst]
        print()
        print(format_table(["row", *(["people"] if weighted else []), "group",
                            "attribute set", "x", "posterior"], rows,
                           title=f"The {sum(w.get('people', 1) for w in worst)} most "
                                 "exposed people: row, group, the quasi-identifiers that "
                                 "expose them, the value, its probability"))
    if args.distributions:
        dest = write_table(args.distributions, md.table(), overwrite=args.overwrite,
                           inputs=inputs)
        announce_written(escape(dest))
    if args.tuples:
        dest = write_table(args.tuples, res.tuples(), overwrite=args.overwrite, inputs=inputs)
        announce_written(escape(dest))
    payload = res.to_dict(max_items=max(args.top, 10))
    payload["timings_s"] = {"total": t.seconds}
    emit_json(args, payload, inputs=[f for f in (args.sensitive_table, args.original) if f])
    return 1 if res.n_problematic else 0


def _print_remedy(args: argparse.Namespace) -> None:
    """Print the ART command that publishes an r-robust release instead.

    ART anonymizes a table of people with their sensitive values: DATA itself, or — when
    DATA is Anatomy's QI table (``--sensitive-table``), which holds no sensitive column —
    ``--original``; without it no table to anonymize was named, and that is said instead.
    """
    from ._common import escape, print_remedy

    criteria = ["--r", f"{args.r:g}"]
    if not args.sensitive_table:
        print_remedy(args, "art", criteria)
    elif args.original:      # read as this command read it: --encoding is DATA's
        print_remedy(argparse.Namespace(**{**vars(args), "data": args.original,
                                           "encoding": None, "delimiter": None}),
                     "art", criteria)
    else:
        print(f"  To fix, anonymize the table this release was made from (one row per person "
              f"with its {escape(args.sensitive)}; DATA, a QI table, holds no sensitive "
              f"column) with fastpriv anonymize --method art --r {args.r:g}; --original "
              "names it and this command prints the full command.")
