"""The TypeScript scenario's build (tests/api/test_typescript_client.py, tests/ts): node_modules from
the lock file (`npm ci`, only when the lock changed since the last install), the types generated from
openapi.json, the scenario compiled by `tsc --strict`.

Under `make test` (pytest-xdist) the controller starts it in the background as the run begins
(`start`, from tests/conftest.py), so it runs while the workers collect and run other tests (it took
8-16 s here, most of it waiting on npm and node); the test's fixture then only waits for it
(`wait`). Without xdist, or with the test not selected, the fixture builds in-line (`build`).

Both node_modules and the build's output (the generated types, the compiled scenario) come from the
suite's content-addressed cache (tests/artefacts.py) when it holds them: node_modules is named by the
hash of package.json, the lock file and the node and npm versions (tests/ts/node_modules is then a link
to it; a tests/ts/node_modules of its own, as a developer's `npm ci` made it, is kept and used as
before), the build's output by the hash of that and of every input of the two steps (openapi.json,
tsconfig.json, package.json, every file of src/ but the generated types). Only a build that passed is
kept, so a cached entry is one a run with the same inputs compiled cleanly.

`python -m tests.typescript_build STATE_DIR` builds, writing the steps' output to STATE_DIR/log and
then the exit status to STATE_DIR/rc."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests import artefacts

TS = Path(__file__).resolve().parent / "ts"
ROOT = TS.parents[1]
TEST = ROOT / "tests" / "api" / "test_typescript_client.py"
SCHEMA = TS / "src" / "schema.d.ts"  # generated from openapi.json by the build's first step
STATE = "JDR_TS_BUILD"  # the environment variable naming a background build's state directory


class BuildFailed(Exception):
    """A step failed: its command and output."""


def _run(*args: str, timeout: float = 300, cwd: Path = TS) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise BuildFailed(f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def _tool_versions() -> str:
    """node's and npm's versions (part of what node_modules and the outputs are made by)."""
    return "\n".join(
        subprocess.run([tool, "--version"], capture_output=True, text=True).stdout for tool in ("node", "npm")
    )


def modules_key() -> str:
    """The name of node_modules in the cache: every input of `npm ci`."""
    return artefacts.key(TS / "package.json", TS / "package-lock.json", _tool_versions())


def node_modules() -> Path:
    """tests/ts/node_modules, installed from the lock file: a directory of its own is kept (`npm ci`
    again only when the lock changed since it was installed); else a link to the cache's entry for
    these inputs, installed there first when there is none."""
    here = TS / "node_modules"
    if artefacts.root() is None and here.is_symlink():
        here.unlink()  # the cache is off: installed in place
    if (here.is_dir() and not here.is_symlink()) or artefacts.root() is None:
        lock = (TS / "package-lock.json").read_text()
        stamp = here / ".lock-installed"
        if not stamp.exists() or stamp.read_text() != lock:
            _run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
            stamp.write_text(lock)
        return here

    def install(into: Path) -> None:
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(TS / name, into / name)
        _run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=into)

    target = artefacts.entry("node_modules", modules_key(), install) / "node_modules"
    if not (here.is_symlink() and os.readlink(here) == str(target)):
        link = TS / f".node_modules.{os.getpid()}"
        link.unlink(missing_ok=True)
        link.symlink_to(target, target_is_directory=True)
        link.replace(here)  # in one step: a reader sees the old link or the new one
    return here


def build_key() -> str:
    """The name of the build's output in the cache: node_modules' inputs and every input of the two steps."""
    sources = sorted(p for p in (TS / "src").rglob("*") if p.is_file() and p != SCHEMA)
    inputs = [TS / "tsconfig.json", TS / "package.json", ROOT / "openapi.json"]
    return artefacts.key(modules_key(), *inputs, *(str(p.relative_to(TS)) for p in sources), *sources)


def build() -> Path:
    """The three steps, in tests/ts (the last two skipped when the cache holds their output for
    these inputs); the compiled scenario's path."""
    node_modules()
    scenario = TS / "dist" / "scenario.js"

    def compile_into(into: Path) -> None:
        _run("npm", "run", "--silent", "generate")
        _run("npx", "tsc", "-p", "tsconfig.json")
        shutil.copy2(SCHEMA, into / SCHEMA.name)
        shutil.copytree(TS / "dist", into / "dist")

    if artefacts.root() is None:
        with tempfile.TemporaryDirectory() as scratch:
            compile_into(Path(scratch))
        return scenario
    made = artefacts.entry("typescript-build", build_key(), compile_into)
    marker = TS / "dist" / ".built"  # the entry tests/ts/dist is a copy of
    if not (scenario.exists() and marker.exists() and marker.read_text() == made.name):
        shutil.copy2(made / SCHEMA.name, SCHEMA)
        shutil.rmtree(TS / "dist", ignore_errors=True)
        shutil.copytree(made / "dist", TS / "dist")
        marker.write_text(made.name)
    return scenario


QUIET = {"REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true", "SCARF_ANALYTICS": "false"}


def npx(
    args: list[str], given: dict[str, str], reads: list[Path], ok: tuple[int, ...] = (0,), timeout: float = 600
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`npx ARGS` in tests/ts (node_modules installed first), with the files `given` (name: text) in
    the directory `{in}` of ARGS names, and `{out}` a directory for the files it writes (returned).
    Kept in the cache under the hash of node_modules' inputs, ARGS, the files given and the files it
    `reads` besides (its configuration): the same command on the same inputs answers from the cache.
    Only an exit status in `ok` is kept (a crash or a timeout is not)."""
    if os.environ.get(STATE):
        wait()  # the background build installs node_modules: not a second `npm ci` beside it
    node_modules()

    def run(into: Path) -> subprocess.CompletedProcess[str]:
        (into / "in").mkdir(exist_ok=True)
        (into / "out").mkdir(exist_ok=True)
        for name, text in given.items():
            (into / "in" / name).write_text(text)
        command = ["npx", *(a.replace("{in}", str(into / "in")).replace("{out}", str(into / "out")) for a in args)]
        done = subprocess.run(
            command, cwd=TS, capture_output=True, text=True, timeout=timeout, env={**os.environ, **QUIET}
        )
        if done.returncode not in ok:
            raise BuildFailed(
                f"{' '.join(command)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        for name, text in (("stdout", done.stdout), ("stderr", done.stderr), ("rc", str(done.returncode))):
            (into / name).write_text(text)
        return done

    if artefacts.root() is None:
        scratch = Path(tempfile.mkdtemp(prefix="jdr-npx-"))
        return run(scratch), scratch / "out"
    files = [part for name, text in sorted(given.items()) for part in (name, text)]
    made = artefacts.entry("npx", artefacts.key(modules_key(), "\0".join(args), *files, *reads), run)
    done = subprocess.CompletedProcess(
        ["npx", *args], int((made / "rc").read_text()), (made / "stdout").read_text(), (made / "stderr").read_text()
    )
    return done, made / "out"


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
