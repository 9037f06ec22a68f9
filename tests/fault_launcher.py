"""Run the ``fastpriv`` command with fault injection — for the test suite only.

``FASTPRIV_IO_FAULT=<step>:<n>[:<signal>] python -m tests.fault_launcher COMMAND …`` runs
``fastpriv COMMAND …``; the n-th time a commit reaches ``step`` (``stage``,
``commit-start``, ``commit-placed``) the process sends itself ``signal`` (default SIGKILL).

An installed fastpriv reads no such variable (``fastpriv._io._fault`` does nothing without
a hook); this launcher, which is not part of the package, installs the hook
(:func:`fastpriv._io.install_fault_hook`) and then runs :func:`fastpriv.cli.console`.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

STEPS = ("stage", "commit-start", "commit-placed")


def fault_hook(spec: str) -> Callable[[str], None]:
    """Return the hook that ``spec`` (``<step>:<n>[:<signal>]``) describes."""
    step, _, rest = spec.partition(":")
    count, _, sig = rest.partition(":")
    if step not in STEPS or not (count or "1").isdigit() or int(count or 1) < 1 \
            or not isinstance(getattr(signal, sig or "SIGKILL", None), signal.Signals):
        raise SystemExit(f"fault_launcher: FASTPRIV_IO_FAULT={spec!r} is not "
                         f"<step>:<n>[:<signal>] with step one of {', '.join(STEPS)}")
    signum = getattr(signal, sig or "SIGKILL")
    left = [int(count or 1)]

    def hook(reached: str) -> None:
        if reached != step:
            return
        left[0] -= 1
        if left[0] == 0:
            os.kill(os.getpid(), signum)

    return hook


def main() -> None:
    """Install the hook ``FASTPRIV_IO_FAULT`` describes (if set), then run ``fastpriv``."""
    from fastpriv._io import install_fault_hook
    from fastpriv.cli import console

    spec = os.environ.get("FASTPRIV_IO_FAULT", "")
    if spec:
        install_fault_hook(fault_hook(spec))
    sys.argv[0] = "fastpriv"
    console()


if __name__ == "__main__":
    main()
