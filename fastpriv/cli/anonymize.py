"""``fastpriv anonymize``: produce a release with a chosen method and criterion.

Methods are a small registry, :data:`METHODS` (name → :class:`Method`). ``lattice`` and
``mondrian`` are built in. **Adding a method** never touches this file: put, in any module
``fastpriv/anonymize/<name>.py`` (or ``_<name>.py``), a module-level ::

    CLI_METHOD = ("anatomy", add_arguments, run)

* ``add_arguments(group)`` adds the method's own options to an ``argparse`` argument group
  (prefix them to avoid clashes, e.g. ``--anatomy-seed``); it may be ``None``;
* ``run(args, data, criterion)`` returns an :class:`~fastpriv.anonymize.Anonymized` (or an
  object with ``.release``, ``.group_ids`` and ideally ``.table()/.write()/.summary()``).
  ``args`` holds every parsed option (``args.qi``, ``args.sensitive``, ``args.min_size``,
  ``args.l``, …), ``data`` is the loaded input (a path, or a pyarrow Table for ``adult``), and
  ``criterion`` is the conjunction of the criterion options given, or ``None`` (a method
  may read ``args.min_size``/``args.l`` itself, e.g. Anatomy's ℓ).

Plugin modules are imported only when ``fastpriv anonymize`` itself is parsed (``fastpriv
--help`` stays light): the sub-parser loads them just before parsing its arguments. A
plugin that fails to import is listed with its error if someone selects it.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from .._progress import Progress
from ..errors import InputError
from ._common import (
    confidence,
    count,
    ell,
    population_arg,
    population_size,
    positive,
    probability,
    risk_bound,
    seed,
    size,
)

ORDER = 30


class Method(NamedTuple):
    """One ``--method``: its options and its runner."""

    name: str
    add_arguments: Callable[[Any], None] | None
    run: Callable[[argparse.Namespace, Any, Any], Any]
    source: str = "built-in"


#: name -> Method. Filled with the built-ins below and, lazily, with plugin modules.
METHODS: dict[str, Method] = {}
#: name -> the options a method added (refused with any other ``--method``).
METHOD_OPTIONS: dict[str, list[argparse.Action]] = {}
_PLUGIN_ERRORS: dict[str, str] = {}
_LOADED = False


def _parse_intervals(specs: list[str] | None) -> dict[str, list]:
    out: dict[str, list] = {}
    for spec in specs or []:
        if "=" not in spec:
            raise InputError(f"--interval expects ATTR=W1,W2,...[,*], got {spec!r}")
        attr, ws = spec.split("=", 1)
        widths: list[Any] = []
        for w in ws.split(","):
            w = w.strip()
            if w == "*":
                widths.append("*")
                continue
            try:
                widths.append(int(w) if w.lstrip("-").isdigit() else float(w))
            except ValueError:
                raise InputError(f"--interval {spec!r}: {w!r} is not a number") from None
        out[attr.strip()] = widths
    return out


def _hierarchy_spec(args: argparse.Namespace) -> Any:
    """Return the ``hierarchies=`` of the lattice search: folder, --interval, or bundled.

    The hierarchies bundled for Adult apply only to the bundled data (``adult``); for any
    other table every QI needs --hierarchies or --interval. Of a folder holding several
    data sets' files one data set's are read (:func:`~fastpriv.hierarchies.
    find_hierarchy_files`), and stderr says which and why.
    """
    from ..hierarchies import BUNDLED, Hierarchy, find_hierarchy_files

    intervals = _parse_intervals(args.interval)
    prefix = getattr(args, "hierarchy_prefix", None)
    if prefix is not None and not args.hierarchies:
        raise InputError("--hierarchy-prefix chooses the data set of a --hierarchies folder "
                         "and does nothing without it")
    files: dict[str, str] = {}
    if args.hierarchies:
        found = find_hierarchy_files(args.hierarchies,
                                     [a for a in args.qi if a not in intervals],
                                     prefix=prefix, data_name=args.data)
        files = found.files
        if len(found.datasets) > 1:
            print(f"lattice: --hierarchies holds the files of {', '.join(found.datasets)}: "
                  f"reading {found.dataset}'s ({found.reason})", file=sys.stderr)
    spec: dict[str, Any] = {}
    for a in args.qi:
        if a in intervals:
            spec[a] = intervals[a]
        elif a in files:
            spec[a] = Hierarchy.from_csv(files[a], name=a)
        elif args.data == "adult":
            spec[a] = BUNDLED
        else:
            raise InputError(f"--hierarchies: no hierarchy for QI {a!r}: pass --hierarchies DIR "
                             f"(files {a}.csv or ARX's <name>_hierarchy_{a}.csv), or --interval "
                             f"{a}=W1,W2,...; the bundled Adult hierarchies apply only to "
                             "the bundled data ('adult')")
    return spec


def _lattice_args(g: Any) -> None:
    g.add_argument("--hierarchies", metavar="DIR",
                   help="folder of hierarchy CSVs (one row per value, one column per level, "
                        "; or , separated) named <attribute>.csv or, as ARX writes them, "
                        "<name>_hierarchy_<attribute>.csv, the attribute written exactly "
                        "as the column (other files are ignored); required for any data but "
                        "the bundled 'adult'")
    g.add_argument("--hierarchy-prefix", metavar="NAME",
                   help="with a --hierarchies folder holding several data sets' files (ARX's "
                        "data/): read NAME_hierarchy_<attribute>.csv (default: the data set "
                        "named like the data file, adult.csv -> adult, else the only one "
                        "with a file for every QI)")
    g.add_argument("--interval", action="append", metavar="ATTR=W1,W2,...",
                   help="interval hierarchy for a numeric attribute from widths, e.g. "
                        "age=5,10,20,40,* (repeatable)")
    g.add_argument("--utility", default="discernibility",
                   choices=("discernibility", "avg_group_size", "height", "precision", "loss",
                            "entropy", "nm_entropy", "nm_precision", "aecs"),
                   help="quality model the chosen node minimizes (default discernibility); "
                        "ARX's: loss (MetricMDNMLoss, ARX's default), entropy (monotonic "
                        "non-uniform entropy), nm_entropy, nm_precision, aecs, height, "
                        "discernibility (see fastpriv.anonymize.lattice)")
    g.add_argument("--objective", default="minimal", choices=("minimal", "optimal"),
                   help="minimal: the best of the minimal satisfying nodes (default); "
                        "optimal: the best of all satisfying nodes, ARX's global optimum "
                        "(differs only with --suppression)")
    g.add_argument("--suppression", type=probability, default=0.0, metavar="FRACTION",
                   help="fraction of rows that may be suppressed (group-local criteria; "
                        "the risk criteria --max-avg-risk, --max-records-at-risk and "
                        "--max-uniqueness suppress the smallest classes first, as ARX)")
    g.add_argument("--suppressed", choices=("drop", "keep"), default="drop",
                   help="with --suppression: drop the suppressed rows (default), or keep them "
                        "as ARX does, every QI '*' and the sensitive value kept, as one group "
                        "audited by the criterion (a release whose '*' group fails it is "
                        "not written: exit 1)")
    g.add_argument("--strategy", default="auto",
                   choices=("auto", "flash", "exhaustive", "chain"),
                   help="lattice strategy: predictive tagging (auto/flash), every node, or "
                        "binary search along one chain (Martin et al. §3.4)")


def _lattice_run(args: argparse.Namespace, data: Any, crit: Any) -> Any:
    from ..anonymize.lattice import GeneralizationLattice

    if crit is None:
        raise InputError("the lattice method needs a criterion (--min-size, --l, --t, "
                         "--alpha, --c/--k, --max-risk, --max-avg-risk, "
                         "--max-records-at-risk, --max-uniqueness)")
    if args.suppressed == "keep" and not args.suppression:
        raise InputError("--suppressed keep keeps the rows --suppression removes; it does "
                         "nothing without --suppression")
    if args.strategy == "chain" and args.suppression:
        raise InputError("--strategy chain searches without suppression; leave out "
                         "--suppression")
    lat = GeneralizationLattice(data, args.qi, args.sensitive, _hierarchy_spec(args),
                                nulls=args.nulls, weight=args.weight)
    what = f"{lat.n_rows} people" if args.weight else f"{lat.n_rows} rows"
    print(f"lattice: {lat.n_nodes} nodes ({' × '.join(map(str, lat.heights))}), "
          f"{what} in {lat.n_cells} distinct cells", file=sys.stderr)
    if args.strategy == "chain":
        res = lat.chain_search(crit)
        if res.anonymized is None:
            raise InputError(f"no node of the chain satisfies {crit.name}")
        return res.anonymized
    bar = Progress("nodes tagged")
    res = lat.search(crit, utility=args.utility, suppression=args.suppression,
                     strategy=args.strategy, progress=bar,
                     objective=getattr(args, "objective", "minimal"),
                     suppressed=args.suppressed)
    bar.done()
    if res.anonymized is None:
        raise InputError(f"no node of the lattice satisfies {crit.name} (not even the top)")
    opt = res.optimum
    print(f"lattice: {opt['objective']} node {list(opt['node'])} by {opt['measure']}"
          + (f" (ARX {opt['arx_model']})" if opt["arx_model"] else "")
          + f" = {opt['value']!r}", file=sys.stderr)
    return res.anonymized


def _mondrian_args(g: Any) -> None:
    g.add_argument("--categorical", nargs="+", metavar="COL",
                   help="QI columns to split as categorical even if numeric")


def _mondrian_run(args: argparse.Namespace, data: Any, crit: Any) -> Any:
    from ..anonymize import mondrian

    if crit is None:
        raise InputError("the mondrian method needs a criterion (--min-size, --l, --t, "
                         "--alpha, --c/--k)")
    return mondrian(data, qi=args.qi, sensitive=args.sensitive, predicate=crit,
                    categorical=args.categorical, nulls=args.nulls, weight=args.weight,
                    progress=Progress("groups"))


METHODS["lattice"] = Method("lattice", _lattice_args, _lattice_run)
METHODS["mondrian"] = Method("mondrian", _mondrian_args, _mondrian_run)
#: built-in methods whose release is two tables (QI table, sensitive table)
BUCKETIZATIONS = ("anatomy", "art")
#: built-in methods (plugins may add others, of either kind)
METHODS_KNOWN = ("lattice", "mondrian", "skyline", "anatomy", "art")
#: methods that read ``--weight`` (each row stands for that many identical people); any
#: other method anonymizes the table expanded into one row per person
WEIGHTED_METHODS = ("lattice", "mondrian", "skyline")
#: methods whose function reads ``weight=`` by anonymizing the table expanded into one row
#: per person (:func:`fastpriv.anonymize.anatomy`, :func:`~fastpriv.anonymize.art`): the
#: result's ``source`` is that table. A plugin method gets the table expanded here.
PEOPLE_METHODS = ("anatomy", "art")


def load_plugins() -> None:
    """Import ``fastpriv/anonymize/*.py`` modules exposing ``CLI_METHOD`` (once)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    import importlib
    import os
    import pkgutil

    import fastpriv.anonymize as pkg

    own = os.path.dirname(os.path.abspath(pkg.__file__))
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name in ("_result", "lattice", "_mondrian"):    # not plugins / built-ins
            continue
        modname = f"{pkg.__name__}.{info.name}"
        if os.path.abspath(getattr(info.module_finder, "path", "")) == own:
            mod = importlib.import_module(modname)   # a broken built-in is a bug: no hiding
        else:
            try:
                mod = importlib.import_module(modname)
            except Exception as exc:  # a third-party plugin must not break the built-ins
                _PLUGIN_ERRORS[info.name] = f"{type(exc).__name__}: {exc}"
                continue
        spec = getattr(mod, "CLI_METHOD", None)
        if spec is None:
            continue
        try:
            name, add, run = spec
        except (TypeError, ValueError):
            _PLUGIN_ERRORS[info.name] = "CLI_METHOD must be (name, add_arguments, run)"
            continue
        if name in METHODS:
            _PLUGIN_ERRORS[name] = f"{modname} redefines the method {name!r}"
            continue
        METHODS[name] = Method(name, add, run, source=modname)


def add_criterion_arguments(p: Any, *, title: str = "criteria (all given must hold)",
                            population_help: str = "the population for --max-uniqueness: its "
                                                   "size in people, or a table of it (its "
                                                   "rows are its people)") -> Any:
    """Add the criterion flags (one meaning each, read by :func:`_criterion`) to ``p``.

    Shared by the commands that search the lattice (``anonymize``, ``frontier``); returns
    the argument group.
    """
    c = p.add_argument_group(title)
    c.add_argument("--min-size", type=size, metavar="N",
                   help="k-anonymity: every group has at least N people")
    c.add_argument("--min-l", "--l", dest="l", type=ell, metavar="L",
                   help="ℓ-diversity: every group has ℓ ≥ L (see --l-kind; the flag of "
                        "fastpriv audit's threshold)")
    c.add_argument("--l-kind", default="distinct", choices=("distinct", "entropy", "recursive"),
                   help="ℓ-diversity variant (default distinct)")
    c.add_argument("--c-l", type=positive, metavar="C",
                   help="c of recursive (c,ℓ)-diversity (with --l-kind recursive)")
    c.add_argument("--max-t", "--t", dest="t", type=probability, metavar="T",
                   help="t-closeness: every group's EMD ≤ T (the flag of fastpriv audit's "
                        "threshold)")
    c.add_argument("--t-ordered", action="store_true",
                   help="ordered ground distance for t-closeness")
    c.add_argument("--alpha", type=confidence, help="(α,k)-anonymity's α, in (0, 1]")
    c.add_argument("--c", type=confidence,
                   help="(c,k)-safety threshold (max disclosure < c), in (0, 1]")
    c.add_argument("--k", type=count, metavar="K",
                   help="(c,k)-safety: pieces of knowledge (with --c; k-anonymity is --min-size)")
    c.add_argument("--max-risk", type=risk_bound, metavar="R",
                   help="highest prosecutor re-identification risk, 1/(smallest class) <= R, "
                        "in (0, 1]")
    c.add_argument("--max-avg-risk", type=probability, metavar="R",
                   help="average prosecutor risk, classes/records <= R")
    c.add_argument("--max-records-at-risk", type=probability, metavar="SHARE",
                   help="share of records whose risk exceeds --risk-threshold <= SHARE")
    c.add_argument("--risk-threshold", type=risk_bound, metavar="R",
                   help="with --max-records-at-risk: risk above which a record is at risk "
                        "(default 0.2)")
    c.add_argument("--max-uniqueness", type=probability, metavar="SHARE",
                   help="estimated population uniques / population size <= SHARE (needs "
                        "--population; not monotone: every lattice node is checked, with "
                        "--objective optimal only those whose bound could beat the best)")
    c.add_argument("--population", type=population_arg, metavar="N|TABLE",
                   help=population_help)
    c.add_argument("--uniqueness-model", choices=("dankar", "pitman", "zayatz", "snb"),
                   help="with --max-uniqueness: population uniqueness model (default dankar: "
                        "Dankar et al.'s rule)")
    c.add_argument("--knowledge-kind", choices=("implications", "negations"),
                   help="with --c/--k: (c,k)-safety knowledge kind (default implications)")
    return c


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``anonymize`` sub-command."""
    from ._common import add_command, add_encoding_argument

    p = add_command(
        sub, "anonymize", help="anonymize a table (lattice search, Mondrian, plugins)",
        description="Produce a release of DATA that satisfies the given criteria (the "
                    "conjunction of every criterion option) with the chosen method, write it "
                    "atomically, and summarise its utility. Methods: lattice (full-domain "
                    "generalization, minimal nodes, needs hierarchies), mondrian (strict "
                    "multidimensional partitioning), and any method a module in "
                    "fastpriv/anonymize/ registers with CLI_METHOD. Every file it writes (the "
                    "release's tables, --auditor-view, --json) is committed as one unit. "
                    "Exit status: 0 a release meeting the criteria was produced, 1 the "
                    "method's result fails its own criterion (ART, or a lattice release "
                    "whose --suppressed keep '*' group fails it; nothing is published), 2 "
                    "bad input (or no release meets them), 3 internal error.",
        example=("fastpriv anonymize adult --method mondrian --qi age sex race "
                 "--sensitive occupation --min-size 5 --min-l 3 -o release.parquet "
                 "--overwrite",
                 "fastpriv anonymize adult --method anatomy --qi age sex race "
                 "--sensitive occupation --min-l 4 -o anatomy.parquet --overwrite"))
    p.add_argument("data", help="Parquet/CSV file or directory, or 'adult' (bundled UCI Adult)")
    p.add_argument("--qi", nargs="+", required=True, metavar="COL", help="quasi-identifiers")
    p.add_argument("--sensitive", metavar="COL",
                   help="sensitive column (needed by every criterion but --min-size, and by "
                        "anatomy and art; without it every column that matters is a QI)")
    p.add_argument("--method", default="lattice", metavar="NAME",
                   help="lattice (default), mondrian, or a plugin method")
    p.add_argument("--weight", metavar="COL",
                   help="multiplicity column: each row stands for COL identical people (a "
                        "GROUP BY count); every criterion counts people (--min-size 5: five "
                        "people per group) and the release keeps a count column (named COL, "
                        "or --count-column) so that it stands for the same people "
                        "(methods " + ", ".join(WEIGHTED_METHODS) + "; the others anonymize "
                        "the table expanded into one row per person)")
    add_criterion_arguments(p)
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="OUT",
                   help="write the release (Parquet, or CSV by suffix / --format): one table "
                        "of generalized QI, sensitive value and group id for generalizations "
                        "(lattice, mondrian, skyline); for bucketizations (anatomy, art) its "
                        "two tables, OUT's name with .qi and .sensitive before the suffix")
    o.add_argument("--format", choices=("parquet", "csv"), help="output format")
    o.add_argument("--keep", nargs="+", metavar="COL", default=[],
                   help="also publish these columns unchanged (every other column is left "
                        "out; name only columns that identify nobody)")
    o.add_argument("--auditor-view", metavar="PATH",
                   help="also write the auditor's view: every input row with its exact values "
                        "and its group id — the input of `fastpriv robustness` / `attack`, "
                        "NOT a release (its Parquet metadata says so)")
    o.add_argument("--count-column", default=None, metavar="NAME",
                   help="name of the count column of a bucketization's sensitive table "
                        "(default count; it must differ from the sensitive column), or of "
                        "the people per row of a --weight release (default: the --weight "
                        "column)")
    o.add_argument("--overwrite", action="store_true", help="replace existing output files")
    o.add_argument("--json", metavar="OUT", help="write the summary as JSON")
    o.add_argument("--query-error", type=count, metavar="N", default=0,
                   help="also report the relative error of N random count queries")
    o.add_argument("--seed", type=seed, default=0, help="seed of the query workload")
    p.add_argument("--nulls", choices=("error", "drop"), default="error",
                   help="nulls in the used columns: raise (default) or drop the row")
    add_encoding_argument(p)
    p.set_defaults(func=run)
    _lazy_method_arguments(p)


def _lazy_method_arguments(p: argparse.ArgumentParser) -> None:
    """Add method options (built-ins and plugins) when this sub-parser parses."""
    original = p.parse_known_args
    state = {"added": False}

    def parse_known_args(self: argparse.ArgumentParser, args: Any = None,
                         namespace: Any = None) -> Any:
        if not state["added"]:
            state["added"] = True
            load_plugins()
            for m in METHODS.values():
                if m.add_arguments is not None:
                    group = _Recorder(self.add_argument_group(f"method {m.name}"))
                    m.add_arguments(group)
                    METHOD_OPTIONS[m.name] = group.actions
        return original(args, namespace)

    p.parse_known_args = types.MethodType(parse_known_args, p)  # type: ignore[method-assign]


#: (option, the option it qualifies): given alone it would change nothing, so it is refused.
QUALIFIERS = (("risk_threshold", "--risk-threshold", "max_records_at_risk",
               "--max-records-at-risk"),
              ("uniqueness_model", "--uniqueness-model", "max_uniqueness", "--max-uniqueness"),
              ("population", "--population", "max_uniqueness", "--max-uniqueness"),
              ("t_ordered", "--t-ordered", "t", "--max-t"),
              ("knowledge_kind", "--knowledge-kind", "c", "--c"),
              ("c_l", "--c-l", "l", "--min-l"))


def _criterion(args: argparse.Namespace) -> Any:
    from ..predicates import criteria_from

    for dest, flag, needs, needs_flag in QUALIFIERS:
        if getattr(args, dest) not in (None, False) and getattr(args, needs) is None:
            raise InputError(f"{flag} qualifies {needs_flag} and does nothing without it")

    if args.k is not None and args.c is None:
        raise InputError(f"--k {args.k} is (c,k)-safety's number of pieces of knowledge and "
                         f"needs --c (the disclosure threshold); k-anonymity's minimum group "
                         f"size is --min-size {args.k}")
    if args.c is not None and args.k is None:
        raise InputError("--c is (c,k)-safety's disclosure threshold and needs --k (pieces of "
                         "knowledge)")
    if all(getattr(args, x) is None for x in ("min_size", "l", "t", "alpha", "c", "k",
                                               "max_risk", "max_avg_risk",
                                               "max_records_at_risk", "max_uniqueness")):
        return None
    l = args.l
    if l is not None and args.l_kind != "entropy":
        if float(l) != int(l):
            raise InputError(f"--min-l must be an integer for {args.l_kind} ℓ-diversity, got "
                             f"{l}")
        l = int(l)
    return criteria_from(min_size=args.min_size, l=l, l_kind=args.l_kind, c_l=args.c_l,
                         t=args.t, t_ordered=args.t_ordered, alpha=args.alpha, c=args.c,
                         k=args.k, knowledge_kind=args.knowledge_kind or "implications",
                         max_risk=args.max_risk, max_avg_risk=args.max_avg_risk,
                         max_records_at_risk=args.max_records_at_risk,
                         risk_threshold=args.risk_threshold,
                         max_uniqueness=args.max_uniqueness,
                         population=population_size(args),
                         uniqueness_model=args.uniqueness_model)


def summary_payload(result: Any, args: argparse.Namespace, seconds: float,
                    data: Any) -> dict:
    """Summarize the utility of an anonymization result (JSON-ready dict)."""
    import numpy as np

    from .. import metrics
    from ..anonymize import Anonymized, LatticeAnonymized

    rel = result.release
    gids = np.asarray(result.group_ids)
    min_size = args.min_size or 1
    weighted = getattr(result, "row_weights", None) is not None
    sup_people = result.n_suppressed_people if weighted else None
    out = {"method": args.method, "criterion": (result.params or {}).get("criterion")
           if hasattr(result, "params") else None,
           "n_rows": int(gids.shape[0]), "n_groups": rel.n_groups,
           "n_suppressed": int(np.sum(gids < 0)),
           "min_group_size": int(rel.sizes.min()), "max_group_size": int(rel.sizes.max()),
           "discernibility": metrics.discernibility(result if isinstance(result, Anonymized)
                                                    else rel, n_suppressed=sup_people),
           "avg_group_size_c_avg": metrics.average_group_size(rel, min_size=min_size),
           "published_unchanged": list(args.keep), "seconds": seconds,
           "failure": getattr(result, "failure", None)}
    if weighted:     # group sizes count people; so do these
        out.update(weight=args.weight, n_people=result.n_people,
                   n_suppressed_people=sup_people)
    if isinstance(result, LatticeAnonymized):
        out["node"] = list(result.node)
        out["levels"] = dict(result.levels)
        out["fully_suppressed"] = list(result.fully_suppressed)
        out["suppressed"] = result.suppressed
        out["n_suppressed_rows"] = result.n_suppressed_rows
        out["optimum"] = (result.params or {}).get("optimum")
        if result.n_checked is not None:
            out["nodes_checked"] = result.n_checked
            out["n_nodes"] = result.n_nodes
            out["minimal_nodes"] = [list(m) for m in result.minimal_nodes or ()]
    if args.query_error:
        if args.weight:
            raise InputError("--query-error is not available with --weight yet (its queries "
                             "count rows); leave it out, or anonymize the expanded table")
        if args.sensitive is None:
            raise InputError("--query-error needs --sensitive (the queries count sensitive "
                             "values)")
        qe = metrics.query_error(data, result, qi=args.qi, sensitive=args.sensitive,
                                 n_queries=args.query_error, seed=args.seed)
        out["query_error"] = qe.to_dict()
    return out


def summary_text(payload: dict, result: Any) -> str:
    """Return the plain-text summary: what was published, how, and its utility cost."""
    from ..anonymize._result import left_out_text
    from ..report.text import fmt_number

    weighted = "n_people" in payload
    left_out = left_out_text(payload["n_suppressed_people" if weighted else "n_suppressed"],
                             "people" if weighted else "rows",
                             payload.get("n_suppressed_rows", 0),
                             payload.get("suppressed", "drop"))
    rows = (f"{payload['n_rows'] - payload['n_suppressed']:,} of {payload['n_rows']:,} rows "
            f"in {payload['n_groups']:,} groups of "
            f"{payload['min_group_size']:,}–{payload['max_group_size']:,} people "
            f"({left_out})")
    if weighted:
        n_p = payload["n_people"]
        rows = (f"{n_p - payload['n_suppressed_people']:,} of {n_p:,} people "
                f"(--weight {payload['weight']}: {payload['n_rows']:,} rows) in "
                f"{payload['n_groups']:,} groups of "
                f"{payload['min_group_size']:,}–{payload['max_group_size']:,} people "
                f"({left_out})")
    lines = [f"{payload['method']}: published {rows}",
             f"criterion: {payload['criterion']} — "
             + (f"FAILS: {payload['failure']}" if payload.get("failure")
                else "holds")]
    if "levels" in payload:
        lines += _lattice_lines(payload)
    if getattr(result, "is_bucketization", False):
        lines.append("published as two tables: the QI table (exact QI values, group id) and "
                     "the sensitive table (group id, value, count); never join them")
    if payload["published_unchanged"]:
        lines.append("published unchanged (--keep): " + ", ".join(payload["published_unchanged"]))
    lines.append(f"utility: discernibility {fmt_number(payload['discernibility'])}, normalized "
                 f"average group size {fmt_number(payload['avg_group_size_c_avg'])}"
                 + (f", count-query relative error {payload['query_error']['relative_error']:.3g}"
                    if "query_error" in payload else ""))
    return "\n".join(lines)


def _lattice_lines(payload: dict) -> list[str]:
    """Return the lines naming the node chosen and the measure it optimizes."""
    from ..report.text import fmt_number

    gone = set(payload.get("fully_suppressed", ()))
    opt = payload.get("optimum") or {}
    among = ("the best of every satisfying node" if opt.get("objective") == "optimal" else
             f"the best of {len(payload['minimal_nodes'])} minimal nodes"
             if payload.get("minimal_nodes") else "")
    checked = (f"{payload['nodes_checked']:,} of {payload['n_nodes']:,} nodes checked"
               if payload.get("n_nodes") else "")
    how = "; ".join(x for x in (among, checked) if x)
    lines = ["generalization chosen: " + ", ".join(
        f"{a} at level {lv}" + (" (fully suppressed: every value is *)" if a in gone else "")
        for a, lv in payload["levels"].items()) + (f" ({how})" if how else "")]
    if opt.get("measure") is not None and opt.get("value") is not None:
        arx = f", ARX's {opt['arx_model']}" if opt.get("arx_model") else ""
        lines.append(f"optimized ({opt['objective']}{arx}): {opt['measure']} = "
                     f"{fmt_number(opt['value'])}")
    return lines


def _outputs(args: argparse.Namespace, bucketization: bool | None) -> list[str]:
    """Every path this run writes (the release's tables, the auditor's view, the JSON)."""
    from ..anonymize import release_paths

    out: list[str] = []
    if args.output and args.output != "-":
        if bucketization is None:      # unknown before the method runs: check both forms
            out += list(release_paths(args.output, bucketization=True).values())
            out.append(args.output)
        else:
            out += list(release_paths(args.output, bucketization=bucketization).values())
    from ._common import file_output

    return out + [p for p in (args.auditor_view, file_output(args.json)) if p]


class _Recorder:
    """An argparse argument group that remembers the actions added to it."""

    def __init__(self, group: Any) -> None:
        self.group = group
        self.actions: list[argparse.Action] = []

    def add_argument(self, *a: Any, **kw: Any) -> argparse.Action:
        action = self.group.add_argument(*a, **kw)
        self.actions.append(action)
        return action

    def __getattr__(self, name: str) -> Any:
        return getattr(self.group, name)


def _refuse_other_methods_options(args: argparse.Namespace) -> None:
    """Refuse an option of another method than ``--method``: it would do nothing.

    An option counts as given when its value differs from its default or it appears on
    the command line (``--utility discernibility`` with ``--method mondrian`` too).
    """
    argv = getattr(args, "argv", None) or []
    for name, actions in METHOD_OPTIONS.items():
        if name == args.method:
            continue
        for a in actions:
            on_line = any(t == o or t.startswith(o + "=") for t in argv
                          for o in a.option_strings)
            if on_line or getattr(args, a.dest, a.default) != a.default:
                raise InputError(f"{a.option_strings[-1]} is an option of --method {name}; "
                                 f"--method {args.method} does not read it")


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv anonymize``."""
    from .._io import check_outputs, note_input, output_set
    from ._common import Timer, data_of

    load_plugins()
    if args.method not in METHODS:
        if args.method in _PLUGIN_ERRORS:
            raise InputError(f"--method {args.method!r}: its module failed to import: "
                             f"{_PLUGIN_ERRORS[args.method]}")
        raise InputError(f"--method must be one of {', '.join(sorted(METHODS))}; got "
                         f"{args.method!r}")
    _refuse_other_methods_options(args)
    _check_stdout_release(args)
    inputs = [p for p in (args.data, getattr(args, "hierarchies", None)) if p]
    for p in inputs:
        note_input(p)
    bucket = args.method in BUCKETIZATIONS
    check_outputs(_outputs(args, bucket if args.method in METHODS_KNOWN else None),
                  overwrite=args.overwrite, inputs=inputs)
    crit = _criterion(args)
    data = data_of(args)
    if _out_of_core(args, data):
        return _run_out_of_core(args, data, crit, inputs)
    if args.weight and args.method not in WEIGHTED_METHODS + PEOPLE_METHODS:
        data = _one_row_per_person(args, data)
    _check_keep(args, data)
    with Timer() as t:
        result = METHODS[args.method].run(args, data, crit)
    if args.weight and args.method in PEOPLE_METHODS:
        data = _people_of(args, result)
    payload = summary_payload(result, args, t.seconds, data)
    print(summary_text(payload, result))
    with output_set():
        _write_outputs(args, result, data, inputs, payload)
    return 1 if payload["failure"] else 0


#: Inputs whose columns take at least this many bytes once read (a Parquet file's
#: uncompressed size from its metadata; a CSV file's or a folder's bytes on disk) are
#: anonymized out of core by the methods that can (:data:`OUT_OF_CORE_METHODS`); the
#: environment variable ``FASTPRIV_OUT_OF_CORE_BYTES`` sets another size (0: always).
OUT_OF_CORE_BYTES = 256 << 20
#: Methods ``fastpriv anonymize`` runs out of core on a large input
#: (:func:`fastpriv.anonymize.release_out_of_core`).
OUT_OF_CORE_METHODS = ("lattice", "mondrian")


def _source_bytes(path: str, columns: list[str]) -> int:
    """Return the bytes ``columns`` of a file take once read, or a folder's bytes on disk.

    A file whose size once read cannot be told counts its bytes on disk.
    """
    import os

    from ..anonymize._input import source_bytes_in_memory

    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(root, f))
                   for root, _, files in os.walk(path) for f in files)
    est = source_bytes_in_memory(path, columns)
    return os.path.getsize(path) if est is None else est[0]


def _out_of_core(args: argparse.Namespace, data: Any) -> bool:
    """Return whether this run anonymizes out of core.

    It does for a large file or folder, a method that can, a release written to a file,
    and nothing asked for that needs the rows themselves (``--keep``, ``--auditor-view``,
    ``--query-error``, ``--suppressed keep``, the chain strategy).
    """
    import os

    if args.method not in OUT_OF_CORE_METHODS or not isinstance(data, (str, os.PathLike)):
        return False
    if not args.output or args.output == "-" or args.keep or args.auditor_view or \
            args.query_error or getattr(args, "suppressed", "drop") != "drop" or \
            getattr(args, "strategy", "auto") == "chain":
        return False
    limit = os.environ.get("FASTPRIV_OUT_OF_CORE_BYTES", "").strip()
    try:
        threshold = int(limit) if limit else OUT_OF_CORE_BYTES
    except ValueError:
        raise InputError(f"FASTPRIV_OUT_OF_CORE_BYTES must be a number of bytes, got "
                         f"{limit!r}") from None
    return _source_bytes(os.fspath(data), _columns_read(args)) >= threshold


def _columns_read(args: argparse.Namespace) -> list[str]:
    """Return the columns an anonymization reads: QIs, sensitive, weight."""
    return [*args.qi, *([args.sensitive] if args.sensitive else []),
            *([args.weight] if args.weight else [])]


def _run_out_of_core(args: argparse.Namespace, data: Any, crit: Any, inputs: list) -> int:
    """Anonymize a large input out of core: write, re-audit, summarize; the exit status."""
    import os

    from .._io import announce_written
    from ..anonymize.out_of_core import release_out_of_core
    from ._common import Timer, emit_json, escape

    if crit is None:
        raise InputError(f"the {args.method} method needs a criterion (--min-size, --l, --t, "
                         "--alpha, --c/--k, or a risk criterion)")
    size = _source_bytes(os.fspath(data), _columns_read(args))
    print(f"anonymize: {args.data} is large ({size / 2**20:,.0f} MiB of columns once read): "
          "out of core — one pass into the histogram of distinct cells, the release written "
          "from it batch by batch and re-audited before it is put in place", file=sys.stderr)
    options: dict[str, Any] = {"predicate": crit}
    if args.method == "lattice":
        options.update(hierarchies=_hierarchy_spec(args),
                       hierarchy_prefix=args.hierarchy_prefix, utility=args.utility,
                       objective=args.objective, suppression=args.suppression,
                       strategy=args.strategy)
    else:
        options.update(categorical=args.categorical)
    with Timer() as t:
        r = release_out_of_core(data, output=args.output, method=args.method, qi=args.qi,
                                sensitive=args.sensitive, weight=args.weight,
                                nulls=args.nulls, overwrite=args.overwrite,
                                format=args.format, inputs=inputs, **options)
    payload = _out_of_core_payload(r, args, t.seconds)
    print(summary_text(payload, r.result))
    if not r.paths:
        print("release not written: the file as written fails its criterion on re-audit",
              file=sys.stderr)
    for dest in r.paths:
        announce_written(escape(dest), "release")
    emit_json(args, payload, inputs=inputs)
    return 0 if r.value else 1


def _out_of_core_payload(r: Any, args: argparse.Namespace, seconds: float) -> dict:
    """Return the run's summary (:func:`summary_payload`'s) in people, with the out-of-core facts.

    The anonymizer ran on the histogram (one row per distinct cell, weighted by its
    people): the counts are those of the people, the rows of an unweighted input.
    """
    payload = summary_payload(r.result, args, seconds, None)
    if not args.weight:       # each input row is one person: rows are people
        payload["n_rows"] = payload.pop("n_people")
        payload["n_suppressed"] = payload.pop("n_suppressed_people")
        payload.pop("weight", None)
    else:                     # the input's rows, not the histogram's cells
        payload["n_rows"] = r.n_rows
        payload["n_suppressed"] = None
    if "n_suppressed_rows" in payload:    # the criterion's, in people (not in cells)
        payload["n_suppressed_rows"] = (r.result.n_suppressed_people - r.n_null_people
                                        if not args.weight else None)
    payload["failure"] = None if r.value else "the written file fails its criterion"
    payload["out_of_core"] = {"n_cells": r.n_cells, "n_people": r.n_people,
                              "n_written": r.n_written, "reaudit": r.reaudit,
                              "paths": list(r.paths), "seconds": r.seconds}
    return payload


def _check_stdout_release(args: argparse.Namespace) -> None:
    """``-o -``: the release as CSV on standard output (one table; nothing else there)."""
    if args.output != "-":
        return
    if args.format != "csv":
        raise InputError("-o -: the release goes to standard output as CSV, a format that "
                         "streams; add --format csv (or give a file name for Parquet)")
    if args.method in BUCKETIZATIONS:
        raise InputError(f"-o -: a {args.method} release is two tables (QI and sensitive); "
                         "give a file name")
    if args.json == "-":
        raise InputError("-o - and --json - would both write to standard output; give one "
                         "of them a file name")


def _release_to_stdout(args: argparse.Namespace, result: Any, data: Any) -> None:
    """Write the release's one table as CSV to the real standard output."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ._common import write_stdout

    if not hasattr(result, "table"):
        raise InputError(f"method {args.method!r} returned no publishable table")
    table = result.table(data, keep=args.keep, count_column=args.count_column)
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink)
    write_stdout(args, sink.getvalue().to_pybytes().decode("utf-8"))
    print(f"wrote the release to standard output ({table.num_rows:,} rows, CSV)",
          file=sys.stderr)


def _one_row_per_person(args: argparse.Namespace, data: Any) -> Any:
    """``--weight`` for a plugin method that anonymizes rows: expand each row into its people.

    The built-in ones read ``weight=`` themselves (:data:`PEOPLE_METHODS`,
    :func:`_people_of`).
    """
    from .._arrow import expand_weights

    data = expand_weights(data, args.weight)
    _said_expanded(args, data.num_rows)
    return data


def _people_of(args: argparse.Namespace, result: Any) -> Any:
    """Return the people a :data:`PEOPLE_METHODS` result anonymized (one row each).

    Its function read ``weight=`` by expanding the table (``result.source``); the release,
    the auditor's view and the utility are those of that table.
    """
    people = result.source
    _said_expanded(args, people.num_rows)
    return people


def _said_expanded(args: argparse.Namespace, n_people: int) -> None:
    """Say that ``--weight`` expanded the table; the rest of the run reads people."""
    print(f"--weight {args.weight}: the {args.method} method anonymizes people one row each: "
          f"the table expanded into {n_people:,} people", file=sys.stderr)
    args.weight = None


def _write_outputs(args: argparse.Namespace, result: Any, data: Any, inputs: list,
                   payload: dict) -> None:
    """Stage every output of the run (one unit, committed by the caller's output set)."""
    from .._io import announce_written, write_table
    from ._common import emit_json, escape

    failure = payload["failure"]
    if args.output and failure:
        print(f"release not written: it fails its own criterion ({failure})", file=sys.stderr)
    elif args.output == "-":
        _release_to_stdout(args, result, data)
    elif args.output:
        if not hasattr(result, "write"):
            raise InputError(f"method {args.method!r} returned no publishable table")
        for dest in result.write(args.output, data, keep=args.keep, overwrite=args.overwrite,
                                 format=args.format, count_column=args.count_column):
            announce_written(escape(dest), "release")
    if args.auditor_view:
        dest = write_table(args.auditor_view, result.auditor_view(data),
                           overwrite=args.overwrite, format=args.format, inputs=inputs)
        announce_written(escape(dest), "auditor's view: NOT a release, never publish it")
    emit_json(args, payload, inputs=inputs)


def _check_keep(args: argparse.Namespace, data: Any) -> None:
    """--keep: existing columns, none a QI, the sensitive column or a name the release adds."""
    import os

    from .._arrow import as_table
    from ..anonymize._publish import check_keep

    if not args.keep:
        return
    if isinstance(data, (str, os.PathLike)):
        import pyarrow.dataset as ds

        names = ds.dataset(os.fspath(data), format="csv" if os.fspath(data).lower().endswith(
            (".csv", ".csv.gz")) else "parquet").schema.names
    else:
        names = as_table(data, param="data").column_names
    count = args.count_column or (args.weight if args.method in WEIGHTED_METHODS
                                   else None) or "count"
    check_keep(args.keep, columns=names, qi=args.qi, sensitive=args.sensitive,
               added=["group_id", count] + ([args.weight] if args.weight else []),
               param="--keep")
