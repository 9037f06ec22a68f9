"""``fastpriv audit``: evaluate a release against every model that applies."""

from __future__ import annotations

import argparse

ORDER = 10


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``audit`` sub-command."""
    from ._common import add_data_arguments, add_output_arguments

    p = sub.add_parser(
        "audit", help="audit a release: classical models (and worst-case models)",
        description="Build the release described by DATA (groups from --group or --qi) and "
                    "report what each privacy model achieves, with the worst group.")
    add_data_arguments(p)
    p.add_argument("--l", type=int, default=2, metavar="L",
                   help="ℓ for recursive (c,ℓ)-diversity (default 2)")
    p.add_argument("--ck", type=int, default=None, metavar="K",
                   help="(c,k)-safety: max disclosure against K basic implications and K "
                        "negated atoms, with witnesses (the JSON adds the curves k = 0..K)")
    add_output_arguments(p)
    p.set_defaults(func=run)


def audit_payload(rel, args: argparse.Namespace) -> tuple[dict, list[str]]:
    """Run the audit; return the JSON payload and the printable text blocks."""
    from .. import classic
    from ._common import Timer, format_table

    with Timer() as t:
        res = classic.audit(rel, l=args.l)
    rows = [[m["title"], m["value"], m["worst_label"]] for m in res.models.values()]
    blocks = [format_table(["model", "achieved", "worst group"], rows,
                           title="Classical models")]
    payload = {"release": release_summary(rel), "classic": res.to_dict(),
               "timings_s": {"classic": t.seconds}}
    if getattr(args, "ck", None) is not None:
        from .. import ck_safety

        with Timer() as tc:
            ck = ck_safety.audit(rel, args.ck)
        blocks.append(format_table(["knowledge", "max disclosure", "worst group", "witness"],
                                   ck.rows(), title="(c,k)-safety (Martin et al.)"))
        payload["ck_safety"] = ck.to_dict()
        payload["timings_s"]["ck_safety"] = tc.seconds
    return payload, blocks


def release_summary(rel) -> dict:
    """Basic facts of a release, for tables and JSON."""
    return {"case": rel.case, "n_groups": rel.n_groups, "n_rows": rel.n_rows,
            "n_individuals": rel.n_individuals, "n_values": rel.n_values,
            "sensitive": rel.sensitive_name, "min_group_size": int(rel.sizes.min()),
            "max_group_size": int(rel.sizes.max())}


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv audit``."""
    from ._common import Timer, emit_json, load_release

    with Timer() as t:
        rel = load_release(args)
    s = release_summary(rel)
    print(f"{args.data}: {s['n_rows']} rows, {s['n_groups']} groups (sizes {s['min_group_size']}"
          f"–{s['max_group_size']}), {s['n_values']} values of {args.sensitive!r} [{s['case']}]"
          f" — built in {t.seconds:.2f} s")
    payload, blocks = audit_payload(rel, args)
    payload["timings_s"]["release"] = t.seconds
    for b in blocks:
        print()
        print(b)
    emit_json(args, payload)
    return 0
