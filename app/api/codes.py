"""`python -m app.api.codes`: docs/problem-codes.md and README's table of problem codes, written
from the registry (app.kit.errors.CODES); tests/api/test_problem_codes.py keeps both equal to it."""

from __future__ import annotations

import re
from pathlib import Path

import app.main  # noqa: F401  # every module imported: every code registered
from app.api.problems import codes_rows, codes_table

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"(<!-- problem codes -->\n).*?(<!-- /problem codes -->)", re.S)


def readme_with_table(text: str) -> str:
    return BLOCK.sub(lambda m: m[1] + "\n".join(codes_rows()) + "\n" + m[2], text)


if __name__ == "__main__":
    (ROOT / "docs" / "problem-codes.md").write_text(codes_table())
    readme = ROOT / "README.md"
    readme.write_text(readme_with_table(readme.read_text()))
