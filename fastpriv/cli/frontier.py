"""``fastpriv frontier``: risk and loss of every generalization, and the Pareto frontier.

Reads the lattice search's flags (``fastpriv anonymize --method lattice``: the criteria,
``--hierarchies``/``--interval``, ``--suppression``, ``--utility``, ``--objective``) and
measures every node meeting the criterion (:mod:`fastpriv.frontier`): a text table of the
frontier on stdout, every node in ``--json``, an HTML page with the scatter plot in
``-o``, and the ``fastpriv anonymize`` command that publishes the chosen node.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InputError

ORDER = 35

EXAMPLE = ("fastpriv frontier adult --qi age sex race marital_status education --min-size 5 "
           "--suppression 0.02 -o frontier.html --json frontier.json --overwrite")

#: ``--help`` imports no NumPy: the choices of the library, written out (a test compares them
#: with fastpriv.anonymize.lattice.UTILITIES and fastpriv.frontier's constants)
UTILITIES = ("discernibility", "avg_group_size", "height", "precision", "loss", "entropy",
             "nm_entropy", "nm_precision", "aecs")
RISK_MEASURES = ("prosecutor_avg", "prosecutor_max", "population_uniques")
DEFAULT_MIN_SIZE = 2

#: criterion flag -> the Python keyword (and anonymize's flag) it stands for
_CRITERIA = (("min_size", "--min-size"), ("l", "--min-l"), ("c_l", "--c-l"),
             ("t", "--max-t"), ("alpha", "--alpha"), ("c", "--c"), ("k", "--k"),
             ("max_risk", "--max-risk"), ("max_avg_risk", "--max-avg-risk"),
             ("max_records_at_risk", "--max-records-at-risk"),
             ("risk_threshold", "--risk-threshold"), ("max_uniqueness", "--max-uniqueness"))


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``frontier`` sub-command."""
    from ._common import add_command, add_encoding_argument, probability
    from .anonymize import add_criterion_arguments

    p = add_command(
        sub, "frontier", help="privacy–utility frontier: risk and loss of every generalization",
        description="Measure every full-domain generalization of DATA that meets the "
                    "criterion (the lattice search's nodes, with the flags of fastpriv "
                    "anonymize --method lattice): the re-identification risk of the records "
                    "it publishes (highest and average prosecutor risk; population uniques "
                    "with --population N) and its information loss (--utility). Prints the "
                    "Pareto frontier — the nodes no other node beats on both risk and loss "
                    "— with the node the lattice search picks marked, and the fastpriv "
                    "anonymize command that publishes it; --json writes every node, -o an "
                    "HTML page with the scatter plot. Exit status: 0 the frontier was "
                    "measured, 1 no node meets the criterion, 2 bad input, 3 internal error.",
        example=EXAMPLE)
    p.add_argument("data", help="Parquet/CSV file or directory, '-' for standard input, or "
                                "'adult' (bundled UCI Adult)")
    p.add_argument("--qi", nargs="+", required=True, metavar="COL", help="quasi-identifiers")
    p.add_argument("--sensitive", metavar="COL",
                   help="sensitive column (only for criteria that read it: --min-l, --max-t, "
                        "--alpha, --c/--k)")
    p.add_argument("--weight", metavar="COL",
                   help="multiplicity column: each row stands for COL identical people")
    add_criterion_arguments(
        p, title=f"criteria (all given must hold; none given: --min-size {DEFAULT_MIN_SIZE})",
        population_help="population size in people: adds the estimated population uniques "
                        "of every node (--uniqueness-model, default dankar), and is the "
                        "population of --max-uniqueness")
    g = p.add_argument_group("lattice")
    g.add_argument("--hierarchies", metavar="DIR",
                   help="folder of hierarchy CSVs (<attribute>.csv or ARX's "
                        "<name>_hierarchy_<attribute>.csv); required for any data but the "
                        "bundled 'adult'")
    g.add_argument("--interval", action="append", metavar="ATTR=W1,W2,...",
                   help="interval hierarchy for a numeric attribute from widths, e.g. "
                        "age=5,10,20,40,* (repeatable)")
    g.add_argument("--utility", default="loss", choices=UTILITIES,
                   help="the loss of a node: a quality model of the lattice search (default "
                        "loss, ARX's MetricMDNMLoss; precision is shown as 1 - Prec)")
    g.add_argument("--objective", default="minimal", choices=("minimal", "optimal"),
                   help="which node is marked as chosen, as fastpriv anonymize picks it: "
                        "the best minimal node (default) or the best of all")
    g.add_argument("--suppression", type=probability, default=0.0, metavar="FRACTION",
                   help="fraction of people that may be suppressed; a node's risk is "
                        "measured on the records it publishes")
    g.add_argument("--risk-measure", default="prosecutor_avg", choices=RISK_MEASURES,
                   help="the risk of the frontier (default prosecutor_avg; "
                        "population_uniques needs --population); all are reported")
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="HTML",
                   help="write an HTML page with the scatter plot and the frontier")
    o.add_argument("--json", metavar="OUT",
                   help="write every node's risk and loss as JSON ('-': to standard output)")
    o.add_argument("--title", help="title of the HTML page")
    o.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.add_argument("--nulls", choices=("error", "drop"), default="error",
                   help="nulls in the used columns: raise (default) or drop the row")
    add_encoding_argument(p)
    p.set_defaults(func=run)


