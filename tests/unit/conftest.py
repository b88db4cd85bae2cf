# Make the checkout importable as ansible_collections.sparkops.inference when pytest runs
# from the repository root (ansible-test units runs from a real collection tree instead).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COLLECTIONS = os.path.join(ROOT, ".collections")

try:
    import ansible_collections.sparkops.inference  # noqa: F401 pylint: disable=unused-import
except ImportError:
    sys.path.insert(0, COLLECTIONS)

import pytest  # noqa: E402 pylint: disable=wrong-import-position

FIXTURES = os.path.join(HERE, "fixtures")


@pytest.fixture
def fixture_text():
    """Text of a captured output under tests/unit/fixtures/ (see its README for provenance)."""
    def read(*parts):
        with open(os.path.join(FIXTURES, *parts)) as f:
            return f.read()
    return read
