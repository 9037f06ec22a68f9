"""``fastpriv skyline``: knowledge skylines and skyline checks (Chen et al., VLDB 2007)."""

from __future__ import annotations

import argparse

from ..errors import InputError

ORDER = 30


def _point(text: str):

    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"--point expects l,k,m,c (e.g. 1,5,2,0.9); got {text!r}")
    try:
        l, k, m = (int(p) for p in parts[:3])
    except ValueError:
        raise argparse.ArgumentTypeError(f"--point expects integers l,k,m and a number c; "
                                         f"got {text!r}") from None
    if min(l, k, m) < 0:
        raise argparse.ArgumentTypeError(f"--point expects l, k, m >= 0; got {text!r}")
    return (l, k, m, _threshold(parts[3]))


def _threshold(text: str):
    from fractions import Fraction

    try:
        c = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"c expects a number such as 0.95 or 19/20; "
                                         f"got {text!r}") from None
    if not 0 < float(c) <= 1:        # also refuses values too small for a float (1e-400)
        raise argparse.ArgumentTypeError(f"c must be a number in (0, 1] that a float can hold; "
                                         f"got {text!r}")
    return c


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``skyline`` sub-command."""
    from ._common import add_command, add_data_arguments, add_output_arguments

    p = add_command(
        sub, "skyline", help="privacy skyline: worst-case (ℓ,k,m) background knowledge",
        description="Knowledge skyline (the largest (ℓ,k,m) knowledge under which the "
                    "breach probability stays below c) of a sensitive value, and checks of "
                    "(ℓ,k,m,c) skyline points. ℓ: facts about the target, k: about other "
                    "individuals, m: same-value family members. Exit status 1 when a "
                    "--point is violated (0 every point holds, 2 bad input, 3 internal "
                    "error).",
        example=("fastpriv skyline adult --sensitive occupation --qi age sex "
                 "--sigma Sales --c 0.95 --point 1,1,1,0.95"))
    add_data_arguments(p)
    p.add_argument("--individual", metavar="COL",
                   help="individual-id column of an MVPI table (one row per individual and "
                        "value)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--sigma", metavar="VALUE", help="the sensitive value σ")
    which.add_argument("--all-sigma", action="store_true", help="every sensitive value")
    p.add_argument("--c", type=_threshold, metavar="C",
                   help="confidence threshold in (0, 1] of the knowledge skyline "
                        "(BP < c is safe), e.g. 0.95 or 19/20")
    p.add_argument("--point", type=_point, action="append", default=[], metavar="L,K,M,C",
                   help="check a skyline point (repeatable)")
    p.add_argument("--exact", action="store_true",
                   help="exact rational arithmetic (SVPI and MVPI-Set)")
    p.add_argument("--verbose", action="store_true",
                   help="also print the internal terms (the skyline's caps, which of the "
                        "paper's sufficient statistics realises the worst case)")
    add_output_arguments(p)
    p.set_defaults(func=run)


def _fmt_point(p) -> list:
    import math

    return ["inf" if x == math.inf else int(x) for x in p]


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv skyline``."""
    from .. import skyline
    from .._io import check_outputs
    from ..report.text import describe_key, fmt_label
    from ._common import Timer, emit_json, escape, file_output, format_table, load_release

    if args.c is None and not args.point:
        raise InputError("give --c (knowledge skyline) and/or --point l,k,m,c (checks)")
    check_outputs([file_output(args.json)], overwrite=args.overwrite, inputs=[args.data])
    with Timer() as t_rel:
        rel = load_release(args)  # streams Parquet directories / large files (SVPI)
    print(f"{escape(args.data)}: {rel.n_rows} rows, {rel.n_groups} groups, "
          f"{rel.n_values} values of {args.sensitive!r} [{rel.case}] — built in "
          f"{t_rel.seconds:.2f} s")
    every = bool(args.all_sigma)       # not `sigma is None`: None is the null value's label
    sigma = None if every else _as_value(rel, args.sigma)
    payload: dict = {"data": str(args.data), "case": rel.case, "timings_s":
                     {"release": t_rel.seconds}}
    status = 0
    if args.c is not None:
        with Timer() as t:
            skies = (skyline.knowledge_skylines(rel, c=args.c, exact=args.exact)
                     if every else
                     {sigma: skyline.knowledge_skyline(rel, sigma=sigma, c=args.c,
                                                       exact=args.exact)})
        payload["timings_s"]["knowledge_skyline"] = t.seconds
        payload["skylines"] = {str(s): v.to_dict() for s, v in skies.items()}
        for s, v in skies.items():
            rows = [_fmt_point(p) for p in v]
            print()
            caps = f"; caps {list(v.caps)}" if args.verbose else ""
            print(format_table(
                ["values ruled out (ℓ)", "others' values known (k)", "relatives known (m)"],
                rows or [["-", "-", "-"]],
                title=f"Knowledge skyline of {fmt_label(s)!r} at c = {float(args.c):g}: an "
                      f"adversary whose knowledge is at most one row in every dimension "
                      f"stays below {float(args.c):g} certainty{caps}"))
            if not rows:
                print(f"  no safe knowledge: even from the release alone an adversary is at "
                      f"least {float(args.c):g} sure that someone has {fmt_label(s)!r}")
    if args.point:
        key = "*" if every else sigma
        with Timer() as t:
            res = skyline.check(rel, skylines={key: args.point}, exact=args.exact)
        payload["timings_s"]["check"] = t.seconds
        payload["check"] = res.to_dict()
        rows = []
        for pr in res.points:
            rows.append([pr.sigma, pr.l, pr.k, pr.m, float(pr.c), float(pr.value),
                         "PASS" if pr.safe else "FAIL"]
                        + ([pr.case_used or "-"] if args.verbose else []))
        print()
        print(format_table(["value", "ℓ", "k", "m", "c", "breach probability", "verdict"]
                           + (["worst case"] if args.verbose else []), rows,
                           title="Skyline points: an adversary with (ℓ, k, m) knowledge must "
                                 "stay below c"))
        for pr in res.violations[:5]:
            w = skyline.breach_probability(rel, sigma=pr.sigma, l=pr.l, k=pr.k, m=pr.m).witness
            if w is not None:
                names = rel.groups.column_names
                parts = [f"target in the group {describe_key(names, w.group_labels['t'])}"]
                if w.x_values:
                    parts.append(f"known not to have / implying σ: {list(w.x_values)}")
                if w.n_u:
                    what = (f"with values {list(w.y_values)}" if w.y_values
                            else f"known to lack {fmt_label(pr.sigma)!r}")
                    parts.append(f"{w.n_u} other(s) in the group "
                                 f"{describe_key(names, w.group_labels.get('u'))} {what}")
                if w.n_v:
                    parts.append(f"{w.n_v} family member(s) in the group "
                                 f"{describe_key(names, w.group_labels.get('v'))}")
                print(f"  worst case for {fmt_label(pr.sigma)!r} at ({pr.l},{pr.k},{pr.m}), BP = "
                      f"{float(pr.value):.4g}: " + "; ".join(parts))
        status = 0 if res.safe else 1
    emit_json(args, payload)
    return status


def _as_value(rel, text: str):
    """Return the value label matching ``text`` (labels may be integers etc.)."""
    for v in rel.values:
        if str(v) == text:
            return v
    rel.code_of(text, param="--sigma")   # raises, listing the values
    return text
