"""Issue 29 item 3: `GET /v1/campaigns/{cid}/stats` on a small and on a large roll log.

The campaign measured has the same tests in both runs (`--campaign`, default 2,000 entries with
their figures, two characters); the roll log around it holds `--small` (10k) then `--large`
(default 1M) entries of other campaigns, built with bulk inserts (executemany of 10,000 rows).
The stats read only the campaign's entries (the `(campaign_id, seq)` index), so the large log
should cost at most 2x the small one. Reports the median ms per request of each, and the ratio.

    .venv/bin/python bench/bench_stats.py                 # 10k vs 1M (the 1M build takes a while)
    .venv/bin/python bench/bench_stats.py --large 100000  # 10k vs 100k
    BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test .venv/bin/python bench/bench_stats.py

On PostgreSQL each log is built in a database of its own (`<database>_stats_<entries>`, made on
that server and dropped at the end), and analyzed once built, as autovacuum would after such a
load (the planner's statistics of an empty table would otherwise be the ones it plans with).
`--explain` prints the plan of the stats' first aggregate on each log.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import _common  # noqa: F401  (puts the repository root on sys.path)

OUTCOMES = ["success", "failure", "critical_success", "critical_failure"]


def rows(campaign_id: str, characters: list[str], n: int, start: datetime):
    for i in range(n):
        d = (i * 37) % 100 + 1
        outcome = OUTCOMES[i % 4]
        yield {
            "id": uuid4().hex,
            "campaign_id": campaign_id,
            "character_id": characters[i % len(characters)],
            "kind": "test",
            "hidden": i % 10 == 0,
            "rerolls": None,
            "created_at": start + timedelta(seconds=i),
            "body": {"kind": "test", "outcome": outcome},
            "outcome": outcome,
            "p_super_critical_success": 0.0,
            "p_critical_success": 0.05,
            "p_success": 0.6,
            "p_failure": 0.3,
            "p_critical_failure": 0.05,
            "p_super_critical_failure": 0.0,
            "p_any_success": 0.65,
            "die_a": "d100",
            "die_a_count": 1,
            "die_a_total": d,
            "die_b": "d10" if i % 3 == 0 else None,
            "die_b_count": 1 if i % 3 == 0 else None,
            "die_b_total": (i % 10) + 1 if i % 3 == 0 else None,
        }


def fill(engine, campaign_id: str, characters: list[str], n: int) -> None:
    from sqlalchemy import insert

    from app.models.tables import LogEntry, core_table

    table = core_table(LogEntry)
    batch: list[dict] = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        for row in rows(campaign_id, characters, n, start):
            batch.append(row)
            if len(batch) == 10_000:
                conn.execute(insert(table), batch)
                batch.clear()
        if batch:
            conn.execute(insert(table), batch)


def print_plan(engine, campaign_id: str) -> None:
    """EXPLAIN ANALYZE of the per-character figures aggregate, as the GM reads it."""
    from sqlalchemy import text

    from app.services import stats

    figures, _ = stats._queries(False, True, False)
    statement = figures.statement.params(campaign_id=campaign_id)
    sql = str(statement.compile(engine, compile_kwargs={"literal_binds": True}))
    prefix = "EXPLAIN ANALYZE " if engine.dialect.name == "postgresql" else "EXPLAIN QUERY PLAN "
    with engine.connect() as conn:
        for row in conn.execute(text(prefix + sql)):
            print("   ", " | ".join(str(v) for v in row))


def measure(url: str, others: int, campaign_entries: int, requests: int, explain: bool = False) -> float:
    """Median ms of the stats request with `others` entries of other campaigns in the log."""
    from fastapi.testclient import TestClient
    from sqlalchemy import create_engine

    from app.core.migrations import upgrade_head

    upgrade_head(url)
    engine = create_engine(url)
    from app.main import create_app

    with TestClient(create_app()) as c:
        camp = c.post("/v1/campaigns", json={"name": "Stats", "ruleset": "great-cosmos"}).json()
        other = c.post("/v1/campaigns", json={"name": "Others", "ruleset": "great-cosmos"}).json()
        gm = {"Authorization": f"Bearer {camp['gm_token']}"}
        t0 = time.perf_counter()
        fill(engine, other["id"], [uuid4().hex for _ in range(50)], others)
        fill(engine, camp["id"], [uuid4().hex, uuid4().hex], campaign_entries)
        print(f"  built {others:,} + {campaign_entries:,} entries in {time.perf_counter() - t0:.1f} s")
        from sqlalchemy import text

        with engine.begin() as conn:
            conn.execute(text("ANALYZE"))
        if explain:
            print_plan(engine, camp["id"])
        path = f"/v1/campaigns/{camp['id']}/stats"
        assert c.get(path, headers=gm).json()["campaign"]["tests"] == campaign_entries
        times = []
        for _ in range(requests):
            t = time.perf_counter()
            assert c.get(path, headers=gm).status_code == 200
            times.append((time.perf_counter() - t) * 1000)
    engine.dispose()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--campaign", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--explain", action="store_true", help="print the first aggregate's plan on each log")
    args = parser.parse_args()
    os.environ.update({"ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"})
    results = {}
    given = os.environ.get("BENCH_DATABASE_URL")
    for n in (args.small, args.large):
        with database(given, n) as url:
            os.environ["DATABASE_URL"] = url
            from app.core.config import get_settings

            get_settings.cache_clear()
            print(f"log of {n:,} other entries ({url.split('://')[0]}):")
            results[n] = measure(url, n, args.campaign, args.requests, args.explain)
            print(f"  median {results[n]:.2f} ms per request")
    ratio = results[args.large] / results[args.small]
    print(f"large / small: {ratio:.2f}x (target <= 2x)")


@contextmanager
def database(given: str | None, n: int) -> Iterator[str]:
    """A fresh database for a log of `n` entries: a SQLite file, or on PostgreSQL `<given>_stats_<n>`
    (dropped at the end)."""
    if not given:
        yield f"sqlite:///{Path(tempfile.mkdtemp(prefix='jdr-stats-')) / 's.db'}"
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    from app.core.db import normalize_database_url

    base = make_url(normalize_database_url(given))
    name = f"{base.database}_stats_{n}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:  # WITH (FORCE): the app's engines on it (cached by URL) lose their connections
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
