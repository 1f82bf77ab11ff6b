"""Where the CPU of POST /v1/characters/{id}/tests goes (issue #7).

    .venv/bin/python bench/profile_hot_path.py [--requests 400] [--top 25] [--pyinstrument] [--postgres]

In-process: a real SQLite file (or, with --postgres, a fresh database
jdr_bench_profile on 127.0.0.1:5432) migrated by Alembic, the real app
(`app.main:app`, no dependency override) driven through its ASGI interface by
`httpx.ASGITransport`, one request at a time. FastAPI runs sync handlers and
dependencies in a worker thread, which cProfile would not see, so this script
runs them inline (it replaces `anyio.to_thread.run_sync` in its own process
only). Prints the self time grouped by package, the top functions by self time
and the app's functions by cumulative time. Under 60 s.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import _common
from _common import ROOT, machine, table

GC_SHEET = {
    "race": "humain",
    "level": 1,
    "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60},
    "intuition": 3,
    "karma": 0,
    "hp": 100,
    "hp_max": 100,
    "mp": 50,
    "mp_max": 50,
    "default_posture": "defensive",
}


def inline_threadpool() -> None:
    """Run FastAPI's sync handlers and dependencies in the profiled thread."""
    import anyio.to_thread

    async def run_sync(func, *args, abandon_on_cancel=False, cancellable=None, limiter=None):
        return func(*args)

    anyio.to_thread.run_sync = run_sync


def package_of(filename: str, funcname: str) -> str:
    """A readable owner for a function: app layer, third-party package, stdlib module or C builtin."""
    if filename == "~":
        if "sqlite3" in funcname:
            return "sqlite3 (C: the database itself)"
        return "builtins (C)"
    path = filename.replace("\\", "/")
    if f"{ROOT}/app/" in path:
        rel = path.split(f"{ROOT}/app/", 1)[1]
        return "app/" + (rel.split("/")[0] if "/" in rel else rel)
    m = re.search(r"site-packages/([^/]+)", path)
    if m:
        name = m.group(1).removesuffix(".py")
        return {"pydantic_core": "pydantic", "_pytest": "pytest"}.get(name, name)
    m = re.search(r"/lib/python3\.\d+/([^/]+)", path)
    if m:
        return "stdlib: " + m.group(1).removesuffix(".py")
    return path


async def drive(n_warm: int, n: int, profiler: cProfile.Profile | None, pyi) -> tuple[float, int]:
    import httpx

    from app.main import app

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as c:
        r = await c.post("/v1/campaigns", json={"name": "Profile", "ruleset": "great-cosmos"})
        camp = r.json()
        auth = {"Authorization": f"Bearer {camp['gm_token']}"}
        r = await c.post(
            f"/v1/campaigns/{camp['id']}/characters",
            headers=auth,
            json={"name": "Hero", "kind": "pc", "sheet": GC_SHEET},
        )
        url = f"/v1/characters/{r.json()['id']}/tests"
        for _ in range(n_warm):
            assert (await c.post(url, headers=auth, json={"stat": "force"})).status_code == 201
        if profiler:
            profiler.enable()
        if pyi:
            pyi.start()
        t0 = time.perf_counter()
        for _ in range(n):
            r = await c.post(url, headers=auth, json={"stat": "force"})
            assert r.status_code == 201, r.text
        elapsed = time.perf_counter() - t0
        if profiler:
            profiler.disable()
        if pyi:
            pyi.stop()
        return elapsed, n


def report(profiler: cProfile.Profile, n: int, top: int) -> None:
    stats = pstats.Stats(profiler)
    by_pkg: dict[str, float] = defaultdict(float)
    rows = []
    total = 0.0
    for (filename, line, func), (cc, nc, tt, ct, _callers) in stats.stats.items():
        pkg = package_of(filename, func)
        by_pkg[pkg] += tt
        total += tt
        rows.append((tt, ct, nc, pkg, f"{Path(filename).name}:{line}({func})" if filename != "~" else func))
    server = max(
        (
            ct
            for (fn, _l, func), (_c, _n, _t, ct, _x) in stats.stats.items()
            if fn.endswith("fastapi/applications.py") and func == "__call__"
        ),
        default=0.0,
    )
    print(
        f"Profiled: {total * 1e3 / n:.2f} ms/request in all, of which the server (FastAPI app, cumulative) "
        f"{server * 1e3 / n:.2f} ms; the rest is the httpx test client (its per-request `importlib`/"
        f"`urllib` look-ups included) and the event loop.\n"
    )
    print("Self time grouped by owner:\n")
    print(
        table(
            ["owner", "ms/request", "share"],
            [
                [k, f"{v * 1e3 / n:.3f}", f"{100 * v / total:.1f}%"]
                for k, v in sorted(by_pkg.items(), key=lambda kv: -kv[1])[:18]
            ],
        )
    )
    print(f"\nTop {top} functions by self time:\n")
    rows.sort(key=lambda r: -r[0])
    print(
        table(
            ["function", "owner", "calls/request", "self ms/request", "cum ms/request"],
            [
                [f"`{name}`", pkg, f"{nc / n:.1f}", f"{tt * 1e3 / n:.3f}", f"{ct * 1e3 / n:.3f}"]
                for tt, ct, nc, pkg, name in rows[:top]
            ],
        )
    )
    print("\nThe app's own functions by cumulative time (what each step costs, callees included):\n")
    app_rows = sorted((r for r in rows if r[3].startswith("app/")), key=lambda r: -r[1])[:top]
    print(
        table(
            ["function", "owner", "calls/request", "cum ms/request"],
            [[f"`{name}`", pkg, f"{nc / n:.1f}", f"{ct * 1e3 / n:.3f}"] for tt, ct, nc, pkg, name in app_rows],
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--pyinstrument", action="store_true", help="also print a pyinstrument call tree")
    ap.add_argument("--postgres", action="store_true", help="profile on PostgreSQL instead of a SQLite file")
    args = ap.parse_args()
    if args.postgres:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute('DROP DATABASE IF EXISTS "jdr_bench_profile" WITH (FORCE)')
            conn.execute('CREATE DATABASE "jdr_bench_profile"')
        url = "postgresql://postgres@127.0.0.1:5432/jdr_bench_profile"
    else:
        url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='jdr-profile-')) / 'profile.db'}"
    os.environ.update({"DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"})
    from app.core.migrations import upgrade_head

    upgrade_head(url)
    inline_threadpool()
    print(
        f'profile_hot_path — {machine()} — POST /v1/characters/{{id}}/tests {{"stat":"force"}}, '
        f"GM token, secure RNG, {'PostgreSQL' if args.postgres else 'SQLite WAL file'}, {args.requests} sequential requests in-process\n"
    )
    plain, _ = asyncio.run(drive(args.warmup, args.requests, None, None))
    print(f"Unprofiled: {plain * 1e3 / args.requests:.2f} ms/request (includes the httpx test client).\n")
    profiler = cProfile.Profile()
    pyi = None
    if args.pyinstrument:
        from pyinstrument import Profiler

        pyi = Profiler(interval=0.0005, async_mode="disabled")
    asyncio.run(drive(10, args.requests, profiler, pyi))
    report(profiler, args.requests, args.top)
    if pyi:
        print("\npyinstrument call tree:\n")
        print(pyi.output_text(unicode=True, color=False, show_all=False))


if __name__ == "__main__":
    sys.exit(main())
