"""The TypeScript scenario's build (tests/api/test_typescript_client.py, tests/ts): node_modules from
the lock file (`npm ci`, only when the lock changed since the last install), the types generated from
openapi.json, the scenario compiled by `tsc --strict`.

Under `make test` (pytest-xdist) the controller starts it in the background as the run begins
(`start`, from tests/conftest.py), so it runs while the workers collect and run other tests (it took
8-16 s here, most of it waiting on npm and node); the test's fixture then only waits for it
(`wait`). Without xdist, or with the test not selected, the fixture builds in-line (`build`).

`python -m tests.typescript_build STATE_DIR` builds, writing the steps' output to STATE_DIR/log and
then the exit status to STATE_DIR/rc."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TS = Path(__file__).resolve().parent / "ts"
ROOT = TS.parents[1]
TEST = ROOT / "tests" / "api" / "test_typescript_client.py"
STATE = "JDR_TS_BUILD"  # the environment variable naming a background build's state directory


class BuildFailed(Exception):
    """A step failed: its command and output."""


def _run(*args: str, timeout: float = 300) -> None:
    done = subprocess.run(args, cwd=TS, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise BuildFailed(f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def build() -> Path:
    """The three steps, in tests/ts; the compiled scenario's path."""
    lock = (TS / "package-lock.json").read_text()
    stamp = TS / "node_modules" / ".lock-installed"
    if not stamp.exists() or stamp.read_text() != lock:
        _run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
        stamp.write_text(lock)
    _run("npm", "run", "--silent", "generate")
    _run("npx", "tsc", "-p", "tsconfig.json")
    return TS / "dist" / "scenario.js"


def wanted(args: list[str], invocation_dir: Path) -> bool:
    """The run may select the TypeScript test (one of its path arguments holds it), and node and npm exist."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return False
    for arg in args:
        path = (invocation_dir / arg.split("::")[0]).resolve()
        if TEST == path or path in TEST.parents:
            return True
    return False


def start(state: Path) -> subprocess.Popen:
    """The build in the background, in a process group of its own (`stop`)."""
    os.environ[STATE] = str(state)  # inherited by the xdist workers, started after this
    return subprocess.Popen(
        [sys.executable, "-m", "tests.typescript_build", str(state)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    """At the end of the run: a build still going (its test was not run) is ended."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, 9)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


def wait(timeout: float = 300) -> tuple[Path, str]:
    """The compiled scenario and what failed ("" when nothing did): the background build's, once it
    ended, else a build in-line."""
    scenario = TS / "dist" / "scenario.js"
    state = os.environ.get(STATE)
    if not state:
        try:
            return build(), ""
        except BuildFailed as failed:
            return scenario, str(failed)
    rc = Path(state) / "rc"
    deadline = time.monotonic() + timeout
    while not rc.exists():
        if time.monotonic() > deadline:
            return scenario, f"the background TypeScript build did not end within {timeout} s"
        time.sleep(0.1)
    if rc.read_text().strip() != "0":
        return scenario, (Path(state) / "log").read_text(errors="replace")
    return scenario, ""


def main(state: Path) -> int:
    try:
        build()
        code, log = 0, ""
    except Exception as exc:  # noqa: BLE001  (its text is the test's failure message)
        code, log = 1, f"{type(exc).__name__}: {exc}"
    (state / "log").write_text(log)
    (state / "rc.tmp").write_text(str(code))
    (state / "rc.tmp").rename(state / "rc")  # whole when it appears
    return code


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
