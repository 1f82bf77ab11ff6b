"""`python -m app serve` applies the migrations then serves; `python -m app migrate` only migrates."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn
from pydantic import ValidationError
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from app.api.request_id import LOG_CONFIG
from app.core.config import get_settings
from app.core.db import normalize_database_url
from app.core.migrations import upgrade_head


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app", description="jdr-rules-api")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="apply migrations, then serve over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    sub.add_parser("migrate", help="apply migrations (alembic upgrade head) and exit")
    args = parser.parse_args(argv)

    try:  # a setting the service cannot use: one line saying why, before anything runs
        normalize_database_url(get_settings().database_url)
    except ValidationError as exc:
        reasons = "; ".join(f"{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        parser.exit(2, f"python -m app: a setting is refused: {reasons}\n")
    except ValueError as exc:
        parser.exit(2, f"python -m app: {exc}\n")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    upgrade_head()
    logging.getLogger("app").info("database migrated: %s", get_settings().database_url.split("@")[-1])
    if args.command == "serve":
        sys.exit(run_server(args.host, args.port, args.workers))


def run_server(host: str, port: int, workers: int) -> int:
    """Serves until stopped; the exit status is non-zero, on the first failure, when a worker cannot start
    (a supervisor that respawned failing workers forever would never answer and never say why)."""
    config = uvicorn.Config(
        "app.serving:load",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=True,
        log_config=LOG_CONFIG,
    )
    if workers <= 1:
        server = uvicorn.Server(config)
        server.run()
        return 0 if server.started else STARTUP_FAILURE
    # uvicorn.run's own multi-worker path, keeping the supervisor to read its workers' exit statuses
    supervisor = Multiprocess(config, sockets=[config.bind_socket()])
    supervisor.run()
    failed = [p.exitcode for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        logging.getLogger("app").error("a worker could not start: the server stopped (see the reason above)")
        return STARTUP_FAILURE
    return 0


if __name__ == "__main__":
    main()
