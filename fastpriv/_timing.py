"""Wall-clock timing of a block of code (the CLI's and the report's phase timings)."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Timer"]


class Timer:
    """Context manager measuring wall time in seconds (``.seconds``, set on exit)."""

    def __enter__(self) -> "Timer":
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self._t
