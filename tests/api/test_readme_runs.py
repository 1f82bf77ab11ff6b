"""The README and docs/*.md run as written: every `sh runnable` block against one real server
(`python -m uvicorn app.main:app`, the pool's, on the worker's database), each `# →` checked by
tests/docs_examples.py, the harness CI also runs against a newcomer's `make run`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "docs_examples.py"


def documents() -> list[str]:
    """README.md and every page under docs/ (docs/rules/ included, should a rule page hold examples)."""
    return ["README.md", *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md"))]


def test_the_readme_and_the_docs_run_as_written(live):
    server = live.start()
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--api", server.url, *documents()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {line.split(":")[0]: line for line in done.stdout.splitlines() if ": " in line and "runnable" in line}
    for page in (
        "README.md",
        "docs/combat.md",
        "docs/clients.md",
        "docs/security.md",
        "docs/operations.md",
        "docs/verify.md",
    ):
        assert page in ran and " 0 runnable" not in ran[page], done.stdout  # each page has blocks that ran
