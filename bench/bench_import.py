"""Export and import of a campaign with a 10,000-entry log (issue 29 item 2): the import, one
transaction, should take at most 10x the export's time. In process (TestClient), on a fresh SQLite
file (or DATABASE_URL). Run: .venv/bin/python bench/bench_import.py [entries] [--combat]

Then, `--rounds` times (3), the CPU time of reading and checking the exported bundle (the import's
part before the database; CPU time: steadier than wall time on a loaded machine). `--combat`: the
log is a fight's attacks (a Great Cosmos combat entry: its steps, changes and dice, each id of
which the import checks) in place of free rolls. To compare a revision in the same run, give its
checkout first on PYTHONPATH (`PYTHONPATH=../old .venv/bin/python bench/bench_import.py`): the
output names the tree measured.

`--during [MB]`: what an import costs the worker's other requests (API.md round 4: an import is
parsed and checked off the event loop). A real server (uvicorn, one worker, the production stack)
of `--tree` (default: this tree; give a checkout of another revision to compare), on a fresh SQLite
file (or DATABASE_URL); an MB-megabyte bundle (default 17) sent with `dry_run` (`--rounds` times),
and meanwhile `GET /v1/rulesets` (no database) and `GET` of a campaign, one after the other: the
worst and the median wait of those requests during the import, and the import's own time."""

from __future__ import annotations

import argparse
import contextlib
import gc
import inspect
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.migrations import upgrade_head
from app.main import create_app


def main(entries: int = 10_000, combat: bool = False, rounds: int = 3) -> None:
    url = os.environ.get("DATABASE_URL") or f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    upgrade_head(url)
    app = create_app(
        Settings(
            database_url=url,
            admin_token=None,
            rate_limit_per_minute=0,
            webhook_delivery=False,
            max_body_bytes=100_000_000,
        )
    )  # a 10,000-entry bundle is ~5 MB: beyond the default MAX_BODY_BYTES
    with TestClient(app) as client:
        camp = client.post("/v1/campaigns", json={"name": "Bench", "ruleset": "great-cosmos"}).json()
        gm = {"Authorization": f"Bearer {camp['gm_token']}"}
        if combat:
            _attack(client, camp["id"], gm)
        else:
            client.post(f"/v1/campaigns/{camp['id']}/rolls", json={"expression": "3d6", "seed": 1}, headers=gm)
        seed = client.get(f"/v1/campaigns/{camp['id']}/export", headers=gm).json()
        entry = seed["log"][-1]
        log = []
        for _ in range(entries):
            eid = uuid.uuid4().hex
            log.append({**entry, "id": eid, "body": {**entry["body"], "id": eid}})
        bundle = {**seed, "log": log}
        r = client.post("/v1/campaigns/import", json=bundle)  # the campaign to export
        assert r.status_code == 201, r.text[:500]
        imported = r.json()
        new_gm = {"Authorization": f"Bearer {imported['gm_token']}"}
        started = time.perf_counter()
        exported = client.get(f"/v1/campaigns/{imported['id']}/export", headers=new_gm)
        export_s = time.perf_counter() - started
        assert len(exported.json()["log"]) == entries
        started = time.perf_counter()
        r = client.post("/v1/campaigns/import", json=exported.json())
        import_s = time.perf_counter() - started
        assert r.status_code == 201, r.text[:500]
        reads = _reads(exported.json(), rounds)
    tree = Path(inspect.getfile(create_app)).resolve().parents[1]  # the app measured (PYTHONPATH may name another)
    what = f"{entries} {'combat' if combat else 'roll'} entries, {tree.name} {revision_of(tree)}"
    print(f"{what}: export {export_s:.3f} s, import {import_s:.3f} s, ratio {import_s / export_s:.2f}x")
    print(
        f"  reading and checking the bundle: {min(reads) * 1000:.0f} ms of CPU (min of {rounds}), median "
        f"{statistics.median(reads) * 1000:.0f} ms"
    )


def _reads(bundle: dict, rounds: int) -> list[float]:
    """The CPU time of `read_campaign` (the import's validation and checks of the whole bundle),
    `rounds` times."""
    from app.services.bundles import read_campaign

    took = []
    for _ in range(rounds):
        gc.collect()
        started = time.process_time()
        read_campaign(bundle)
        took.append(time.process_time() - started)
    return took


