"""``fastpriv report``: one command from data to a complete audit report (HTML + JSON)."""

from __future__ import annotations

import argparse

from ..errors import InputError

ORDER = 5


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``report`` sub-command."""
    from ._common import (
        OPTIONAL_SENSITIVE_HELP,
        add_command,
        add_encoding_argument,
        add_knowledge_arguments,
        add_nulls_argument,
        add_risk_arguments,
        add_risk_switch,
        add_stream_argument,
        add_weight_argument,
        confidence,
        count,
        point_lkm,
        probability,
        real_gt1,
        size,
    )

    p = add_command(
        sub, "report", help="complete audit report of a release (self-contained HTML and JSON)",
        description="Audit a release with every model fastpriv implements — classical models, "
                    "(c,k)-safety curves, privacy-skyline breach probabilities and knowledge "
                    "skylines, r-robustness and the foreground-knowledge attack (when the "
                    "exact quasi-identifiers are given with --group) — and write a "
                    "self-contained HTML page for the data owner (verdict first, plots, "
                    "tables, glossary) and/or the same content as JSON (documented schema). "
                    "Outputs are written atomically and never over the input. Exit status: 0 "
                    "every check holds, 1 one fails, 2 bad input, 3 internal error.",
        example=("fastpriv report adult --sensitive occupation --qi age sex race "
                 "-o report.html --json report.json --overwrite"))
    p.add_argument("data", help="Parquet/CSV file or Parquet directory with one row per "
                                "individual, '-' for standard input (Parquet or CSV), or "
                                "'adult' for the bundled UCI Adult table")
    p.add_argument("--sensitive", help=OPTIONAL_SENSITIVE_HELP)
    p.add_argument("--group", nargs="+", metavar="COL",
                   help="group-id column(s) of a bucketized release; with --group, --qi names "
                        "the exact quasi-identifiers the adversary knows")
    p.add_argument("--qi", nargs="+", metavar="COL",
                   help="quasi-identifier columns: without --group the groups are their "
                        "distinct tuples (a generalized release); with --group the columns "
                        "the adversary knows exactly (r-robustness, foreground attack)")
    p.add_argument("--individual", metavar="COL",
                   help="individual-id column (MVPI: one row per individual and value)")
    add_weight_argument(p, "; every section counts people")
    add_nulls_argument(p)
    add_stream_argument(p, "; row-level sections skipped", default="no")
    p.add_argument("--c", nargs="+", type=confidence, default=[0.8, 0.95], metavar="C",
                   help="confidence thresholds in (0, 1]: an adversary succeeds when at least "
                        "c sure (default 0.8 0.95; the verdict uses the smallest)")
    p.add_argument("--k", type=count, default=3,
                   help="pieces of knowledge for the (c,k)-safety verdict (default 3)")
    p.add_argument("--k-max", type=count, default=None,
                   help="last k of the disclosure curves (default 12, as Martin et al., or "
                        "--k when larger)")
    p.add_argument("--point", type=point_lkm, default=(1, 1, 1), metavar="L,K,M",
                   help="skyline point ℓ,k,m of the verdict, the format of fastpriv skyline "
                        "--point without its c (default 1,1,1)")
    p.add_argument("--sigma", nargs="+", metavar="VALUE",
                   help="sensitive values whose knowledge skyline is computed (default: all, "
                        "or the 24 most exposed)")
    p.add_argument("--recursive-l", dest="l", type=size, default=None, metavar="L",
                   help="ℓ of recursive (c,ℓ)-diversity (default: the achieved distinct ℓ)")
    p.add_argument("--min-size", type=size, default=5, metavar="N",
                   help="k-anonymity threshold: every group has at least N people (default 5)")
    p.add_argument("--min-l", type=size, default=3, metavar="L",
                   help="distinct/entropy ℓ-diversity threshold (default 3)")
    p.add_argument("--max-t", type=probability, default=0.2,
                   help="t-closeness threshold in [0, 1] (default 0.2)")
    p.add_argument("--r", type=real_gt1, default=None,
                   help="r of r-robustness and of the attack (default 1/c of the verdict)")
    add_knowledge_arguments(p)
    p.add_argument("--max-set-size", type=size, default=2,
                   help="largest QI attribute set of the adversary's statistics (default 2)")
    p.add_argument("--sensitive-values", nargs="+", metavar="VALUE",
                   help="values protected by r-robustness / attacked (default: every value)")
    p.add_argument("--top", type=size, default=10, metavar="N",
                   help="worst groups / tuples listed (default 10)")
    p.add_argument("--row-label", metavar="COL",
                   help="column naming each row in the report (e.g. a record number)")
    p.add_argument("--include-individual-values", action="store_true",
                   help="also write the true sensitive value of each person the report names "
                        "(default: never)")
    p.add_argument("--no-robustness", action="store_true", help="skip r-robustness")
    p.add_argument("--no-attack", action="store_true", help="skip the foreground attack")
    add_risk_switch(p)
    add_risk_arguments(p)
    p.add_argument("--hierarchies", metavar="DIR",
                   help="generalization hierarchies of the --qi (a folder, as fastpriv "
                        "anonymize reads it; 'bundled': the bundled Adult ones): adds the "
                        "privacy–utility frontier of every generalization meeting --min-size "
                        "(as fastpriv frontier); the verdict models reading a hierarchy of "
                        "--sensitive take it from there too")
    p.add_argument("--title", help="report title")
    p.add_argument("--verbose", action="store_true",
                   help="also list the checks that did not run, with the reason")
    p.add_argument("-o", "--output", metavar="HTML", help="write the HTML report to HTML")
    p.add_argument("--json", metavar="OUT",
                   help="write the JSON report to OUT ('-': to standard output, and the text "
                        "summary to standard error)")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    add_encoding_argument(p)
    from ..registry import add_option_flags

    add_option_flags(p)               # the options the verdict models declare
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv report``."""
    from .._io import announce_written, check_outputs
    from ..registry import options_of, thresholds_of
    from ..report import build_report
    from ._common import (
        data_of,
        escape,
        file_output,
        load_population,
        remedy_options,
        risk_wanted,
        streamed,
        write_stdout,
    )

    if args.group is None and args.qi is None:
        raise InputError("give --group (a bucketized release) and/or --qi (quasi-identifier "
                         "columns)")
    if args.sensitive is None and args.qi is None:
        raise InputError("--qi: without --sensitive give the quasi-identifier columns (the "
                         "report measures k-anonymity and re-identification risk of their "
                         "classes)")
    if args.k_max is not None and args.k_max < args.k:
        raise InputError(f"--k-max ({args.k_max}) must be at least --k ({args.k})")
    if args.output == "-":
        raise InputError("-o/--output: give a file name for the HTML report ('-' is for "
                         "--json)")
    source = ("bundled UCI Adult (fastpriv.datasets.load_adult)" if args.data == "adult"
              else None)
    inputs = [args.data] + ([args.knowledge] if args.knowledge else []) + (
        [args.hierarchies] if args.hierarchies and args.hierarchies != "bundled" else [])
    json_file = file_output(args.json)
    check_outputs([args.output, json_file], overwrite=args.overwrite, inputs=inputs)
    data = data_of(args)
    rep = build_report(
        data, sensitive=args.sensitive, group=args.group, qi=args.qi,
        individual=args.individual, nulls=args.nulls, knowledge=args.knowledge,
        knowledge_fallback=args.fallback,
        sigma=args.sigma, c=args.c, k=args.k, k_max=args.k_max, point=tuple(args.point),
        l=args.l, min_size=args.min_size, min_l=args.min_l, max_t=args.max_t, r=args.r,
        max_set_size=args.max_set_size, sensitive_values=args.sensitive_values, top=args.top,
        include_individual_values=args.include_individual_values, row_label=args.row_label,
        robustness=not args.no_robustness, attack=not args.no_attack,
        stream=streamed(args, data), risk=risk_wanted(args), max_risk=args.max_risk,
        population=load_population(args),
        thresholds=thresholds_of(args), options=options_of(args),
        title=args.title, source=source, data_spec=args.data, weight=args.weight,
        sampling_weight=args.sampling_weight,
        remedy_options=remedy_options(args),
        hierarchies=args.hierarchies)
    print(rep.summary(verbose=args.verbose))
    print(f"(report built in {rep.data['timings_s']['total']:.2f} s)")
    for dest in rep.write(html=args.output, json=json_file, overwrite=args.overwrite,
                          inputs=inputs):
        announce_written(escape(dest))
    if args.json == "-":
        import json

        write_stdout(args, json.dumps(rep.to_dict(), indent=2, allow_nan=False) + "\n")
    return rep.exit_code