def _criterion(args: argparse.Namespace) -> Any:
    """Return the criterion of the flags (anonymize's reading; none: ``--min-size 2``)."""
    from ..frontier import DEFAULT_MIN_SIZE
    from ..predicates import criteria_from
    from .anonymize import _criterion as anonymize_criterion

    ns = argparse.Namespace(**vars(args))
    if args.max_uniqueness is None:      # here --population also means the uniques column
        ns.population = ns.uniqueness_model = None
    crit = anonymize_criterion(ns)
    return criteria_from(min_size=DEFAULT_MIN_SIZE) if crit is None else crit


def anonymize_argv(args: argparse.Namespace) -> list[str]:
    """Return the ``fastpriv anonymize`` flags that make the lattice search pick the chosen node."""
    from ..frontier import DEFAULT_MIN_SIZE

    out: list[str] = []
    for dest, flag in _CRITERIA:
        v = getattr(args, dest)
        if v is not None:
            out += [flag, f"{v:g}" if isinstance(v, float) else str(v)]
    if not out:
        out += ["--min-size", str(DEFAULT_MIN_SIZE)]
    if args.l is not None and args.l_kind != "distinct":
        out += ["--l-kind", args.l_kind]
    if args.t_ordered:
        out.append("--t-ordered")
    if args.knowledge_kind:
        out += ["--knowledge-kind", args.knowledge_kind]
    if args.max_uniqueness is not None:
        out += ["--population", str(args.population)]
        if args.uniqueness_model:
            out += ["--uniqueness-model", args.uniqueness_model]
    if args.hierarchies:
        out += ["--hierarchies", args.hierarchies]
    for spec in args.interval or []:
        out += ["--interval", spec]
    out += ["--utility", args.utility]
    if args.suppression:
        out += ["--suppression", f"{args.suppression:g}"]
    if args.objective != "minimal":
        out += ["--objective", args.objective]
    return out


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv frontier``."""
    from .._io import announce_written, check_outputs, output_set, write_text
    from ..anonymize.lattice import GeneralizationLattice
    from ..frontier import lattice_frontier
    from ..report.verdict import anonymize_command
    from ._common import (
        Timer,
        data_of,
        emit_json,
        escape,
        file_output,
        population_size,
        remedy_options,
    )
    from .anonymize import _hierarchy_spec

    if args.output == "-":
        raise InputError("-o/--output: give a file name for the HTML page ('-' is for --json)")
    inputs = [p for p in (args.data, args.hierarchies) if p]
    check_outputs([args.output, file_output(args.json)], overwrite=args.overwrite,
                  inputs=inputs)
    crit = _criterion(args)
    data = data_of(args)
    with Timer() as timer:
        lat = GeneralizationLattice(data, args.qi, args.sensitive, _hierarchy_spec(args),
                                    nulls=args.nulls, weight=args.weight)
        res = lattice_frontier(lat, crit, utility=args.utility, suppression=args.suppression,
                               objective=args.objective, population=population_size(args),
                               uniqueness_model=args.uniqueness_model or "dankar",
                               risk_measure=args.risk_measure)
    command = None
    if res.chosen is not None:
        command = anonymize_command(args.data, method="lattice", qi=args.qi,
                                    sensitive=args.sensitive, criteria=anonymize_argv(args),
                                    **remedy_options(args))
    print(res.summary())
    if command:
        print(f"To publish the chosen node: {command}")
    print(f"({res.n_nodes:,} nodes measured in {timer.seconds:.2f} s)", file=sys.stderr)
    payload = {**res.to_dict(), "command": command, "input": args.data}
    with output_set():
        if args.output:
            from ..report.html import render_frontier_page

            title = args.title or f"Privacy–utility frontier of {args.data}"
            dest = write_text(args.output, render_frontier_page(payload, title=title),
                              overwrite=args.overwrite, inputs=inputs)
            announce_written(escape(dest))
        emit_json(args, payload, inputs=inputs)
    return 0 if res.chosen is not None else 1
