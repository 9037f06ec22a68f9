"""Runs after everything else (conftest orders it last): no kernel compiled twice.

Every test above called kernels through the public API with all kinds of inputs (Arrow,
pandas, polars, lists, streams); if any boundary forgot to normalize a dtype or the
read-only flag, a kernel has a second signature now.

Run alone (``python -m pytest tests/test_zz_signatures.py``) no other test has called a
kernel, so the census first runs a workload of its own — the same few tables in every input
kind, and ``fastpriv audit`` on the bundled Adult file — and checks that it reached the
kernels of several models: the census is never taken over kernels nothing called.
"""

import contextlib
import io

import pandas as pd
import polars as pl
import pyarrow as pa

from fastpriv import Release, classic
from fastpriv.cli import main
from tests.kernel_census import dispatchers

#: Kernel modules the workload must reach (a census over none of them would prove nothing).
REACHED = {"counting", "classic", "ck_safety", "skyline"}


def _workload() -> None:
    data = {"g": [3, 1, 1, 2, 3, 3], "s": ["x", "y", "x", "z", "z", "z"]}
    sources = [pa.table(data), pd.DataFrame(data), pl.DataFrame(data),
               pa.table({"g": pa.array(data["g"], pa.int32()), "s": pa.array(data["s"])}),
               pa.table({"g": pa.array(data["g"]),
                         "s": pa.array(data["s"]).dictionary_encode()})]
    for src in sources:
        classic.audit(Release.from_table(src, sensitive="s", group="g"), l=2)
    classic.audit(Release.from_groups([["a", "b"], {"a": 3}]), l=2)
    classic.audit(Release.from_groups([[1, 2], [2, 2]]), l=2)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = main(["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex"])
    assert status in (0, 1), status        # a verdict, not bad input or an internal error


def test_each_kernel_has_at_most_one_signature_after_the_suite():
    _workload()
    compiled = {name: [str(s) for s in d.signatures] for name, d in dispatchers()
                if d.signatures}
    reached = {name.split(".")[2] for name in compiled}
    assert REACHED <= reached, f"the workload reached only {sorted(reached)}"
    multi = {name: sigs for name, sigs in compiled.items() if len(sigs) > 1}
    assert not multi, f"kernels compiled more than once: {multi}"
