import pytest

from benchmarks._common import is_full


@pytest.fixture(scope="session")
def full(request) -> bool:
    """True when running the full-size benchmarks (see benchmarks/_common.py)."""
    return is_full(request.config)
