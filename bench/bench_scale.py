"""The roll-log page at 1,000,000 rows vs 10,000 rows (issue #7).

    .venv/bin/python bench/bench_scale.py [--db sqlite|postgres] [--large 1000000] [--small 10000]
                                          [--rounds 9] [--rebuild]

Two databases migrated by Alembic; in each, a great-cosmos campaign, a player
and a character made through the API, one real test (its body is the template),
then the rest of the rows bulk-inserted with SQLAlchemy Core straight into
`roll_log` (bodies like real test entries: fresh id, dice, score, outcome,
karma effects, timestamps; 5% hidden), all in that one campaign (the worst
case for its pages). The databases are kept (SQLite files under
/tmp/jdr-bench-scale/, PostgreSQL databases jdr_bench_scale_*) and reused by
the next run unless --rebuild; building the 1M rows takes a few minutes once.

Measured in-process through the real app and its HTTP interface
(`TestClient`, one app per database), interleaved small/large, repeated:
- `GET /v1/campaigns/{cid}/rolls?limit=50` as the GM (first page);
- the same with a deep cursor (the page starting half-way down the log);
- the first page as a player (hidden entries filtered out).
Target: large ÷ small ≤ 1.5×. Encounters do not exist yet in the app, so
there is no encounter benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
import warnings
from datetime import datetime, timedelta, timezone
from itertools import repeat
from pathlib import Path
from uuid import uuid4

import _common
from _common import fmt_ns, interleave, machine, ratios, summary, table, verdict

import psycopg
from sqlalchemy import func, insert, select

DATA = Path("/tmp/jdr-bench-scale")
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
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
OUTCOMES = [
    ("super_critical_success", -2),
    ("critical_success", -1),
    ("success", 0),
    ("failure", 0),
    ("critical_failure", 1),
    ("super_critical_failure", 2),
]
CHUNK = 20_000


def database_url(kind: str, name: str, rebuild: bool) -> tuple[str, bool]:
    """(url, exists) of one benchmark database."""
    if kind == "sqlite":
        DATA.mkdir(exist_ok=True)
        path = DATA / f"{name}.db"
        if rebuild:
            for p in DATA.glob(f"{name}.*"):
                p.unlink()
        return f"sqlite:///{path}", path.exists() and (DATA / f"{name}.json").exists()
    db = f"jdr_bench_scale_{name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone() is not None
        if rebuild and exists:
            conn.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
            exists = False
        if not exists:
            conn.execute(f'CREATE DATABASE "{db}"')
    meta = DATA / f"pg-{name}.json"
    return f"postgresql://postgres@127.0.0.1:5432/{db}", exists and meta.exists()


def meta_path(kind: str, name: str) -> Path:
    return DATA / (f"{name}.json" if kind == "sqlite" else f"pg-{name}.json")


def make_app(url: str):
    """The real app on this database (a session per request from its own engine)."""
    from sqlmodel import Session

    from app.core.config import Settings
    from app.core.db import build_engine
    from app.main import create_app

    engine = build_engine(url)
    application = create_app(Settings(database_url=url, admin_token=None, rate_limit_per_minute=0))

    try:  # handlers that open their own sessions (one threadpool hop) get them from this factory
        from app.api.deps import session_factory
    except ImportError:
        from app.api.events import session_factory

    class Sessions:  # the session factory's protocol (app.core.db.Sessions), every write in a thread
        def __call__(self, read_only: bool = False, **_) -> Session:
            return Session(engine, expire_on_commit=False)

        def on_loop(self) -> None:
            return None

        def writers(self) -> int:
            return 32

    sessions = Sessions()
    application.dependency_overrides[session_factory] = lambda: sessions
    return application, engine


def fake_bodies(template: dict, campaign_id: str, n: int, start: datetime):
    """Rows shaped like real test entries, newest last (seq order = time order)."""
    rng = random.Random(7)
    karma = 0
    for i in range(n):
        natural = rng.randint(1, 100)
        outcome, delta = rng.choice(OUTCOMES)
        after = max(-10, min(10, karma + delta))
        created = start + timedelta(seconds=i)
        entry_id = uuid4().hex
        hidden = rng.random() < 0.05
        body = {
            **template,
            "id": entry_id,
            "natural": natural,
            "score": natural,
            "outcome": outcome,
            "success": outcome.endswith("success"),
            "rolls": [{"die": "d100", "value": natural, "purpose": "test"}],
            "effects": {"karma": {"before": karma, "after": after}},
            "hidden": hidden,
            "created_at": created.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        karma = after
        yield {
            "id": entry_id,
            "campaign_id": campaign_id,
            "character_id": template.get("character_id"),
            "kind": "test",
            "hidden": hidden,
            "created_at": created,
            "body": body,
        }


def build(kind: str, name: str, url: str, rows: int) -> dict:
    from fastapi.testclient import TestClient

    from app.core.migrations import upgrade_head
    from app.models.tables import LogEntry

    t0 = time.monotonic()
    upgrade_head(url)
    application, engine = make_app(url)
    with TestClient(application) as c:
        camp = c.post("/v1/campaigns", json={"name": "Scale", "ruleset": "great-cosmos"}).json()
        gm = {"Authorization": f"Bearer {camp['gm_token']}"}
        player = c.post(f"/v1/campaigns/{camp['id']}/players", headers=gm, json={"name": "P"}).json()
        char = c.post(
            f"/v1/campaigns/{camp['id']}/characters", headers=gm, json={"name": "Hero", "kind": "pc", "sheet": GC_SHEET}
        ).json()
        template = c.post(f"/v1/characters/{char['id']}/tests", headers=gm, json={"stat": "force"}).json()
    start = datetime.now(timezone.utc) - timedelta(seconds=rows + 10)
    table_ = LogEntry.__table__
    batch: list[dict] = []
    with engine.begin() as conn:
        for row in fake_bodies(template, camp["id"], rows - 1, start):
            batch.append(row)
            if len(batch) == CHUNK:
                conn.execute(insert(table_), batch)
                batch.clear()
        if batch:
            conn.execute(insert(table_), batch)
    with engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(table_)).scalar_one()
        if kind == "postgres":
            conn.exec_driver_sql("ANALYZE roll_log")
    engine.dispose()
    meta = {
        "campaign_id": camp["id"],
        "gm_token": camp["gm_token"],
        "player_token": player["token"],
        "rows": count,
        "build_seconds": round(time.monotonic() - t0, 1),
    }
    meta_path(kind, name).write_text(json.dumps(meta))
    print(f"  built {name}: {count:,} rows in {meta['build_seconds']} s", flush=True)
    return meta


def prepare(kind: str, name: str, rows: int, rebuild: bool) -> tuple[str, dict]:
    url, exists = database_url(kind, name, rebuild)
    if exists:
        meta = json.loads(meta_path(kind, name).read_text())
        if meta["rows"] == rows:
            print(f"  reusing {name}: {meta['rows']:,} rows (built in {meta['build_seconds']} s; --rebuild to redo)")
            return url, meta
        url, _ = database_url(kind, name, True)
    return url, build(kind, name, url, rows)


def deep_cursor(engine, campaign_id: str, rows: int) -> str:
    """The app's cursor for the page starting half-way down the log."""
    from app.models.tables import LogEntry
    from app.services.rolls import _cursor  # the opaque cursor format, as the app writes it

    with engine.connect() as conn:
        seq = conn.execute(
            select(LogEntry.seq)
            .where(LogEntry.campaign_id == campaign_id)
            .order_by(LogEntry.seq.desc())
            .offset(rows // 2)
            .limit(1)
        ).scalar_one()
    return _cursor(seq)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per timed batch")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("DATABASE_URL", "sqlite:///:memory:")  # app.main builds its default app at import
    warnings.filterwarnings("ignore", message=".*httpx.*starlette.testclient.*")
    from fastapi.testclient import TestClient

    print(f"bench_scale — {machine()} — {args.db}, roll-log page, {args.rounds} interleaved rounds, median (min–max)\n")
    sides = {}
    for name, rows in (("small", args.small), ("large", args.large)):
        url, meta = prepare(args.db, name, rows, args.rebuild)
        application, engine = make_app(url)
        client = TestClient(application)
        gm = {"Authorization": f"Bearer {meta['gm_token']}"}
        player = {"Authorization": f"Bearer {meta['player_token']}"}
        base = f"/v1/campaigns/{meta['campaign_id']}/rolls?limit=50"
        cursor = deep_cursor(engine, meta["campaign_id"], meta["rows"])
        sides[name] = {
            "first": (base, gm),
            "deep": (f"{base}&cursor={cursor}", gm),
            "player": (base, player),
            "client": client,
            "rows": meta["rows"],
        }
        for path, headers in (sides[name]["first"], sides[name]["deep"], sides[name]["player"]):
            r = client.get(path, headers=headers)
            assert r.status_code == 200 and len(r.json()["items"]) == 50 and r.json()["next_cursor"], r.text

    def batch(side: dict, case: str):
        path, headers = side[case]
        get = side["client"].get

        def run(n: int) -> None:
            for _ in repeat(None, n):
                get(path, headers=headers)

        return run

    rows_out, ok_all = [], True
    labels = {"first": "first page (GM)", "deep": "deep cursor page, half-way (GM)", "player": "first page (player)"}
    for case, label in labels.items():
        t = interleave(
            {"small": batch(sides["small"], case), "large": batch(sides["large"], case)}, args.rounds, args.budget
        )
        r = ratios(t["large"], t["small"])
        ok = statistics.median(r) <= 1.5
        ok_all &= ok
        rows_out.append(
            [
                label,
                fmt_ns(statistics.median(t["small"])),
                fmt_ns(statistics.median(t["large"])),
                summary(r) + "×",
                verdict(ok),
            ]
        )
    print()
    print(
        table(
            [
                "GET /v1/campaigns/{cid}/rolls?limit=50",
                f"{sides['small']['rows']:,} rows",
                f"{sides['large']['rows']:,} rows",
                "large ÷ small (≤ 1.5×)",
                "target",
            ],
            rows_out,
        )
    )
    print(f"\nTarget {verdict(ok_all)}. Encounters do not exist yet in the app: no encounter benchmark.")


if __name__ == "__main__":
    main()
