"""``fastpriv demo``: the main job on the bundled UCI Adult data, no arguments needed."""

from __future__ import annotations

import argparse

ORDER = 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command."""
    p = sub.add_parser(
        "demo", help="audit the bundled UCI Adult data (no arguments needed)",
        description="Generalize the bundled UCI Adult table (age in 20-year bands and sex; "
                    "the rest suppressed), publish occupation as the sensitive attribute, and "
                    "audit the release with the classical models, (c,k)-safety and the "
                    "privacy skyline (see `fastpriv report` for r-robustness and the "
                    "foreground attack as well).")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--overwrite", action="store_true", help="replace an existing JSON output")
    p.set_defaults(func=run)


def demo_table():
    """Adult with age generalized to 20-year bands (column ``age_band``)."""
    import pyarrow.compute as pc

    from ..datasets import load_adult

    adult = load_adult()
    band = pc.multiply(pc.divide(adult.column("age"), 20), 20)  # integer division
    return adult.append_column("age_band", band)


#: the demo's release: Martin et al.'s Figure 5 setting plus sex (10 groups)
QI = ["age_band", "sex"]
#: (ℓ, k, m) checked for every occupation, and the confidence an adversary needs
POINT, CONFIDENCE, CK = (1, 1, 1), 0.95, 5


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv demo``."""
    from .. import skyline
    from ..release import Release
    from ._common import Timer, emit_json, format_table
    from .audit import audit_payload, release_summary
    from .skyline import _fmt_point

    print("fastpriv demo — UCI Adult (Becker & Kohavi 1996, CC BY 4.0), 45,222 rows")
    print("(the first run compiles the kernels, about 30 s; later runs use the on-disk cache)")
    with Timer() as t:
        rel = Release.from_table(demo_table(), sensitive="occupation", qi=QI)
    s = release_summary(rel)
    print(f"release: QI {', '.join(QI)} (everything else suppressed), sensitive 'occupation': "
          f"{s['n_groups']} groups of {s['min_group_size']}–{s['max_group_size']} people, "
          f"{s['n_values']} values — built in {t.seconds:.2f} s")
    payload, blocks = audit_payload(rel, argparse.Namespace(l=3, ck=CK))
    payload["timings_s"]["release"] = t.seconds

    # privacy skyline: BP at one (ℓ,k,m) point for every value, then the knowledge skyline
    # of the most exposed value
    l_, k_, m_ = POINT
    with Timer() as t:
        chk = skyline.check(rel, {"*": [(l_, k_, m_, CONFIDENCE)]})
    worst = max(chk.points, key=lambda p: float(p.value))
    with Timer() as t2:
        sky = skyline.knowledge_skyline(rel, worst.sigma, CONFIDENCE)
    rows = [[p.sigma, float(p.value), "yes" if p.safe else "NO", p.case_used or "-"]
            for p in sorted(chk.points, key=lambda p: -float(p.value))[:5]]
    blocks.append(format_table(
        ["sensitive value", "breach probability", f"< {CONFIDENCE}", "worst case"], rows,
        title=f"Privacy skyline (Chen et al.): adversary with (ℓ,k,m) = {POINT}, "
              "five most exposed values"))
    pts = [_fmt_point(p) for p in sky]
    blocks.append(format_table(
        ["l", "k", "m"], pts or [["-", "-", "-"]],
        title=f"Knowledge skyline of {worst.sigma!r} at c = {CONFIDENCE}: the most an "
              "adversary may know and still be < c sure"))
    payload["skyline"] = {"check": chk.to_dict(),
                          "knowledge_skyline": {str(worst.sigma): sky.to_dict()}}
    payload["timings_s"].update({"skyline_check": t.seconds, "knowledge_skyline": t2.seconds})
    for b in blocks:
        print()
        print(b)
    print()
    print("More: fastpriv report adult --sensitive occupation --qi age sex race -o r.html "
          "(every model, HTML);\n      fastpriv robustness / attack / anonymize --help "
          "(r-robustness, foreground attack, safe releases).")
    if args.json:
        args.data = "adult"
        emit_json(args, payload)
    return 0
