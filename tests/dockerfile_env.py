"""Builds the environment the Dockerfile builds, without a Docker engine, and serves from it.

The Dockerfile is read, not paraphrased: its WORKDIR, ENV, COPY and RUN steps run in order in a
temporary root with a fresh venv standing for the image's Python (its `pip` and `python` first on
PATH), then its CMD serves and its HEALTHCHECK must pass. What cannot run outside an image is skipped
by name and said: creating the system user (USER), the volume (mapped to a folder of the root).
Then every module of the installed app is imported there (tests/import_all.py): the image's install
steps must bring everything the app imports, from pyproject alone.

    python3 tests/dockerfile_env.py [--keep]

Standard library only (.ci/run runs it with the machine's python3). Exit 0 when the image's
environment serves /readyz and passes its HEALTHCHECK; 1 otherwise, saying which step failed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY_WITHIN = 60.0
SKIPPED_RUN = re.compile(r"\buseradd\b")  # a system user: the image's, not this machine's


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        word, _, rest = whole.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def env_pairs(args: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in shlex.split(args))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def step(message: str) -> None:
    print(f"dockerfile_env: {message}", flush=True)


def main() -> int:
    keep = "--keep" in sys.argv
    root = Path(tempfile.mkdtemp(prefix="jdr-image-"))
    venv = root / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    workdir = root
    volumes: dict[str, Path] = {}
    port = free_port()
    cmd: list[str] | None = None
    healthcheck: str | None = None
    server: subprocess.Popen[bytes] | None = None
    try:
        for word, args in instructions((ROOT / "Dockerfile").read_text()):
            if word == "FROM":
                wanted = re.search(r"python:(\d+\.\d+)", args)
                have = f"{sys.version_info.major}.{sys.version_info.minor}"
                step(f"FROM {args}: standing in with Python {have}")
                if wanted and wanted.group(1) != have:
                    step(f"warning: the image's Python is {wanted.group(1)}, this machine's {have}")
            elif word == "ENV":
                env.update(env_pairs(args))
            elif word == "WORKDIR":
                workdir = root / args.lstrip("/")
                workdir.mkdir(parents=True, exist_ok=True)
            elif word == "COPY":
                *sources, target = shlex.split(args)
                dest = workdir / target if not target.startswith("/") else root / target.lstrip("/")
                for source in sources:
                    origin = ROOT / source
                    if origin.is_dir():
                        into = dest if len(sources) == 1 and not target.endswith("/") else dest / origin.name
                        shutil.copytree(origin, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
                    else:
                        dest.mkdir(parents=True, exist_ok=True)
                        shutil.copy(origin, dest / origin.name)
            elif word == "RUN":
                if SKIPPED_RUN.search(args):
                    step(f"skipped (the image's system user): RUN {args}")
                    continue
                step(f"RUN {args}")
                subprocess.run(["bash", "-euo", "pipefail", "-c", args], cwd=workdir, env=env, check=True)
            elif word == "VOLUME":
                for path in json.loads(args):
                    volumes[path] = root / "volume" / path.strip("/")
                    volumes[path].mkdir(parents=True, exist_ok=True)
            elif word == "HEALTHCHECK":
                healthcheck = args.split(" CMD ", 1)[1]
            elif word == "CMD":
                cmd = json.loads(args)
            elif word in {"USER", "EXPOSE", "LABEL", "ARG"}:
                step(f"not applicable here: {word} {args}")
            else:
                raise SystemExit(f"dockerfile_env: an instruction this check does not know: {word}")
        if cmd is None or healthcheck is None:
            raise SystemExit("dockerfile_env: the Dockerfile has no CMD or no HEALTHCHECK")
        for path, folder in volumes.items():  # the volume's paths in the settings point at its folder
            env = {k: v.replace(path, str(folder)) for k, v in env.items()}
        cmd = [part.replace("8000", str(port)) for part in cmd]
        step(f"CMD {shlex.join(cmd)}")
        server = subprocess.Popen(cmd, cwd=workdir, env=env, start_new_session=True)
        deadline = time.monotonic() + READY_WITHIN
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200 and json.load(r) == {"status": "ready"}:
                        break
            except OSError:
                pass
            if server.poll() is not None:
                step(f"the server exited with {server.returncode} before answering /readyz")
                return 1
            if time.monotonic() > deadline:
                step(f"/readyz did not answer within {READY_WITHIN:g} s")
                return 1
            time.sleep(0.5)
        step("/readyz answered {'status': 'ready'}")
        check = subprocess.run(["bash", "-c", healthcheck.replace("8000", str(port))], cwd=workdir, env=env, timeout=30)
        if check.returncode != 0:
            step(f"HEALTHCHECK failed ({check.returncode})")
            return 1
        step("HEALTHCHECK passed")
        imported = subprocess.run(["python", str(ROOT / "tests" / "import_all.py")], cwd=root, env=env)
        return 0 if imported.returncode == 0 else 1
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        if keep:
            step(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
