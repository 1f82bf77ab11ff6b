"""Encounters at scale (issue 13): 200 combatants against 10, and an attack against a test.

    .venv/bin/python bench/bench_encounters.py [--db sqlite,postgres] [--rounds 3] [--duration 4]

For each database kind (a SQLite WAL file, then PostgreSQL on 127.0.0.1:5432, user
postgres, database `jdr_bench_encounters` — or `--pg-database` — created and dropped here) one uvicorn
worker of the app (as bench_http.py: asyncio loop, h11, access log off, no rate
limit). Through HTTP it creates a great-cosmos campaign, distinct characters
(agilite spread, hp_max 10⁶ so nobody goes down) and four started encounters:
two of 10 combatants and two of 200 (one for next-turn, one for attacks: an
attack's actor and target are never the current combatant, so the GM's attacks
never use up a turn). Then, interleaved (the order rotates each round):
- cost: one keep-alive client sends `--duration` seconds of sequential requests to
  `POST …/next-turn` and to `POST …/actions` (a ranged attack, the server's dice:
  attack test, dodge, damage, both sheets, the log, the event) of each size; the
  ratio per round is mean latency with 200 ÷ with 10 (target ≤ 2×), p99 beside it;
- throughput: `wrk -c8` (or the Python load generator) on the attack of the
  10-combatant encounter and on `POST /v1/characters/{id}/tests` of a character of
  the same campaign; the ratio per round is attack req/s ÷ test req/s (target ≥ 50%).
About 2 minutes per database with the defaults.

`--old COMMIT`: a same-run A/B of the attack instead. The older commit's tree (git archive) is
served from its own database, migrated by it, beside ours; each round measures, alternating
which goes first, the sequential attack of the 10-combatant encounter (mean latency) and the
load on it (req/s) on both servers: ours ÷ old (≥ 1: ours faster).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
import httpx
from _common import ROOT, machine, migrate, ratios, summary, table, verdict
from bench_http import extract, lua, pg_database, pg_drop, run_python_load, run_wrk, server

PYTHON = sys.executable
SIZES = (10, 200)
DB_NAME = "jdr_bench_encounters"


def sheet(i: int) -> dict:
    return {
        "race": "humain",
        "level": 1,
        "hp_max": 10**6,
        "mp_max": 50,
        "default_posture": "defensive",
        "stats": {
            "force": 60,
            "esprit": 50,
            "charisme": 40,
            "agilite": 10 + (i * 7) % 80,
            "precision": 55,
            "chance": 60,
        },
    }


class Setup:
    """The campaign, its encounters and the requests measured, built through the API."""

    def __init__(self, base: str):
        self.c = httpx.Client(base_url=base, timeout=60)
        r = self.c.post("/v1/campaigns", json={"name": "Bench encounters", "ruleset": "great-cosmos"})
        r.raise_for_status()
        self.campaign, self.token = r.json()["id"], r.json()["gm_token"]
        self.auth = {"Authorization": f"Bearer {self.token}"}
        self.made = 0

    def characters(self, count: int) -> list[str]:
        ids = []
        for _ in range(count):
            self.made += 1
            r = self.c.post(
                f"/v1/campaigns/{self.campaign}/characters",
                headers=self.auth,
                json={"name": f"Fighter {self.made}", "kind": "npc", "sheet": sheet(self.made)},
            )
            r.raise_for_status()
            ids.append(r.json()["id"])
        return ids

    def encounter(self, size: int) -> dict:
        """A started encounter of `size` combatants: (id, its state after start)."""
        combatants = [{"character_id": cid} for cid in self.characters(size)]
        r = self.c.post(
            f"/v1/campaigns/{self.campaign}/encounters",
            headers=self.auth,
            json={"name": f"Brawl of {size}", "combatants": combatants},
        )
        r.raise_for_status()
        eid = r.json()["id"]
        r = self.c.post(f"/v1/encounters/{eid}/start", headers=self.auth, json={})
        r.raise_for_status()
        return r.json()

    def attack_body(self, state: dict) -> str:
        """A ranged attack between two combatants not acting now (the GM's, outside a turn)."""
        current = set(state["current"]["combatant_ids"])
        actor, target = [c["id"] for c in state["combatants"] if c["id"] not in current][:2]
        return json.dumps(
            {"type": "attack", "actor_id": actor, "target_id": target, "kind": "ranged", "damage": "1d6"},
            separators=(",", ":"),
        )


def sequential(client: httpx.Client, url: str, body: str, auth: dict, duration: float) -> list[float]:
    """Latencies (ms) of sequential POSTs for `duration` seconds (every answer must be 201)."""
    out: list[float] = []
    headers = {**auth, "Content-Type": "application/json"}
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        r = client.post(url, content=body, headers=headers)
        out.append((time.perf_counter() - t0) * 1e3)
        if r.status_code != 201:
            raise RuntimeError(f"{url}: {r.status_code} {r.text[:300]}")
    return out


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def bench_db(kind: str, args, work: Path) -> list[list[str]]:
    url = f"sqlite:///{work / 'encounters.db'}" if kind == "sqlite" else pg_database(args.pg_database)
    env = {"DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"}
    migrate(env)
    try:
        with server(["app.main:app"], env, "/v1/rulesets", work / f"server-{kind}.log") as base:
            s = Setup(base)
            t0 = time.monotonic()
            turns = {n: s.encounter(n)["id"] for n in SIZES}
            attacks = {n: s.encounter(n) for n in SIZES}
            hero = s.characters(1)[0]
            print(f"  {kind}: setup {time.monotonic() - t0:.0f} s ({s.made} characters, 4 encounters)", flush=True)
            cost = {f"next-turn {n}": (f"/v1/encounters/{eid}/next-turn", "{}") for n, eid in turns.items()}
            cost |= {
                f"attack {n}": (f"/v1/encounters/{st['id']}/actions", s.attack_body(st)) for n, st in attacks.items()
            }
            load = {
                "attack": (f"/v1/encounters/{attacks[10]['id']}/actions", s.attack_body(attacks[10])),
                "test": (f"/v1/characters/{hero}/tests", '{"stat":"force"}'),
            }
            scripts = {name: lua(work / f"{name}.lua", body, s.token) for name, (_p, body) in load.items()}

            def run_load(name: str, duration: int) -> dict[str, float]:
                path, body = load[name]
                if args.python_load:
                    return run_python_load(base + path, "POST", body, s.token, args.connections, duration)
                return run_wrk(base + path, scripts[name], 2, args.connections, duration)

            for name, (path, body) in cost.items():  # warm-up
                sequential(s.c, path, body, s.auth, 1)
            for name in load:
                run_load(name, 2)
            lat: dict[str, list[list[float]]] = {name: [] for name in cost}
            thr: dict[str, list[dict[str, float]]] = {name: [] for name in load}
            names, loads = list(cost), list(load)
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    path, body = cost[name]
                    lat[name].append(sequential(s.c, path, body, s.auth, args.duration))
                    got = lat[name][-1]
                    print(
                        f"  {kind} round {r + 1} {name:14s} {len(got):5d} requests  mean "
                        f"{statistics.fmean(got):6.2f} ms  p99 {p99(got):7.2f} ms",
                        flush=True,
                    )
                for name in loads[r % 2 :] + loads[: r % 2]:
                    res = run_load(name, args.duration * 2)
                    thr[name].append(res)
                    print(
                        f"  {kind} round {r + 1} load {name:8s} {res['rps']:8.1f} req/s  p99 {res['p99_ms']:7.1f} ms"
                        f"  non-2xx {res['non_2xx']}  socket errors {res['socket_errors']}",
                        flush=True,
                    )
            s.c.close()
    finally:
        if kind == "postgres":
            pg_drop(args.pg_database)
    rows = []
    for what in ("next-turn", "attack"):
        big = [statistics.fmean(x) for x in lat[f"{what} 200"]]
        small = [statistics.fmean(x) for x in lat[f"{what} 10"]]
        worse = ratios(big, small)
        rows.append(
            [
                kind,
                f"`{what}` 200 ÷ 10 (cost)",
                summary(worse) + "×",
                "≤ 2×",
                verdict(statistics.median(worse) <= 2.0),
                f"{statistics.median(small):.1f} / {statistics.median(big):.1f} ms",
                " / ".join(f"{statistics.median([p99(x) for x in lat[f'{what} {n}']]):.1f}" for n in SIZES),
            ]
        )
    rps = {n: [x["rps"] for x in v] for n, v in thr.items()}
    share = ratios(rps["attack"], rps["test"])
    bad = sum(x["non_2xx"] + x["socket_errors"] for v in thr.values() for x in v)
    rows.append(
        [
            kind,
            "`attack` ÷ `POST …/tests` (req/s)",
            summary([100 * x for x in share], "{:.0f}") + "%",
            "≥ 50%",
            verdict(statistics.median(share) >= 0.5) + (f", {bad} non-2xx" if bad else ""),
            f"{statistics.median(rps['attack']):.0f} / {statistics.median(rps['test']):.0f} req/s",
            " / ".join(f"{statistics.median([x['p99_ms'] for x in thr[n]]):.0f}" for n in ("attack", "test")),
        ]
    )
    return rows


def ab_db(kind: str, args, work: Path) -> list[list[str]]:
    """ours ÷ old on the 10-combatant attack: sequential mean latency, and req/s under load."""
    urls = {
        who: f"sqlite:///{work / f'{who}.db'}" if kind == "sqlite" else pg_database(f"{args.pg_database}_{who}")
        for who in ("ours", "old")
    }
    envs = {
        who: {"DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"}
        for who, url in urls.items()
    }
    trees = {"ours": ROOT, "old": args.old_tree}
    for who in envs:
        migrate(envs[who], trees[who])
    lat: dict[str, list[float]] = {"ours": [], "old": []}
    rps: dict[str, list[float]] = {"ours": [], "old": []}
    try:
        with ExitStack() as stack:
            setups, loads = {}, {}
            for who in ("ours", "old"):
                base = stack.enter_context(
                    server(["app.main:app"], envs[who], "/v1/rulesets", work / f"{who}-{kind}.log", cwd=trees[who])
                )
                s = setups[who] = Setup(base)
                st = s.encounter(10)
                path, body = f"/v1/encounters/{st['id']}/actions", s.attack_body(st)
                loads[who] = (base, path, body, lua(work / f"{who}-{kind}.lua", body, s.token))
            for who, (base, path, body, script) in loads.items():  # warm-up
                sequential(setups[who].c, path, body, setups[who].auth, 1)
            order = ["ours", "old"]
            for r in range(args.rounds):
                for who in order[r % 2 :] + order[: r % 2]:
                    base, path, body, script = loads[who]
                    got = sequential(setups[who].c, path, body, setups[who].auth, args.duration)
                    lat[who].append(statistics.fmean(got))
                    if args.python_load:
                        res = run_python_load(
                            base + path, "POST", body, setups[who].token, args.connections, args.duration * 2
                        )
                    else:
                        res = run_wrk(base + path, script, 2, args.connections, args.duration * 2)
                    rps[who].append(res["rps"])
                    print(
                        f"  {kind} round {r + 1} {who:4s} attack mean {lat[who][-1]:6.2f} ms, "
                        f"load {res['rps']:7.1f} req/s (non-2xx {res['non_2xx']})",
                        flush=True,
                    )
            for s in setups.values():
                s.c.close()
    finally:
        if kind == "postgres":
            for who in ("ours", "old"):
                pg_drop(f"{args.pg_database}_{who}")
    return [
        [kind, "attack, sequential (old ÷ ours latency)", summary(ratios(lat["old"], lat["ours"])) + "×"],
        [kind, "attack, load (ours ÷ old req/s)", summary(ratios(rps["ours"], rps["old"])) + "×"],
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4, help="seconds per sequential run (load runs: twice that)")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--pg-database", default=DB_NAME, help="the PostgreSQL database created and dropped here")
    ap.add_argument("--python-load", action="store_true", help="use the Python load generator even if wrk exists")
    ap.add_argument("--old", help="a commit: a same-run A/B of the attack, ours ÷ that commit's tree")
    args = ap.parse_args()
    if not args.python_load and shutil.which("wrk") is None:
        print("wrk not found (apt-get install -y wrk): using the bounded Python load generator (httpx, threads)")
        args.python_load = True
    print(
        f"bench_encounters — {machine()} — {args.rounds} interleaved rounds, {args.duration} s sequential runs, "
        f"load -c{args.connections}; median (min–max) of the per-round ratios\n"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="jdr-bench-encounters-") as tmp:
        if args.old:
            args.old_tree = Path(tmp) / "old-tree"
            args.old_tree.mkdir()
            args.old = extract(args.old, args.old_tree)
            print(f"old: commit {args.old}\n")
            for kind in args.db.split(","):
                rows += ab_db(kind.strip(), args, Path(tmp))
            print()
            print(table(["database", "ratio", f"ours ÷ old ({args.old}), median (min–max)"], rows))
            return
        for kind in args.db.split(","):
            rows += bench_db(kind.strip(), args, Path(tmp))
    print()
    print(
        table(
            [
                "database",
                "ratio",
                "median (min–max)",
                "target",
                "met?",
                "10 / 200 or attack / test",
                "p99 ms (10 / 200, or attack / test)",
            ],
            rows,
        )
    )
    print("\nAbsolute times are medians of the rounds, indicative only; the same-round ratios are the result.")


if __name__ == "__main__":
    main()
