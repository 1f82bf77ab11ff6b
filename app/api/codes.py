"""`python -m app.api.codes`: docs/problem-codes.md, the table of problem codes, written from the
registry (app.kit.errors.CODES); tests/api/test_problem_codes.py keeps it equal to it."""

from __future__ import annotations

from pathlib import Path

import app.main  # noqa: F401  # every module imported: every code registered
from app.api.problems import codes_table

ROOT = Path(__file__).resolve().parents[2]


if __name__ == "__main__":
    (ROOT / "docs" / "problem-codes.md").write_text(codes_table())
