"""`python -m app serve` exits non-zero with the reason, on the first failure, when the app cannot start —
with one worker as with several (uvicorn's supervisor used to respawn workers dying of an ImportError
forever, never answering and never stopping). Tested on a temporary copy of the app with a broken import."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_FAILURE = 3  # uvicorn's status for a worker that failed to start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(copy: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "PYTHONPATH"}}
    environ.update(PYTHONPATH=str(copy), DATABASE_URL=f"sqlite:///{copy / 'jdr.db'}", **(env or {}))
    command = [sys.executable, "-m", "app", "serve", "--port", str(_free_port()), *args]
    return subprocess.run(command, cwd=copy, env=environ, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    """A copy of the app whose main module imports a module no install provides."""
    copy = tmp_path_factory.mktemp("broken")
    for name in ("app", "alembic"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "alembic.ini", copy / "alembic.ini")
    main = copy / "app" / "main.py"
    source = main.read_text()
    assert "\nimport anyio\n" in source
    main.write_text(source.replace("\nimport anyio\n", "\nimport anyio\nimport jdr_no_such_module\n", 1))
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_worker_that_cannot_import_the_app_stops_the_server_with_the_reason(broken, workers):
    done = _serve(broken, "--workers", workers)
    assert done.returncode == STARTUP_FAILURE, done.stderr[-2000:]
    assert "the app cannot start: ModuleNotFoundError: No module named 'jdr_no_such_module'" in done.stderr
    if workers != "1":
        assert "a worker could not start" in done.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_refused_setting_stops_before_serving_with_its_name(tmp_path, workers):
    copy = tmp_path
    os.symlink(ROOT / "app", copy / "app")
    done = _serve(copy, "--workers", workers, env={"MAX_BODY_BYTES": "lots"})
    assert done.returncode == 2
    assert "a setting is refused: MAX_BODY_BYTES: Input should be a valid integer" in done.stderr
    assert not (copy / "jdr.db").exists()  # refused before migrating anything
