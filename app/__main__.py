"""`python -m app serve` applies the migrations then serves; `python -m app migrate` only migrates."""

from __future__ import annotations

import argparse
import logging

import uvicorn

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

    try:  # a DATABASE_URL the service cannot use: one line saying why, before anything runs
        normalize_database_url(get_settings().database_url)
    except ValueError as exc:
        parser.exit(2, f"python -m app: {exc}\n")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    upgrade_head()
    logging.getLogger("app").info("database migrated: %s", get_settings().database_url.split("@")[-1])
    if args.command == "serve":
        uvicorn.run(
            "app.main:app",
            host=args.host,
            port=args.port,
            workers=args.workers,
            proxy_headers=True,
            log_config=LOG_CONFIG,
        )


if __name__ == "__main__":
    main()
