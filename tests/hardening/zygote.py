"""The pooled servers' zygote (`Pool` in tests/hardening/conftest.py): a process that imports the
app and uvicorn once, then forks each pooled server from that state, instead of a fresh
`python -m uvicorn app.main:app` that imports them all again (~1.2 s of CPU per process here, and
5-13 s of wall time per start with the 2 cores loaded; a server of two workers spawned three).

A forked server is what `uvicorn app.main:app --host … --port … --workers N --log-level warning`
makes: in its own session (its process group is what a test kills), its output in its log, the
server's environment in `os.environ`, then a new `app.main.app` made from it by `create_app()` (the
module's `app` the zygote imported was made from the zygote's environment, and `get_settings`
cached it: both are made again; nothing else in `app` reads the environment) and `uvicorn.run` with the same options, uvicorn's own supervisor
for N > 1 with its workers forked instead of spawned (the same code then runs in each of them).

Protocol: one JSON request a line on stdin ({"env", "host", "port", "workers", "log"}), one JSON
answer a line on stdout ({"pid"}); the zygote ends at the end of its stdin. A test's own servers
(`own=True`: killed on purpose, crash tests) come from it too: each is a process of its own, in a
process group of its own, killed as one. The real command lines stay tested where they are the point:
`python -m app serve` (tests/api/test_http_conventions.py), `uvicorn.run` of a fifth ruleset's
server (tests/rulesets/test_adding_a_ruleset.py)."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any


def _warm() -> None:
    """Everything a server imports before it answers: the app (as `app.main:app`), uvicorn's
    protocol, loop and lifespan classes, the database drivers."""
    import multiprocessing  # noqa: F401
    import sqlite3  # noqa: F401

    import uvicorn
    import uvicorn.supervisors  # noqa: F401
    from uvicorn.config import Config

    import app.main  # noqa: F401

    Config("app.main:app", log_level="warning").load()
    try:
        import psycopg  # noqa: F401  (PostgreSQL's driver, when a server is on PostgreSQL)
    except ImportError:  # pragma: no cover
        pass
    assert uvicorn  # the names are the point: they are in sys.modules for the forks


def _serve(request: dict[str, Any]) -> None:
    """In the forked child: become `uvicorn app.main:app …` with the request's settings."""
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    log = os.open(request["log"] or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    os.environ.clear()
    os.environ.update(request["env"])
    import multiprocessing

    import uvicorn
    import uvicorn._subprocess

    import app.main
    from app.core import config, db

    # what the zygote's import cached from its own environment: the settings (`get_settings`), and the
    # engines if any (none is made at import; cleared anyway, so no pool crosses the fork)
    for cached in (config.get_settings, db.database):
        cached.cache_clear()
    app.main.app = app.main.create_app()  # from this server's environment, as its import would make it
    uvicorn._subprocess.spawn = multiprocessing.get_context("fork")  # type: ignore[assignment]  # workers: forked
    uvicorn.run(
        "app.main:app",
        host=request["host"],
        port=request["port"],
        workers=request["workers"],
        log_level="warning",
    )


def _reap(signum: int, frame: Any) -> None:
    """The servers that ended, reaped (no zombies) by a wait: their CPU time is then counted in the
    zygote's children's, and so in the test run's (an ignored SIGCHLD reaps them uncounted: the CPU of
    the run's servers was missing from a `time make test`)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def main() -> None:
    _warm()
    signal.signal(signal.SIGCHLD, _reap)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _serve(request)
                code = 0
            except BaseException:  # the child never returns into the zygote's loop
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
