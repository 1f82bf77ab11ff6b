"""Delivery latency of a healthy webhook beside N hostile ones (receivers that never answer).

    .venv/bin/python bench/bench_webhook_fairness.py [--hostile 0,10,40] [--per-campaign 10]
        [--events 5] [--gap 1] [--postgres | --database-url URL] [--against COMMIT] [--cap 90]

For each N of `--hostile`: a server (uvicorn, the production stack, one worker) on a fresh SQLite
file (`--postgres`: a fresh PostgreSQL database at 127.0.0.1, dropped after; `--database-url`: that
one, for one N), migrated first, with the production webhook settings (8 slots, a 5 s timeout,
backoff from 2 s, 8 attempts; WEBHOOK_ALLOW_PRIVATE for loopback). N hostile webhooks,
`--per-campaign` a campaign (10 by default, the most a campaign may have: 400 is 40 campaigns, more
than the 32 the delivery loop reads a tick), all to one black hole (a listening socket nobody
reads: every attempt lasts the whole 5 s), each of their campaigns given `--noise` events at
once; then a victim campaign with one webhook to a healthy receiver posts `--events` events,
`--gap` s apart, and the time from each POST's answer to the receiver's having it is measured
(capped at `--cap` s: a run that reaches it stops there). `--against COMMIT` runs the same on that
commit's tree too (git archive, its own database), interleaved, for a before/after table.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
import httpx
from _common import ROOT, machine, migrate, table
from bench_http import extract, pg_database, pg_drop, server

from tests.webhook_receiver import BlackHole, Receiver

SETTINGS = {
    "WEBHOOK_ALLOW_PRIVATE": "true",
    "RATE_LIMIT_PER_MINUTE": "0",
    "ADMIN_TOKEN": "",
    "WEBHOOK_TIMEOUT_SECONDS": "5",
    "WEBHOOK_CONCURRENCY": "8",
    "WEBHOOK_BACKOFF_SECONDS": "2",
    "WEBHOOK_MAX_ATTEMPTS": "8",
    "WEBHOOK_POLL_SECONDS": "1",
}


def campaign(http: httpx.Client, name: str) -> tuple[str, dict[str, str]]:
    r = http.post("/v1/campaigns", json={"name": name, "ruleset": "great-cosmos"})
    r.raise_for_status()
    return r.json()["id"], {"Authorization": f"Bearer {r.json()['gm_token']}"}


def event(http: httpx.Client, cid: str, gm: dict[str, str], name: str) -> None:
    http.post(f"/v1/campaigns/{cid}/players", json={"name": name}, headers=gm).raise_for_status()


def run(tree: Path, database_url: str, hostile: int, args: argparse.Namespace, log: Path) -> dict[str, object]:
    """One server, `hostile` webhooks to the black hole, the victim's latencies (s) and the hostile attempts."""
    env = {**SETTINGS, "DATABASE_URL": database_url}
    migrate(env, tree)
    hole, healthy = BlackHole().start(), Receiver().start()
    latencies: list[float] = []
    try:
        with (
            server(["app.main:app"], env, "/readyz", log, cwd=tree) as base,
            httpx.Client(base_url=base, timeout=30) as http,
        ):
            hooks: list[tuple[str, dict[str, str], str]] = []
            each = args.per_campaign
            for n in range(math.ceil(hostile / each)):
                cid, gm = campaign(http, f"Hostile {n}")
                for _ in range(min(each, hostile - n * each)):
                    r = http.post(f"/v1/campaigns/{cid}/webhooks", json={"url": hole.url}, headers=gm)
                    r.raise_for_status()
                    hooks.append((cid, gm, r.json()["id"]))
                for k in range(args.noise):
                    event(http, cid, gm, f"Noise {k}")
            vid, vgm = campaign(http, "Victim")
            http.post(f"/v1/campaigns/{vid}/webhooks", json={"url": healthy.url}, headers=vgm).raise_for_status()
            time.sleep(1.0)  # the hostile attempts on the wire
            for n in range(args.events):
                started = time.monotonic()
                event(http, vid, vgm, f"Player {n}")
                deadline = started + args.cap
                while len(healthy.acknowledged()) <= n and time.monotonic() < deadline:
                    time.sleep(0.01)
                if len(healthy.acknowledged()) <= n:
                    latencies.append(math.inf)
                    break
                latencies.append(time.monotonic() - started)
                time.sleep(args.gap)
            attempts = 0
            for cid, gm, hook_id in hooks:
                r = http.get(f"/v1/campaigns/{cid}/webhooks/{hook_id}/deliveries", params={"limit": 500}, headers=gm)
                attempts += len(r.json()["items"]) if r.status_code == 200 else 0
    finally:
        hole.stop()
        healthy.stop()
    return {"latencies": latencies, "attempts": attempts}


def seconds(values: list[float], cap: float) -> str:
    if not values:
        return "-"
    shown = [f"> {cap:.0f}" if math.isinf(v) else f"{v:.2f}" for v in (statistics.median(values), max(values))]
    return f"{shown[0]} / {shown[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hostile", default="0,10,40", help="hostile webhook counts, comma-separated")
    parser.add_argument("--per-campaign", type=int, default=10, help="hostile webhooks a campaign (1-10)")
    parser.add_argument("--events", type=int, default=5, help="the victim's events per run")
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between the victim's events")
    parser.add_argument("--noise", type=int, default=5, help="events of each hostile campaign")
    parser.add_argument("--cap", type=float, default=90.0, help="seconds an event is waited for")
    parser.add_argument("--database-url", default=None, help="instead of a fresh SQLite file (this tree, one N)")
    parser.add_argument("--postgres", action="store_true", help="a fresh PostgreSQL database per run")
    parser.add_argument("--against", default=None, help="a commit to compare (its tree, a SQLite file per run)")
    args = parser.parse_args()
    counts = [int(n) for n in args.hostile.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-webhooks-") as tmp:
        trees = {"this tree": ROOT}
        if args.against:
            old = Path(tmp, "against")
            trees[f"{extract(args.against, old)} ({args.against})"] = old
        rows = []
        for hostile in counts:
            for label, tree in trees.items():
                pg = f"jdr_bench_webhooks_{len(rows)}" if args.postgres else None
                url = args.database_url if args.database_url and tree == ROOT else None
                url = url or (pg_database(pg) if pg else f"sqlite:///{tmp}/{len(rows)}.db")
                try:
                    result = run(tree, url, hostile, args, Path(tmp, f"server-{len(rows)}.log"))
                finally:
                    if pg:
                        pg_drop(pg)
                latencies = result["latencies"]
                assert isinstance(latencies, list)
                print(f"{label}, {hostile} hostile: {[round(v, 2) for v in latencies]}", file=sys.stderr)
                rows.append(
                    [
                        label,
                        f"{hostile} ({math.ceil(hostile / args.per_campaign)} campaigns)",
                        f"{len([v for v in latencies if not math.isinf(v)])}/{args.events}",
                        seconds(latencies, args.cap),
                        str(result["attempts"]),
                    ]
                )
    postgres = args.postgres or (args.database_url or "").startswith("postgres")
    database = "PostgreSQL" if postgres else "SQLite"
    print(f"\n{machine()}; {database}; victim events {args.events}, {args.gap} s apart; noise {args.noise}/campaign\n")
    print(
        table(
            ["code", "hostile webhooks", "delivered", "latency s (median / max)", "hostile attempts meanwhile"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
