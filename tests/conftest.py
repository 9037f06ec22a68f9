import os

from hypothesis import HealthCheck, settings

# Kernels JIT-compile on first use; never let compile time count against a deadline.
settings.register_profile(
    "default", deadline=None, max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "ci", deadline=None, max_examples=100, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "thorough", deadline=None, max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(session, config, items):
    """Run the signature census last: after the tests, the benchmarks and the doctests.

    ``tests/test_zz_signatures.py`` counts the specializations every kernel compiled during
    the session; anything collected after it (benchmarks, docstring examples) would escape.
    """
    last = [it for it in items if it.nodeid.startswith("tests/test_zz_signatures.py")]
    if last:
        items[:] = [it for it in items if it not in last] + last
