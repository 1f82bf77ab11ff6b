"""What one request costs the server itself, in-process, per route and per middleware (issue 16).

    .venv/bin/python bench/asgi_cost.py [--rounds 9] [--requests 200] [--postgres] [--threadpool]

No HTTP client and no socket: the ASGI app (`create_app()`) is called directly with a
prepared scope, so the figures are the server's own work (routing, middleware,
dependencies, the handler, the database, the JSON). Variants of the same app, built
in the same process on the same database, each timed over batches of `--requests`
sequential requests, interleaved (the order rotates each round); reported: the median
and min–max over rounds of each variant's cost ÷ the full app's, and the absolute
µs/request of the full app (indicative only). Variants: the full app; without each
middleware (X-Request-Id's two, admission, body limit, CORS when configured); routes:
POST …/tests, GET …/rolls?limit=50 and GET /healthz. FastAPI's thread hop runs inline
unless --threadpool. About 1 minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository root on sys.path)
import profile_hot_path as hot
from _common import machine, summary, table


def build(drop: set[str]):
    """The app with the middlewares whose class names are in `drop` removed."""
    from app.main import create_app

    app = create_app()
    app.user_middleware = [m for m in app.user_middleware if m.cls.__name__ not in drop]
    app.middleware_stack = None
    return app


async def call(app, method: str, path: str, query: str, headers: list[tuple[bytes, bytes]], body: bytes) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent = False
    status = 0

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)

    async def send(message):
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def setup(app) -> dict:
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cost") as c:
        camp = (await c.post("/v1/campaigns", json={"name": "Cost", "ruleset": "great-cosmos"})).json()
        auth = {"Authorization": f"Bearer {camp['gm_token']}"}
        r = await c.post(
            f"/v1/campaigns/{camp['id']}/characters",
            headers=auth,
            json={"name": "Hero", "kind": "pc", "sheet": hot.GC_SHEET},
        )
        hero = r.json()["id"]
        for _ in range(60):
            assert (
                await c.post(f"/v1/characters/{hero}/tests", headers=auth, json={"stat": "force"})
            ).status_code == 201
        return {"campaign": camp["id"], "token": camp["gm_token"], "hero": hero}


def routes(ids: dict) -> dict[str, tuple]:
    auth = (b"authorization", f"Bearer {ids['token']}".encode())
    body = json.dumps({"stat": "force"}).encode()
    return {
        "POST tests": (
            "POST",
            f"/v1/characters/{ids['hero']}/tests",
            "",
            [
                (b"host", b"cost"),
                auth,
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            body,
            201,
        ),
        "GET rolls": (
            "GET",
            f"/v1/campaigns/{ids['campaign']}/rolls",
            "limit=50",
            [(b"host", b"cost"), auth],
            b"",
            200,
        ),
        "GET healthz": ("GET", "/healthz", "", [(b"host", b"cost")], b"", 200),
    }


CLOCK = time.perf_counter


async def batch(app, route: tuple, n: int) -> float:
    method, path, query, headers, body, expected = route
    t0 = CLOCK()
    for _ in range(n):
        status = await call(app, method, path, query, headers, body)
        assert status == expected, (path, status)
    return (CLOCK() - t0) / n * 1e6


async def main_async(args) -> None:
    base = build(set())
    ids = await setup(base)
    present = [m.cls.__name__ for m in base.user_middleware]
    variants = {"full": base}
    if not args.no_variants:
        variants.update({f"without {name}": build({name}) for name in present})
        variants["no middleware"] = build(set(present))
    print(f"middlewares, outermost first: {', '.join(present)}\n")
    rows = []
    for route_name, route in routes(ids).items():
        if args.routes and not any(word.lower() in route_name.lower() for word in args.routes.split(",")):
            continue
        for app in variants.values():  # warm-up
            await batch(app, route, 20)
        names = list(variants)
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                times[name].append(await batch(variants[name], route, args.requests))
        full = times["full"]
        for name in names:
            ratio = [a / b for a, b in zip(times[name], full)]
            rows.append(
                [
                    route_name,
                    name,
                    f"{statistics.median(times[name]):.0f}",
                    f"{min(times[name]):.0f}",
                    "1" if name == "full" else summary(ratio, "{:.3f}"),
                ]
            )
        print(f"  {route_name}: full {statistics.median(full):.0f} µs/request", flush=True)
    print()
    print(table(["route", "variant", "µs/request (median)", "(min)", "÷ full app (median, min–max)"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--postgres", action="store_true", help="a fresh database jdr_bench_cost on 127.0.0.1:5432")
    ap.add_argument("--threadpool", action="store_true", help="keep FastAPI's real thread hop")
    ap.add_argument(
        "--routes", default="", help="comma-separated words: only the routes naming one (tests,rolls,healthz)"
    )
    ap.add_argument("--no-variants", action="store_true", help="the full app only (no middleware variants)")
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="time the process's CPU (less sensitive to a loaded "
        "machine; excludes the database server's time on PostgreSQL) instead of the wall clock",
    )
    ap.add_argument("--cors", action="store_true", help="configure CORS_ORIGINS (adds the CORS middleware)")
    args = ap.parse_args()
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time
    if args.postgres:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute('DROP DATABASE IF EXISTS "jdr_bench_cost" WITH (FORCE)')
            conn.execute('CREATE DATABASE "jdr_bench_cost"')
        url = "postgresql://postgres@127.0.0.1:5432/jdr_bench_cost"
    else:
        url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='jdr-cost-')) / 'cost.db'}"
    os.environ.update(
        {
            "DATABASE_URL": url,
            "ADMIN_TOKEN": "",
            "RATE_LIMIT_PER_MINUTE": "0",
            "CORS_ORIGINS": '["http://localhost:3000"]' if args.cors else "[]",
        }
    )
    from app.core.migrations import upgrade_head

    upgrade_head(url)
    if not args.threadpool:
        hot.inline_threadpool()
    print(
        f"asgi_cost — {machine()} — {'PostgreSQL' if args.postgres else 'SQLite WAL file'}, "
        f"{args.rounds} interleaved rounds of {args.requests} requests per variant, "
        f"{'real threadpool' if args.threadpool else 'inline thread hop'}, {'CPU' if args.cpu else 'wall'} time\n"
    )
    try:
        asyncio.run(asyncio.wait_for(main_async(args), 900))
    finally:
        if args.postgres:
            import psycopg

            from app.core.db import get_engine

            get_engine().dispose()
            with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
                conn.execute('DROP DATABASE IF EXISTS "jdr_bench_cost" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
