"""``fastpriv audit``: evaluate a release against every count-based model, with a verdict."""

from __future__ import annotations

import argparse

from ..errors import InputError

ORDER = 10

EXAMPLE = "fastpriv audit adult --sensitive occupation --qi age sex"


def add_threshold_arguments(p: argparse.ArgumentParser) -> None:
    """Add the thresholds of the verdict to ``p`` (shared by ``audit`` and ``report``)."""
    from ._common import confidence, count, point_lkm, probability, size

    t = p.add_argument_group("thresholds of the verdict (PASS/FAIL per model)")
    t.add_argument("--min-size", type=size, default=5, metavar="N",
                   help="k-anonymity: every group has at least N people (default 5)")
    t.add_argument("--min-l", type=size, default=3, metavar="L",
                   help="distinct and entropy ℓ-diversity: at least L values (default 3)")
    t.add_argument("--max-t", type=probability, default=0.2, metavar="T",
                   help="t-closeness: distance to the whole table at most T, in [0, 1] "
                        "(default 0.2)")
    t.add_argument("--c", nargs="+", type=confidence, default=[0.8], metavar="C",
                   help="confidence an adversary needs, in (0, 1]: (α,k), (c,k)-safety and "
                        "the skyline must stay below the smallest (default 0.8)")
    t.add_argument("--k", type=count, default=3, metavar="K",
                   help="(c,k)-safety: pieces of background knowledge (default 3)")
    t.add_argument("--point", type=point_lkm, default=(1, 1, 1), metavar="L,K,M",
                   help="privacy skyline point ℓ,k,m of the verdict, the format of fastpriv "
                        "skyline --point without its c (default 1,1,1)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``audit`` sub-command."""
    from ._common import (
        add_command,
        add_data_arguments,
        add_output_arguments,
        add_risk_arguments,
        add_risk_switch,
        size,
    )

    p = add_command(
        sub, "audit", help="audit a release: classical models, (c,k)-safety, skyline; PASS/FAIL",
        description="Build the release described by DATA (groups from --group or --qi), "
                    "report what each privacy model achieves with the worst group, and give "
                    "the verdict against the thresholds below: PASS/FAIL per model, the most "
                    "important risk, and the `fastpriv anonymize` command that fixes a "
                    "failing release. Exit status: 0 every check holds, 1 one fails, 2 bad "
                    "input, 3 internal error.",
        example=EXAMPLE)
    add_data_arguments(p, require_sensitive=False)
    p.add_argument("--recursive-l", dest="l", type=size, default=None, metavar="L",
                   help="ℓ of recursive (c,ℓ)-diversity (default: the achieved distinct ℓ)")
    add_threshold_arguments(p)
    r = p.add_argument_group("re-identification risk (needs --qi)")
    add_risk_switch(r)
    add_risk_arguments(r)
    p.add_argument("--verbose", action="store_true",
                   help="also list the checks that did not run, with the reason")
    add_output_arguments(p)
    from ..registry import add_option_flags

    add_option_flags(p)               # the options the verdict models declare
    p.set_defaults(func=run)


def classical_table(rel, models: dict) -> str:
    """Tabulate every model's achieved value (rounded), what it means and the worst group.

    The exact values are in the JSON; the table is for a person reading the terminal.
    """
    from ..report import classical_meaning
    from ..report.text import describe_key, fmt_number
    from ._common import format_table

    names = rel.groups.column_names
    rows = [[m["title"], fmt_number(m["value"]), classical_meaning(key, m["value"]),
             describe_key(names, m["worst_label"])] for key, m in models.items()]
    return format_table(["model", "achieved", "what it means", "worst group"], rows,
                        title="Classical models")


def group_sections(d: dict) -> dict:
    """Return the report's sections of the models reading the groups, but ``classical``.

    In the registry's order (:data:`fastpriv.registry.MODELS`): those of (c,k)-safety and
    the privacy skyline; ``d`` is the report payload.
    """
    from ..registry import MODELS

    names = dict.fromkeys(n for m in MODELS if m.reads == "groups" for n in m.section_names)
    return {n: d[n] for n in names if n != "classical"}


def class_sections(d: dict) -> list[tuple[str, str, dict | None]]:
    """Return the report's sections of the models reading the QI classes.

    ``(name, title, section)`` in the registry's order (the re-identification risk; the
    section None when the report has none); ``d`` is the report payload.
    """
    from ..registry import MODELS

    out = {n: (n, m.title[:1].upper() + m.title[1:], d.get(n))
           for m in MODELS if m.reads == "classes" for n in m.section_names}
    return list(out.values())


def release_summary(rel) -> dict:
    """Return the basic facts of a release, for tables and JSON."""
    return {"case": rel.case, "n_groups": rel.n_groups, "n_rows": rel.n_rows,
            "n_individuals": rel.n_individuals, "n_values": rel.n_values,
            "sensitive": rel.sensitive_name, "min_group_size": int(rel.sizes.min()),
            "max_group_size": int(rel.sizes.max())}


def audit_release(rel, args: argparse.Namespace, data_spec: str):
    """Run the verdict's models on a built release; return the report object."""
    from ..registry import options_of, thresholds_of
    from ..report import build_report
    from ._common import load_population, remedy_options

    thresholds = thresholds_of(args)
    qi = args.qi if args.qi and not args.group and any(
        v is not None for v in thresholds.values()) else None
    return build_report(rel, c=args.c, k=args.k, point=tuple(args.point), l=args.l,
                        min_size=args.min_size, min_l=args.min_l, max_t=args.max_t,
                        robustness=False, attack=False, knowledge_skylines=False,
                        data_spec=data_spec, source=data_spec, remedy_qi=args.qi, qi=qi,
                        remedy_options=remedy_options(args),
                        thresholds=thresholds, population=load_population(args),
                        options=options_of(args))


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv audit``."""
    from .._io import check_outputs
    from ..registry import MODELS
    from ._common import Timer, emit_json, escape, file_output, load_release, risk_wanted

    if args.risk and not args.qi:
        raise InputError("--risk: give the quasi-identifiers with --qi (the classes are "
                         "their distinct tuples)")
    args.risk = risk_wanted(args)
    _refuse_idle_risk_flags(args)
    check_outputs([file_output(args.json)], overwrite=args.overwrite, inputs=[args.data])
    if args.sensitive is None:
        return _audit_classes(args)
    with Timer() as t:
        rel = load_release(args)
    s = release_summary(rel)
    print(f"{escape(args.data)}: {s['n_rows']} rows, {s['n_groups']} groups "
          f"(sizes {s['min_group_size']}–{s['max_group_size']}), {s['n_values']} values of "
          f"{args.sensitive!r} [{s['case']}] — built in {t.seconds:.2f} s")
    rep = audit_release(rel, args, args.data)
    d = rep.to_dict()
    if d["classical"]["status"] == "ok":
        print()
        print(classical_table(rel, d["classical"]["models"]))
    classical = {k: v for k, v in d["classical"].items() if k != "seconds"}  # deterministic
    own = {n for m in MODELS if m.audit_cli for n in m.section_names}
    payload = {"release": s, "classic": classical,
               **{n: sec for n, sec in group_sections(d).items() if n not in own},
               "models": d.get("models", {}), "verdict": d["verdict"],
               "timings_s": {**d["timings_s"], "release": t.seconds}}
    status = _own_audits(rel, args, d, payload, after=False)
    print()
    print(rep.summary(verbose=args.verbose))
    status = max(status, rep.exit_code, _own_audits(rel, args, d, payload, after=True))
    emit_json(args, payload)
    return status


def _own_audits(rel, args: argparse.Namespace, d: dict, payload: dict, *, after: bool) -> int:
    """Run the models' own parts of the audit (:attr:`~fastpriv.registry.Model.audit_cli`).

    Those run ``after`` the verdict is printed, or before it; each one's JSON goes under the
    model's name in ``payload``. Returns 1 when one of them fails, else 0.
    """
    from ..registry import MODELS, load

    status = 0
    for m in MODELS:
        if m.audit_cli and m.audit_cli_after == after:
            entry, ok = load(m.audit_cli)(rel, args, d)
            if entry is not None:
                payload[m.name] = entry
            status = max(status, 0 if ok else 1)
    return status


def _refuse_idle_risk_flags(args: argparse.Namespace) -> None:
    """Refuse --max-risk and a population size when the risk does not run.

    That is with ``--no-risk`` or without ``--qi``; a population table still feeds
    --min-k-map and --max-delta.
    """
    from ..registry import thresholds_of

    if args.risk:
        return
    argv = getattr(args, "argv", None) or []
    if any(t == "--max-risk" or t.startswith("--max-risk=") for t in argv):
        raise InputError("--max-risk is the threshold of the re-identification risk, which "
                         "does not run here (--no-risk, or no --qi); leave it out")
    if args.sampling_weight is not None:
        raise InputError("--sampling-weight feeds the re-identification risk, which does "
                         "not run here (--no-risk, or no --qi); leave it out")
    table_used = any(v is not None for v in thresholds_of(args).values())
    if args.population is not None and not table_used:
        raise InputError("--population feeds the re-identification risk (journalist risk, "
                         "population uniques; off here: --no-risk, or no --qi), --min-k-map "
                         "and --max-delta; add one of them or leave it out")


def _audit_classes(args: argparse.Namespace) -> int:
    """``fastpriv audit`` without ``--sensitive``: k-anonymity and risk of the QI classes."""
    from ..registry import thresholds_of
    from ..report import build_report
    from ._common import (
        Timer,
        data_of,
        emit_json,
        escape,
        format_table,
        load_population,
        remedy_options,
    )

    if not args.qi:
        raise InputError("--qi: without --sensitive give the quasi-identifier columns (the "
                         "audit measures k-anonymity and re-identification risk of their "
                         "classes)")
    with Timer() as t:
        rep = build_report(data_of(args), qi=args.qi,
                           nulls=args.nulls, weight=args.weight,
                           sampling_weight=args.sampling_weight, min_size=args.min_size,
                           max_risk=args.max_risk, population=load_population(args),
                           risk=args.risk,
                           thresholds=thresholds_of(args), robustness=False, attack=False,
                           knowledge_skylines=False,
                           data_spec=args.data, source=args.data, remedy_qi=args.qi,
                           remedy_options=remedy_options(args))
    d = rep.to_dict()
    cl = d["classes"]
    print(f"{escape(args.data)}: {cl['n_records']:,} records in {cl['n_classes']:,} classes of "
          f"identical quasi-identifiers (sizes {cl['class_size']['min']}–"
          f"{cl['class_size']['max']}, {cl['singleton_classes']:,} unique) — counted in "
          f"{t.seconds:.2f} s")
    rows = [[", ".join(f"{k}={v}" for k, v in c["values"].items()), c["size"]]
            for c in cl["smallest"][:5]]
    print()
    print(format_table(["quasi-identifier values", "people"], rows, title="Smallest classes"))
    sections = class_sections(d)
    for _, title, sec in sections:
        if (sec or {}).get("status") == "ok":
            print()
            print(title)
            print(sec["summary"])
    print()
    print(rep.summary(verbose=args.verbose))
    emit_json(args, {"classes": cl, **{name: sec for name, _, sec in sections},
                     "models": d.get("models", {}), "verdict": d["verdict"],
                     "timings_s": d["timings_s"]})
    return rep.exit_code
