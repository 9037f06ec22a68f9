"""``fastpriv demo``: the main job on the bundled UCI Adult data, no arguments needed.

It audits a naive release of Adult (age in 20-year bands and sex, occupation sensitive),
shows the verdict and the remedy the verdict computes, runs that remedy (a Mondrian
release meeting every threshold), audits the result and prints the knowledge skyline of its
most exposed value. The exit status is the verdict of the release it produces.
"""

from __future__ import annotations

import argparse

ORDER = 1

#: the naive release: Martin et al.'s Figure 5 setting plus sex (10 groups)
QI = ["age_band", "sex"]
#: the columns the remedy generalizes instead (the original, exact values)
REMEDY_QI = ["age", "sex"]
#: confidence an adversary needs, pieces of knowledge for (c,k)-safety
CONFIDENCE, CK = 0.8, 3


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command."""
    from ._common import add_command

    p = add_command(
        sub, "demo", help="audit the bundled UCI Adult data, then fix it (no arguments needed)",
        description="Audit a naive release of the bundled UCI Adult table (age in 20-year "
                    "bands and sex; occupation sensitive) with the classical models, "
                    "(c,k)-safety and the privacy skyline; show what fails and why; run the "
                    "remedy the verdict computes (a Mondrian release meeting every "
                    "threshold) and audit that. Exit status: the verdict of the fixed "
                    "release (0 it passes, 1 it fails).",
        example="fastpriv demo")
    p.add_argument("--json", metavar="OUT",
                   help="also write the results as JSON to OUT ('-': to standard output, "
                        "and the text to standard error)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing JSON output")
    p.set_defaults(func=run)


def demo_table():
    """Adult with age generalized to 20-year bands (column ``age_band``: ``"20–39"``, …)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..datasets import load_adult

    adult = load_adult()
    low = pc.multiply(pc.divide(adult.column("age"), 20), 20)  # integer division
    high = pc.add(low, 19)
    band = pc.binary_join_element_wise(pc.cast(low, pa.string()), pc.cast(high, pa.string()),
                                       "–")
    return adult.append_column("age_band", band)


def _audit(rel, qi: list[str]):
    from ..report import build_report

    return build_report(rel, c=CONFIDENCE, k=CK, robustness=False, attack=False,
                        knowledge_skylines=False, data_spec="adult", remedy_qi=qi)


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv demo``."""
    from .._io import check_outputs
    from ..release import Release
    from ._common import Timer, emit_json, file_output
    from .audit import classical_table

    check_outputs([file_output(args.json)], overwrite=args.overwrite)
    table = demo_table()
    print("fastpriv demo — UCI Adult (Becker & Kohavi 1996, CC BY 4.0), 45,222 rows\n")
    with Timer() as t:
        rel = Release.from_table(table, sensitive="occupation", qi=QI)
    print(f"1. A naive release: age in 20-year bands and sex published, occupation sensitive, "
          f"the rest removed — {rel.n_groups} groups of {int(rel.sizes.min()):,}–"
          f"{int(rel.sizes.max()):,} people ({t.seconds:.2f} s).\n")
    before = _audit(rel, REMEDY_QI)
    print(classical_table(rel, before.data["classical"]["models"]))
    print()
    print(before.summary())
    payload = {"before": _payload(rel, before)}
    status = before.exit_code
    if before.exit_code:
        fixed, seconds = _remedy(table)
        print(f"\n2. The remedy, run ({seconds:.2f} s): {fixed.release.n_groups} groups of at "
              f"least {int(fixed.release.sizes.min()):,} people, age and sex generalized "
              "where needed.\n")
        after = _audit(fixed.release, REMEDY_QI)
        print(after.summary())
        payload["after"] = _payload(fixed.release, after)
        status = after.exit_code
        rel = fixed.release
    payload["knowledge_skyline"] = _print_skyline(rel)
    print("\nMore: fastpriv report adult --sensitive occupation --qi age sex race -o r.html "
          "(every model, HTML); fastpriv anonymize / robustness / attack --help.")
    if args.json:
        args.data = "adult"
        emit_json(args, payload)
    return status


def _remedy(table):
    """Run the Mondrian release the verdict's remedy command describes."""
    from ..anonymize import mondrian
    from ..predicates import criteria_from
    from ._common import Timer

    crit = criteria_from(min_size=5, l=3, l_kind="entropy", t=0.2, c=CONFIDENCE, k=CK)
    with Timer() as t:
        res = mondrian(table, qi=REMEDY_QI, sensitive="occupation", predicate=crit)
    return res, t.seconds


def _payload(rel, rep) -> dict:
    from .audit import group_sections, release_summary

    d = rep.to_dict()
    return {"release": release_summary(rel), "classic": d["classical"],
            **group_sections(d), "verdict": d["verdict"]}


def _print_skyline(rel) -> dict:
    """Knowledge skyline of the most exposed value, in words."""
    from .. import skyline
    from ._common import format_table

    chk = skyline.check(rel, skylines={"*": [(1, 1, 1, CONFIDENCE)]})
    worst = max(chk.points, key=lambda p: float(p.value))
    sky = skyline.knowledge_skyline(rel, sigma=worst.sigma, c=CONFIDENCE)
    rows = [[_amount(pt[0]), _amount(pt[1])] for pt in sky if pt[2] == 0]
    print()
    print(format_table(
        ["values the adversary rules out for the target (ℓ)",
         "other people whose values he knows (k)"], rows or [["-", "-"]],
        title=f"How much may an adversary know before being {CONFIDENCE:.0%} sure that "
              f"someone is in {worst.sigma!r} (the most exposed occupation)? Knowledge "
              "skyline at m = 0; `fastpriv skyline` gives every point"))
    if not rows:
        print(f"  (none: even without background knowledge the certainty reaches "
              f"{CONFIDENCE:.0%})")
    return {str(worst.sigma): sky.to_dict()}


def _amount(x: float) -> str | int:
    return "any number" if x == float("inf") else int(x)
