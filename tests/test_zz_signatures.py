"""Runs after everything else (conftest orders it last): no kernel compiled twice.

Every test above called kernels through the public API with all kinds of inputs (Arrow,
pandas, polars, lists, streams); if any boundary forgot to normalize a dtype or the
read-only flag, a kernel has a second signature now.
"""

from tests.test_jit_policy import _dispatchers


def test_each_kernel_has_at_most_one_signature_after_the_suite():
    multi = {name: [str(s) for s in d.signatures] for name, d in _dispatchers()
             if len(d.signatures) > 1}
    assert not multi, f"kernels compiled more than once: {multi}"
