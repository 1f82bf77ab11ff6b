"""Fixtures of the API tests beyond the suite's (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.api.strict_support import TABLES


@pytest.fixture
def written(count_rows):
    """The rows of every table the app writes: the same before and after a refused body."""
    return lambda: {table: count_rows(table) for table in TABLES}
