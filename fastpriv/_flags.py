"""Argparse ``type=`` parsers of fastpriv's numeric flags: one per meaning.

They are shared by every command (and by anonymizer plugins that add their own flags) so
that a flag reads the same everywhere. Light: the standard library only (``fastpriv --help``
imports nothing heavy).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

__all__ = ["bounded", "probability", "confidence", "real_gt1", "positive", "nonnegative",
           "hoeffding_confidence", "risk_bound", "at_least_1", "ell", "size", "count", "seed"]

def bounded(kind: type, low: float | None = None, high: float | None = None, *,
            low_open: bool = False, high_open: bool = False,
            name: str | None = None) -> Callable[[str], Any]:
    """Return an argparse ``type=`` parsing a finite ``kind`` (int or float) in a range.

    Parameters
    ----------
    kind : {int, float}
        ``int`` accepts integers only (``"5"``, not ``"5.0"``); ``float`` any finite number.
    low, high : float, optional
        Bounds of the range (``None``: unbounded on that side).
    low_open, high_open : bool, default False
        Exclude the bound itself.
    name : str, optional
        Name shown by argparse for a value it cannot parse (default: the range).

    Returns
    -------
    callable
        ``parse(text)``; a value that is not a finite number in range raises
        ``argparse.ArgumentTypeError``, which argparse reports as ``argument --FLAG:
        expected …, got '…'`` with exit status 2.

    """
    word = "an integer" if kind is int else "a number"
    if low is not None and high is not None:
        want = (f"{word} in {'(' if low_open else '['}{low:g}, {high:g}"
                f"{')' if high_open else ']'}")
    elif low is not None:
        want = f"{word} {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        want = f"{word} {'<' if high_open else '<='} {high:g}"
    else:
        want = f"a finite {word[2:] if kind is int else 'number'}"

    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        ok = math.isfinite(v) and not (
            low is not None and (v <= low if low_open else v < low)) and not (
            high is not None and (v >= high if high_open else v > high))
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return v

    parse.__name__ = name or want
    return parse


#: A probability in [0, 1] (``--max-t``, ``--max-risk``, ``--fallback``).
probability = bounded(float, 0, 1)
#: A confidence threshold in (0, 1] (``--c``).
confidence = bounded(float, 0, 1, low_open=True)
#: r of r-robustness: a finite number > 1 (``--r``).
real_gt1 = bounded(float, 1, low_open=True)
#: A finite number > 0 (``--epsilon``).
positive = bounded(float, 0, low_open=True)
#: A finite number >= 0.
nonnegative = bounded(float, 0)
#: The Hoeffding δ of the reliable sample size, in (0, 2) as :func:`fastpriv.knowledge.
#: reliable_support` defines it (``--confidence`` of ``robustness`` / ``attack``).
hoeffding_confidence = bounded(float, 0, 2, low_open=True, high_open=True)
#: A risk bound in (0, 1] (``anonymize --max-risk``, ``--risk-threshold``).
risk_bound = confidence
#: A real number >= 1.
at_least_1 = bounded(float, 1)


def ell(text: str) -> int | float:
    """Parse ``--min-l``: ℓ >= 1, an integer when written as one (entropy ℓ may be real)."""
    v = at_least_1(text)
    return int(v) if float(v).is_integer() else v


ell.__name__ = "a number >= 1 (ℓ)"
#: A size or count of at least 1 (``--min-size``, ``--min-l``, ``--max-set-size``, ...).
size = bounded(int, 1)
#: A count of at least 0 (``--k``, ``--point``, ``--top``, ``--n-random``).
count = bounded(int, 0)
#: A random seed (an integer >= 0).
seed = bounded(int, 0)
