"""``fastpriv demo``: the main job on the bundled UCI Adult data, no arguments needed."""

from __future__ import annotations

import argparse

ORDER = 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command."""
    p = sub.add_parser(
        "demo", help="audit the bundled UCI Adult data (no arguments needed)",
        description="Generalize the bundled UCI Adult table (age in 20-year bands, sex, race; "
                    "the rest suppressed), publish occupation as the sensitive attribute, and "
                    "audit the release with every model fastpriv implements.")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--overwrite", action="store_true", help="replace an existing JSON output")
    p.set_defaults(func=run)


def demo_table():
    """Adult with age generalized to 20-year bands; QI = age band, sex, race."""
    import pyarrow.compute as pc

    from ..datasets import load_adult

    adult = load_adult()
    band = pc.multiply(pc.divide(adult.column("age"), 20), 20)  # integer division
    return adult.append_column("age_band", band)


def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv demo``."""
    from ..release import Release
    from ._common import Timer, emit_json
    from .audit import audit_payload, release_summary

    qi = ["age_band", "sex", "race"]
    with Timer() as t:
        rel = Release.from_table(demo_table(), sensitive="occupation", qi=qi)
    s = release_summary(rel)
    print("fastpriv demo — UCI Adult (Becker & Kohavi 1996, CC BY 4.0), 45,222 rows")
    print(f"release: QI {', '.join(qi)} (everything else suppressed), sensitive 'occupation': "
          f"{s['n_groups']} groups of {s['min_group_size']}–{s['max_group_size']} people, "
          f"{s['n_values']} values — built in {t.seconds:.2f} s")
    ns = argparse.Namespace(l=3, ck=getattr(args, "ck", None))
    payload, blocks = audit_payload(rel, ns)
    for b in blocks:
        print()
        print(b)
    if args.json:
        args.data = "adult"
        emit_json(args, payload)
    return 0
