"""A roll-log page, this tree against an older commit, in the same run (issue 16 item 2).

    .venv/bin/python bench/bench_rolls_page.py [--old HEAD~1] [--db sqlite|postgres] [--rounds 3] [--duration 8]

Two uvicorn servers (1 worker, asyncio, h11, access log off) on the SAME database:
this working tree and `--old` (a commit, extracted with `git archive` into a temporary
directory). The database is migrated by this tree (the old one must accept its
schema), then 300 log entries are made through this tree (great-cosmos tests with
3d6 free rolls in between, like a session's log) and as many through the old
(their bodies as each version stores them). Load: `wrk -t2 -c16` on
`GET /v1/campaigns/{id}/rolls?limit=50` with the GM's token, the two servers taking
turns (the order rotates each round). Reported: new ÷ old req/s per round (target
≥ 2×) and each one's p99. Without wrk: a bounded Python load generator. ~2 minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401
import httpx
from _common import ROOT, machine, migrate, summary, table, verdict
from bench_http import (
    GC_SHEET,
    PYTHON,
    extract,
    pg_database,
    pg_drop,
    run_python_load,
    run_wrk,
    server,
)


def fill(base: str, cid: str, token: str, hero: str, n: int) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=30) as c:
        for i in range(n):
            if i % 3 == 2:
                r = c.post(f"/v1/campaigns/{cid}/rolls", headers=auth, json={"expression": "3d6", "purpose": "loot"})
            else:
                r = c.post(f"/v1/characters/{hero}/tests", headers=auth, json={"stat": "force"})
            assert r.status_code == 201, r.text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="HEAD~1", help="the commit to compare with")
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--entries", type=int, default=300, help="log entries made through each server")
    ap.add_argument("--python-load", action="store_true")
    ap.add_argument(
        "--viewer",
        choices=("gm", "player"),
        default="gm",
        help="whose page is read (a player's: its own hero's entries)",
    )
    args = ap.parse_args()
    if not args.python_load and shutil.which("wrk") is None:
        print("wrk not found: using the bounded Python load generator")
        args.python_load = True
    with tempfile.TemporaryDirectory(prefix="jdr-bench-rolls-") as tmp:
        work = Path(tmp)
        old_tree = work / "old"
        old_tree.mkdir()
        old = extract(args.old, old_tree)
        print(
            f"bench_rolls_page — {machine()} — old = {old}, {args.db}, "
            f"{'Python load' if args.python_load else 'wrk -t2'} -c{args.connections} -d{args.duration}s, "
            f"{args.rounds} interleaved rounds, the {args.viewer}'s page\n",
            flush=True,
        )
        db = "jdr_bench_rolls"
        url = pg_database(db) if args.db == "postgres" else f"sqlite:///{work / 'rolls.db'}"
        env = {
            "DATABASE_URL": url,
            "ADMIN_TOKEN": "",
            "RATE_LIMIT_PER_MINUTE": "0",
            "CORS_ORIGINS": "[]",
            "CAMPAIGNS_PER_HOUR_PER_ADDRESS": "0",
        }
        migrate(env)
        try:
            with (
                server(["app.main:app"], env, "/healthz", work / "new.log") as new_base,
                server(
                    ["--app-dir", str(old_tree), "app.main:app"],
                    {**env, "PYTHONPATH": str(old_tree)},
                    "/healthz",
                    work / "old.log",
                    cwd=old_tree,
                ) as old_base,
            ):
                with httpx.Client(base_url=new_base, timeout=30) as c:
                    camp = c.post("/v1/campaigns", json={"name": "Rolls", "ruleset": "great-cosmos"}).json()
                    auth = {"Authorization": f"Bearer {camp['gm_token']}"}
                    reader = camp["gm_token"]
                    owner: dict[str, str] = {}
                    if args.viewer == "player":
                        player = c.post(f"/v1/campaigns/{camp['id']}/players", headers=auth, json={"name": "Léa"})
                        reader, owner = player.json()["token"], {"player_id": player.json()["id"]}
                    hero = c.post(
                        f"/v1/campaigns/{camp['id']}/characters",
                        headers=auth,
                        json={"name": "Hero", "kind": "pc", "sheet": GC_SHEET, **owner},
                    ).json()["id"]
                    auth = {"Authorization": f"Bearer {reader}"}
                fill(old_base, camp["id"], camp["gm_token"], hero, args.entries)
                fill(new_base, camp["id"], camp["gm_token"], hero, args.entries)
                path = f"/v1/campaigns/{camp['id']}/rolls?limit=50"
                a = httpx.get(new_base + path, headers=auth).json()
                b = httpx.get(old_base + path, headers=auth).json()
                assert a == b and len(a["items"]) == 50, "the two versions answer the same page"
                script = work / "get.lua"
                script.write_text(f'wrk.headers["Authorization"] = "Bearer {reader}"\n')
                bases = {"new": new_base, "old": old_base}

                def load(name: str, duration: int) -> dict[str, float]:
                    if args.python_load:
                        return run_python_load(bases[name] + path, "GET", None, reader, args.connections, duration)
                    return run_wrk(bases[name] + path, script, 2, args.connections, duration)

                for name in bases:
                    load(name, 2)
                results: dict[str, list[dict[str, float]]] = {n: [] for n in bases}
                names = list(bases)
                for r in range(args.rounds):
                    for name in names if r % 2 == 0 else names[::-1]:
                        res = load(name, args.duration)
                        results[name].append(res)
                        print(
                            f"  round {r + 1} {name}: {res['rps']:8.1f} req/s  p99 {res['p99_ms']:7.1f} ms  "
                            f"non-2xx {res['non_2xx']}",
                            flush=True,
                        )
        finally:
            if args.db == "postgres":
                pg_drop(db)
    rps = {n: [x["rps"] for x in v] for n, v in results.items()}
    ratio = [a / b for a, b in zip(rps["new"], rps["old"])]
    p99 = {n: statistics.median(x["p99_ms"] for x in v) for n, v in results.items()}
    print()
    print(
        table(
            ["database", "new req/s", "old req/s", "new ÷ old (≥ 2×)", "p99 ms new / old", "old commit"],
            [
                [
                    args.db,
                    f"{statistics.median(rps['new']):.0f}",
                    f"{statistics.median(rps['old']):.0f}",
                    summary(ratio) + f"× ({verdict(statistics.median(ratio) >= 2.0)})",
                    f"{p99['new']:.1f} / {p99['old']:.1f}",
                    old,
                ]
            ],
        )
    )


if __name__ == "__main__":
    sys.exit(main())
