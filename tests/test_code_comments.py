"""Code comments say why, not which issue or review round brought a change (STYLE.md: history
belongs in commits): no "issue 25 item 3", "(issue 21)" or "API.md round 3" under app/."""

from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
HISTORY = re.compile(r"\b[Ii]ssues? \d+|\bAPI\.md round \d|\b[Rr]ound-\d\b|\(item \d+\)")


def history_mentions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix in {".py", ".js", ".css", ".html"} and "vendor" not in path.parts:
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if HISTORY.search(line):
                    found.append(f"{path.relative_to(root.parent)}:{n}: {line.strip()}")
    return found


def test_no_issue_or_round_numbers_in_the_code():
    assert history_mentions(APP) == []


def test_the_check_finds_one(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "m.py").write_text("x = 1  # (issue 25 item 3)\ny = 2  # rules of round 2\n")
    assert history_mentions(tmp_path / "app") == ["app/m.py:1: x = 1  # (issue 25 item 3)"]
