"""`POST …/actions/plan` against the action itself (issue 26, "Performance").

    .venv/bin/python bench/bench_plan.py [--db sqlite,postgres] [--rounds 3] [--duration 4]

For each database kind (a SQLite WAL file, then PostgreSQL on 127.0.0.1:5432, user postgres,
database `jdr_bench_plan` — created and dropped here) one uvicorn worker of the app (as
bench_http.py). Through HTTP it sets up two fights, the GM's combatants acting outside a turn
(so the GM's attacks never use up a turn, and nobody goes down):
- Great Cosmos: a melee attack, karma -6 against +6 (GC-K2: a karma d10 on both sides), the
  target dodging (d100 + d10), 2d6 damage;
- Asgard: a group attack (AS-C11) of three extras on a defending character, 2d6 damage.
Then, interleaved (the order rotates each round), one keep-alive client sends `--duration`
seconds of sequential requests to each: the action (`POST …/actions`, the server's dice) and its
plan (`POST …/actions/plan`: the dice it will take and the exact odds). Reported per round:
mean and p99 of each; the ratio plan ÷ action of the means (target ≤ 2×), and of the p99s.
About 1 minute per database with the defaults.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import os
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
import httpx
from _common import ROOT, machine, migrate, ratios, summary, table, verdict
from bench_encounters import p99
from bench_http import pg_database, pg_drop, server

PYTHON = sys.executable
DB_NAME = "jdr_bench_plan"


def gc_sheet(agilite: int, karma: int) -> dict:
    return {
        "race": "humain",
        "level": 1,
        "hp_max": 10**6,
        "mp_max": 50,
        "karma": karma,
        "default_posture": "defensive",
        "stats": {"force": 60, "esprit": 50, "charisme": 40, "agilite": agilite, "precision": 55, "chance": 60},
    }


def as_sheet(tier: str | None) -> dict:
    sheet = {
        "skills": {"combat": 6, "defense": 4, "perception": 2, "resistance": 3, "volonte": 3},
        "vitality": 900,
        "vitality_max": 900,
        "heroism": 2,
        "protection": 1,
    }
    return {**sheet, "tier": tier} if tier else sheet


class Fight:
    """A campaign of the ruleset, its characters, a started encounter and the attack measured."""

    def __init__(self, c: httpx.Client, ruleset: str, sheets: list[tuple[str, dict]]):
        r = c.post("/v1/campaigns", json={"name": f"Bench plan {ruleset}", "ruleset": ruleset})
        r.raise_for_status()
        self.auth = {"Authorization": f"Bearer {r.json()['gm_token']}", "Content-Type": "application/json"}
        cid = r.json()["id"]
        ids = []
        for name, sheet in sheets:
            r = c.post(
                f"/v1/campaigns/{cid}/characters",
                headers=self.auth,
                json={"name": name, "kind": "npc", "sheet": sheet},
            )
            r.raise_for_status()
            ids.append(r.json()["id"])
        combatants = [{"character_id": ch, "position": {"x": i, "y": 0}} for i, ch in enumerate(ids)]
        r = c.post(
            f"/v1/campaigns/{cid}/encounters", headers=self.auth, json={"name": "Bench", "combatants": combatants}
        )
        r.raise_for_status()
        self.eid = r.json()["id"]
        r = c.post(f"/v1/encounters/{self.eid}/start", headers=self.auth, json={})
        r.raise_for_status()
        self.state = r.json()

    def outside_turn(self, count: int) -> list[str]:
        """`count` combatants not acting now, in the order added."""
        current = set(self.state["current"]["combatant_ids"])
        return [c["id"] for c in self.state["combatants"] if c["id"] not in current][:count]


def setups(c: httpx.Client) -> dict[str, tuple[str, str]]:
    """name → (encounter id, body), and the GM's auth per name."""
    gc = Fight(c, "great-cosmos", [(f"F{i}", gc_sheet(20 + i, -6 if i % 2 else 6)) for i in range(3)])
    # the two not acting now: one with karma -6 and one with +6 when possible (a d10 on both sides)
    actor, target = gc.outside_turn(2)
    gc_body = {"type": "attack", "actor_id": actor, "target_id": target, "kind": "melee", "damage": "2d6"}
    asg = Fight(
        c,
        "asgard",
        [("Hero", as_sheet(None)), *((f"Extra {i}", as_sheet("figurant")) for i in range(4))],
    )
    current = set(asg.state["current"]["combatant_ids"])
    ids = [x["id"] for x in asg.state["combatants"]]
    hero = ids[0]
    extras = [i for i in ids[1:] if i not in current][:3]
    if hero in current or len(extras) < 3:  # the hero acts now: attack the first extra instead (never acting)
        raise SystemExit("asgard setup: the hero or too many extras act first; change the sheets")
    as_body = {
        "type": "attack",
        "actor_id": extras[0],
        "target_id": hero,
        "group": extras[1:],
        "damage": "2d6",
    }
    return {
        "gc": (gc.eid, json.dumps(gc_body, separators=(",", ":")), gc.auth),
        "asgard": (asg.eid, json.dumps(as_body, separators=(",", ":")), asg.auth),
    }


