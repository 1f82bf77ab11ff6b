"""Idle poll queries with 1,000 idle campaigns followed by streams: polling vs LISTEN/NOTIFY (issue 28 item 4).

    .venv/bin/python bench/bench_idle.py [--campaigns 1000] [--workers 1] [--window 20] [--rounds 2]

PostgreSQL only (database `jdr_bench_idle` on 127.0.0.1:5432, created and dropped here). Through
HTTP it creates `--campaigns` great-cosmos campaigns. Then, for each mode in turn (the order
alternates each round):
- poll:   EVENT_NOTIFY=false: the event hub polls every 0.5 s, the webhook loop every
          WEBHOOK_POLL_SECONDS (1 s) — the behaviour before issue 28;
- notify: EVENT_NOTIFY=true (the default): both are woken by LISTEN/NOTIFY and poll only every
          EVENT_FALLBACK_POLL_SECONDS (5 s);
it starts a server (uvloop + httptools, `--workers`), measures the database's transactions a second
over `--window` seconds with the server idle and no stream, then with one idle SSE stream open on
each campaign (raw sockets held here), and the server's connections to the database (pg_stat_activity)
with the streams open. Every poll is one transaction (a BEGIN, its SELECTs, the end), so the
database's own count (pg_stat_database: xact_commit + xact_rollback; stats are flushed by each
backend within a second while busy but only after up to 10 s while idle: each window starts 12 s
after the last burst, and lasts 20 s or more) is the count of poll round trips;
the statements are ~3 a hub tick (credentials, the events, the tracked campaigns' numbers only when
some are new) and 2 a webhook tick. About 2 minutes per round with the defaults, plus the setup.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
import httpx
import psycopg
from _common import ROOT, machine, migrate, summary, table
from bench_http import pg_database, pg_drop, server
from bench_streams import open_stream

PYTHON = sys.executable
HOST = "127.0.0.1"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
NAME = "jdr_bench_idle"
# an idle backend flushes its statistics after up to 10 s (PGSTAT_IDLE_INTERVAL): the windows start
# later than that after any burst of work (campaigns made, streams opened), or they would count it
SETTLE_SECONDS = 12.0
MODES = {"poll": {"EVENT_NOTIFY": "false"}, "notify": {"EVENT_NOTIFY": "true"}}


def transactions(name: str) -> int:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
    return int(row[0]) if row else 0


def connections(name: str) -> int:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'", (name,)
        ).fetchone()
    return int(row[0]) if row else 0


def rate(name: str, window: float) -> float:
    """The database's transactions a second over `window` seconds (this process makes none of them:
    its own reads go to the `postgres` database)."""
    before, t0 = transactions(name), time.monotonic()
    time.sleep(window)
    return (transactions(name) - before) / (time.monotonic() - t0)


def campaigns(base: str, count: int) -> list[tuple[str, str]]:
    out = []
    with httpx.Client(base_url=base, timeout=30) as http:
        for i in range(count):
            r = http.post("/v1/campaigns", json={"name": f"Idle {i}", "ruleset": "great-cosmos"})
            r.raise_for_status()
            out.append((r.json()["id"], r.json()["gm_token"]))
    return out


async def with_streams(port: int, camps: list[tuple[str, str]], window: float) -> tuple[float, int]:
    writers = []
    try:
        for i in range(0, len(camps), 50):
            writers += await asyncio.wait_for(
                asyncio.gather(*(open_stream(port, cid, tok) for cid, tok in camps[i : i + 50])), 120
            )
        await asyncio.sleep(SETTLE_SECONDS)  # every campaign tracked, the opening's stats flushed
        found = await asyncio.to_thread(rate, NAME, window)
        return found, connections(NAME)
    finally:
        for w in writers:
            w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.campaigns + 512:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.campaigns + 512), hard))
    print(
        f"bench_idle: {machine()}, PostgreSQL, {args.campaigns} campaigns, {args.workers} worker(s), "
        f"{args.window:.0f} s windows, {args.rounds} rounds",
        flush=True,
    )
    url = pg_database(NAME)
    env = {
        "DATABASE_URL": url,
        "ADMIN_TOKEN": "",
        "RATE_LIMIT_PER_MINUTE": "0",
        "CAMPAIGNS_PER_HOUR_PER_ADDRESS": "0",
        "EVENT_STREAMS_PER_PROCESS": str(args.campaigns + 100),
    }
    results: dict[str, dict[str, list[float]]] = {m: {"idle": [], "streams": [], "conns": []} for m in MODES}
    try:
        migrate(env, timeout=None)
        with tempfile.TemporaryDirectory(prefix="jdr-bench-idle-") as tmp:
            camps: list[tuple[str, str]] = []
            for r in range(args.rounds):
                order = list(MODES) if r % 2 == 0 else list(MODES)[::-1]
                for mode in order:
                    log = Path(tmp) / f"{mode}-{r}.log"
                    with server(["app.main:app"], {**env, **MODES[mode]}, "/readyz", log, workers=args.workers) as base:
                        if not camps:
                            t0 = time.monotonic()
                            camps = campaigns(base, args.campaigns)
                            print(f"  {len(camps)} campaigns made in {time.monotonic() - t0:.0f} s", flush=True)
                        time.sleep(SETTLE_SECONDS)
                        idle = rate(NAME, args.window)
                        port = int(base.rsplit(":", 1)[1])
                        streams, conns = asyncio.run(with_streams(port, camps, args.window))
                    results[mode]["idle"].append(idle)
                    results[mode]["streams"].append(streams)
                    results[mode]["conns"].append(conns)
                    print(
                        f"  round {r + 1} {mode:6s}: {idle:6.2f} transactions/s idle, {streams:6.2f} with "
                        f"{len(camps)} idle streams; {conns} connections of the server",
                        flush=True,
                    )
    finally:
        pg_drop(NAME)
    rows = []
    for phase, label in (("idle", "no stream (the webhook loop)"), ("streams", f"{args.campaigns} idle streams")):
        poll, notify = results["poll"][phase], results["notify"][phase]
        rows.append(
            [
                label,
                f"{statistics.median(poll):.2f}",
                f"{statistics.median(notify):.2f}",
                summary([p / max(n, 1e-9) for p, n in zip(poll, notify, strict=True)], "{:.1f}") + "×",
            ]
        )
    print()
    print(table(["server idle, per worker set", "poll: tx/s", "notify: tx/s", "poll ÷ notify"], rows))
    print(
        f"\nconnections of the server with the streams open: poll {max(results['poll']['conns']):.0f}, "
        f"notify {max(results['notify']['conns']):.0f} ({args.workers} worker(s); DB_MAX_CONNECTIONS 10 each)"
    )


if __name__ == "__main__":
    main()