def _attack(client: TestClient, campaign_id: str, gm: dict[str, str]) -> None:
    """A Great Cosmos fight of two, started, and one attack (seeded dice): the log's last entry."""
    sheet = {"race": "humain", "stats": {"force": 68, "esprit": 50, "charisme": 40}, "hp_max": 30, "mp_max": 10}
    sheet["stats"] |= {"agilite": 55, "precision": 45, "chance": 60}
    fighters = []
    for name, kind in (("A", "pc"), ("B", "npc")):
        r = client.post(
            f"/v1/campaigns/{campaign_id}/characters", json={"name": name, "kind": kind, "sheet": sheet}, headers=gm
        )
        fighters.append({"character_id": r.json()["id"]})
    fight = client.post(
        f"/v1/campaigns/{campaign_id}/encounters", json={"name": "Bench", "combatants": fighters}, headers=gm
    ).json()
    client.post(f"/v1/encounters/{fight['id']}/start", json={"seed": 1}, headers=gm)
    state = client.get(f"/v1/encounters/{fight['id']}", headers=gm).json()
    actor = state["current"]["combatant_id"]
    target = next(c["id"] for c in state["combatants"] if c["id"] != actor)
    body = {"type": "attack", "actor_id": actor, "target_id": target, "damage": "1d6", "seed": 2}
    r = client.post(f"/v1/encounters/{fight['id']}/actions", json=body, headers=gm)
    assert r.status_code == 201, r.text


def during(megabytes: float, tree: Path, rounds: int) -> None:
    import httpx

    from _common import check_stack, migrate

    url = os.environ.get("DATABASE_URL") or f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    env = {"DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "WEBHOOK_DELIVERY": "false"}
    env |= {"CAMPAIGNS_PER_HOUR_PER_ADDRESS": "0", "IMPORT_MAX_BODY_BYTES": str(int(megabytes * 2_000_000))}
    migrate(env, tree)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--log-level", "warning"]
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app.main:app", *args, *check_stack("uvloop")],
        cwd=tree,
        env={**os.environ, **env},
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60.0) as http:
            for _ in range(600):
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/readyz").status_code == 200:
                        break
                time.sleep(0.1)
            raw, cid, gm = _bundle_of(http, megabytes)
            print(f"tree {tree} ({revision_of(tree)}), {url.split(':')[0]}, a {len(raw) / 1e6:.1f} MB bundle")
            for n in range(rounds):
                took, waits = _one_import(base, http, raw, cid, gm)
                worst, median = max(waits), statistics.median(waits)
                print(
                    f"round {n + 1}: import {took:.2f} s; during it, {len(waits)} other requests: "
                    f"worst wait {worst:.3f} s, median {median:.3f} s"
                )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _bundle_of(http, megabytes: float) -> tuple[bytes, str, dict[str, str]]:
    camp = http.post("/v1/campaigns", json={"name": "Bench", "ruleset": "great-cosmos"}).json()
    gm = {"Authorization": f"Bearer {camp['gm_token']}"}
    sheet = {"race": "humain", "stats": {"force": 68, "esprit": 50, "charisme": 40}, "hp_max": 30, "mp_max": 10}
    sheet["stats"] |= {"agilite": 55, "precision": 45, "chance": 60}
    hero = http.post(
        f"/v1/campaigns/{camp['id']}/characters", json={"name": "H", "kind": "pc", "sheet": sheet}, headers=gm
    )
    assert hero.status_code == 201, hero.text
    r = http.post(f"/v1/characters/{hero.json()['id']}/tests", json={"stat": "force", "seed": 1}, headers=gm)
    assert r.status_code == 201, r.text
    seed = http.get(f"/v1/campaigns/{camp['id']}/export", headers=gm).json()
    entry = seed["log"][0]
    log = []
    for _ in range(int(megabytes * 1e6) // len(json.dumps(entry)) + 1):
        eid = uuid.uuid4().hex
        log.append({**entry, "id": eid, "body": {**entry["body"], "id": eid}})
    return json.dumps({**seed, "log": log}).encode(), camp["id"], gm


def _one_import(base: str, http, raw: bytes, cid: str, gm: dict[str, str]) -> tuple[float, list[float]]:
    import httpx

    took: list[float] = []

    def send() -> None:
        with httpx.Client(base_url=base, timeout=600.0) as other:
            started = time.perf_counter()
            r = other.post("/v1/campaigns/import", params={"dry_run": "true"}, content=raw)
            took.append(time.perf_counter() - started)
            assert r.status_code == 200, r.text[:300]

    waits: list[float] = []
    importing = threading.Thread(target=send)
    importing.start()
    while importing.is_alive():
        for path, headers in (("/v1/rulesets", {}), (f"/v1/campaigns/{cid}", gm)):
            started = time.perf_counter()
            assert http.get(path, headers=headers).status_code == 200
            if importing.is_alive():
                waits.append(time.perf_counter() - started)
        time.sleep(0.02)
    importing.join()
    return took[0], waits or [0.0]


def revision_of(tree: Path) -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    return found.stdout.strip() or "no git"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, help="entries (default 10,000); with --during: MB (17)")
    parser.add_argument("--during", action="store_true", help="the other requests' waits during an import")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--combat", action="store_true", help="a log of combat entries (without --during)")
    options = parser.parse_args()
    if options.during:
        during(options.size or 17, options.tree.resolve(), options.rounds)
    else:
        main(int(options.size or 10_000), options.combat, options.rounds)