def sequential(c: httpx.Client, url: str, body: str, auth: dict, duration: float, status: int) -> list[float]:
    out: list[float] = []
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        r = c.post(url, content=body, headers=auth)
        out.append((time.perf_counter() - t0) * 1e3)
        if r.status_code != status:
            raise RuntimeError(f"{url}: {r.status_code} {r.text[:300]}")
    return out


def bench_db(kind: str, args, work: Path) -> list[list[str]]:
    url = f"sqlite:///{work / 'plan.db'}" if kind == "sqlite" else pg_database(DB_NAME)
    env = {"DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"}
    migrate(env)
    rows = []
    try:
        with server(["app.main:app"], env, "/v1/rulesets", work / f"server-{kind}.log") as base:
            c = httpx.Client(base_url=base, timeout=60)
            fights = setups(c)
            plan = c.post(
                f"/v1/encounters/{fights['gc'][0]}/actions/plan", content=fights["gc"][1], headers=fights["gc"][2]
            )
            plan.raise_for_status()
            assert "odds" in plan.json(), plan.text
            contenders = {}
            for name, (eid, body, auth) in fights.items():
                contenders[f"{name} action"] = (f"/v1/encounters/{eid}/actions", body, auth, 201)
                contenders[f"{name} plan"] = (f"/v1/encounters/{eid}/actions/plan", body, auth, 200)
            for path, body, auth, status in contenders.values():  # warm-up
                sequential(c, path, body, auth, 1, status)
            lat: dict[str, list[list[float]]] = {name: [] for name in contenders}
            names = list(contenders)
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    path, body, auth, status = contenders[name]
                    got = sequential(c, path, body, auth, args.duration, status)
                    lat[name].append(got)
                    print(
                        f"  {kind} round {r + 1} {name:14s} {len(got):5d} requests  mean "
                        f"{statistics.fmean(got):6.2f} ms  p99 {p99(got):7.2f} ms",
                        flush=True,
                    )
            c.close()
    finally:
        if kind == "postgres":
            pg_drop(DB_NAME)
    for name in ("gc", "asgard"):
        act, pl = lat[f"{name} action"], lat[f"{name} plan"]
        mean_ratio = ratios([statistics.fmean(x) for x in pl], [statistics.fmean(x) for x in act])
        p99_ratio = ratios([p99(x) for x in pl], [p99(x) for x in act])
        rows.append(
            [
                kind,
                {
                    "gc": "Great Cosmos attack (d100 + karma d10 both sides, 2d6)",
                    "asgard": "Asgard group attack (3 extras)",
                }[name],
                f"{statistics.median(statistics.fmean(x) for x in act):.2f} / {statistics.median(p99(x) for x in act):.2f}",
                f"{statistics.median(statistics.fmean(x) for x in pl):.2f} / {statistics.median(p99(x) for x in pl):.2f}",
                summary(mean_ratio) + "×",
                summary(p99_ratio) + "×",
                verdict(statistics.median(mean_ratio) <= 2),
            ]
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", default="sqlite,postgres")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4)
    args = ap.parse_args()
    print(machine(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="jdr-bench-plan-") as tmp:
        for kind in args.db.split(","):
            rows += bench_db(kind, args, Path(tmp))
    print()
    print(
        table(
            [
                "db",
                "action",
                "action mean / p99 (ms)",
                "plan mean / p99 (ms)",
                "plan ÷ action, mean (median, min–max)",
                "plan ÷ action, p99",
                "≤ 2×",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
