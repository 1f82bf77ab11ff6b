"""The standalone verifier (`python -m app.verify`, docs/verify.md) against a real server: a
campaign salted by a player, server dice of a test, free rolls and a hidden GM roll, the epoch
revealed; every die the player and the GM can see recomputes (status 0), the hidden one is
counted as not visible to the player, the next epoch's as not yet revealed. Then one die of the
stored log is altered in the database, as a dishonest server would: status 1 and its MISMATCH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, update

from app.models.tables import LogEntry
from tests.hardening.conftest import bearer

ROOT = Path(__file__).resolve().parents[2]


def verifier(url: str, cid: str, token: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JDR_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "app.verify", "--url", url, "--campaign", cid],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def server_dice(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [roll for roll in entry["rolls"] if "epoch" in roll]


def test_the_verifier_passes_the_servers_dice_and_finds_one_altered_in_the_database(live, database):
    server = live.start()
    cid, gm_token, hero = live.campaign(server, "great-cosmos")
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        gm = bearer(gm_token)
        r = http.post(f"/v1/campaigns/{cid}/players", json={"name": "Alice"}, headers=gm)
        assert r.status_code == 201, r.text
        alice = bearer(r.json()["token"])
        r = http.post(f"/v1/campaigns/{cid}/dice-epochs/current/salts", json={"salt": "Alice's salt"}, headers=alice)
        assert r.status_code in (200, 201), r.text

        r = http.post(f"/v1/characters/{hero}/tests", json={"stat": "force"}, headers=gm)  # GC: a d100
        assert r.status_code == 201, r.text
        test_entry = r.json()
        r = http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "3d6+2", "purpose": "damage"}, headers=alice)
        assert r.status_code == 201, r.text
        damage = r.json()
        r = http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "d20", "hidden": True}, headers=gm)
        assert r.status_code == 201, r.text
        r = http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "d6", "dice": [4]}, headers=gm)  # table
        assert r.status_code == 201, r.text
        assert [roll.get("epoch") for roll in r.json()["rolls"]] == [None]

        r = http.get(f"/v1/campaigns/{cid}/dice-epochs", headers=alice)
        assert r.status_code == 200, r.text
        [epoch] = r.json()["items"]
        assert epoch["salts"] == ["Alice's salt"] and "seed" not in epoch
        assert epoch["dice"] == len(server_dice(test_entry)) + 3 + 1  # the test's, 3d6, the hidden d20
        r = http.post(f"/v1/campaigns/{cid}/dice-epochs/current/reveal", headers=gm)
        assert r.status_code in (200, 201), r.text
        r = http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "d100"}, headers=alice)  # the next epoch
        assert r.status_code == 201, r.text

    hidden_k = epoch["dice"] - 1
    done = verifier(server.url, cid, alice["Authorization"].removeprefix("Bearer "))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "epochs: 2 (1 revealed, 1 not yet revealed)" in lines
    assert (
        f"epoch {epoch['id']}: revealed, commitment ok, {epoch['dice'] - 1} of its {epoch['dice']} dice checked,"
        f" 1 not visible to you (k={hidden_k})"
    ) in lines
    assert f"dice checked: {epoch['dice'] - 1}, mismatches: 0" in lines
    assert "not yet revealed: 1 dice; outside any epoch (table, seed, imported): 1 dice" in lines
    done = verifier(server.url, cid, gm_token)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"epoch {epoch['id']}: revealed, commitment ok, {epoch['dice']} of its {epoch['dice']} dice checked" in (
        done.stdout.splitlines()
    )

    first = server_dice(damage)[0]
    altered = first["value"] % 6 + 1
    with database.begin() as conn:
        body = conn.execute(
            select(LogEntry.__table__.c.body).where(LogEntry.__table__.c.id == damage["id"])
        ).scalar_one()
        stored = next(roll for roll in body["rolls"] if roll.get("k") == first["k"])
        assert stored["value"] == first["value"]
        stored["value"] = altered
        conn.execute(update(LogEntry.__table__).where(LogEntry.__table__.c.id == damage["id"]).values(body=body))
    done = verifier(server.url, cid, alice["Authorization"].removeprefix("Bearer "))
    assert done.returncode == 1, done.stdout + done.stderr
    mismatch = (
        f"MISMATCH epoch={epoch['id']} k={first['k']} entry={damage['id']} die=d6 logged={altered}"
        f" derived={first['value']}"
    )
    assert mismatch in done.stdout.splitlines() and "mismatches: 1" in done.stdout
