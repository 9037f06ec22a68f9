"""``fastpriv robustness``: r-robustness audit under QI-based distribution knowledge (Wong)."""

from __future__ import annotations

import argparse

ORDER = 40


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``robustness`` sub-command."""
    from .._budget import MAX_SECONDS, max_seconds_arg
    from ._common import (
        add_bucketize_argument,
        add_command,
        add_encoding_argument,
        add_knowledge_arguments,
        add_nulls_argument,
        add_output_arguments,
        add_weight_argument,
        hoeffding_confidence,
        positive,
        real_gt1,
        size,
    )

    p = add_command(
        sub, "robustness", help="r-robustness: posteriors under QI-based distribution knowledge",
        description="Audit a released table for r-robustness: with background knowledge "
                    "p(signature : value) on every attribute subset of the QI (default: the "
                    "true conditional frequencies of DATA with reliable samples), compute "
                    "the exact possible-world posterior of every tuple, value and attribute "
                    "set and flag those above 1/r. DATA has one row per individual: exact QI "
                    "columns, the group id and the sensitive value. Exit status 1 when the "
                    "release is not r-robust (0 robust, 2 bad input, 3 internal error).",
        example=("fastpriv robustness adult --qi age sex race --sensitive occupation "
                 "--bucketize anatomy:4 --r 4"))
    p.add_argument("data", help="Parquet/CSV file or directory, or 'adult' for the bundled "
                                "UCI Adult table (with --bucketize)")
    p.add_argument("--qi", nargs="+", required=True, metavar="COL",
                   help="quasi-identifier columns (exact values)")
    p.add_argument("--sensitive", required=True, help="sensitive column")
    p.add_argument("--group", nargs="+", metavar="COL",
                   help="group-id column(s) of the release (or --bucketize)")
    add_bucketize_argument(p)
    p.add_argument("--r", type=real_gt1, required=True, help="privacy parameter r > 1")
    p.add_argument("--sensitive-values", nargs="+", metavar="VALUE",
                   help="the sensitive values X_s (default: every value)")
    p.add_argument("--model", choices=("binary", "multivalued"), default="binary",
                   help="binary (default) or full multi-valued possible-world model")
    add_knowledge_arguments(p)
    p.add_argument("--max-set-size", type=size, metavar="K",
                   help="largest attribute set of derived knowledge (default: all of --qi)")
    p.add_argument("--epsilon", type=positive, default=0.01,
                   help="reliability ε > 0 of derived knowledge (default 0.01)")
    p.add_argument("--confidence", type=hoeffding_confidence, default=0.9,
                   help="Hoeffding δ in (0, 2) of derived knowledge: the reliable sample size "
                        "is ⌈ln(2/δ)/(2ε²)⌉ (default 0.9, as the paper)")
    p.add_argument("--min-support", type=size, metavar="J",
                   help="reliable sample size of derived knowledge (overrides --epsilon, "
                        "--confidence)")
    add_nulls_argument(p)
    add_weight_argument(p, "; every count and posterior is over people")
    p.add_argument("--top", type=size, metavar="N", default=10,
                   help="worst (person, attribute set, value) cases to print (default 10)")
    p.add_argument("--max-seconds", type=max_seconds_arg, default=MAX_SECONDS, metavar="S",
                   help="refuse, before starting, when the posteriors would take longer than S "
                        "seconds by their estimate from the group sizes (default "
                        f"{MAX_SECONDS:g}; none: no bound); a long run shows its estimate")
    p.add_argument("--verbose", action="store_true",
                   help="also print the audit's internal counts (triples, Δ-certified groups)")
    add_output_arguments(p)
    add_encoding_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv robustness``."""
    from .. import robustness
    from .._io import check_outputs
    from ..knowledge import Knowledge
    from ._common import (
        Timer,
        bucketize,
        check_grouping,
        data_of,
        emit_json,
        file_output,
        format_table,
        print_remedy,
    )

    check_grouping(args)
    check_outputs([file_output(args.json)], overwrite=args.overwrite,
                  inputs=[args.data] + ([args.knowledge] if args.knowledge else []))
    data, group = bucketize(args, data_of(args))
    knowledge = None
    if args.knowledge:
        knowledge = Knowledge.from_table(args.knowledge, set_column="attributes",
                                         fallback=args.fallback, model=None)
    with Timer() as t:
        res = robustness.audit(
            data, qi=args.qi, sensitive=args.sensitive,
            group=group if isinstance(group, str) or len(group) > 1 else group[0], r=args.r,
            knowledge=knowledge, sensitive_values=args.sensitive_values, model=args.model,
            max_set_size=args.max_set_size, epsilon=args.epsilon, confidence=args.confidence,
            min_support=args.min_support, nulls=args.nulls, weight=args.weight,
            max_seconds=args.max_seconds)
    print(res.summary(verbose=args.verbose))
    if not res.robust:
        print_remedy(args, "art", ["--r", f"{args.r:g}"])
    print(f"  audit time {t.seconds:.2f} s")
    if res.n_problematic:
        d = res.to_dict(max_items=args.top)
        rows = [[w["row"], ",".join(w["attribute_set"]), w["value"], w["posterior"]]
                for w in d["problematic"]]
        print()
        print(format_table(["row", "attribute set", "value", "posterior"], rows,
                           title=f"The {len(rows)} most exposed people: row, the statistics "
                                 "that expose them, the value, its probability"))
    payload = res.to_dict(max_items=max(args.top, 100))
    payload["timings_s"] = {"audit": t.seconds}
    extra = [args.knowledge] if args.knowledge else []
    emit_json(args, payload, inputs=extra)
    return 0 if res.robust else 1
