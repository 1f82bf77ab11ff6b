"""`create_app(settings)` serves the database of those settings, not the environment's
(an app embedded by an integrator, or two apps in one process)."""

from __future__ import annotations

import sqlite3

from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.migrations import upgrade_head
from app.main import create_app


def test_an_app_made_with_settings_reads_and_writes_their_database(tmp_path, monkeypatch):
    own, other = tmp_path / "own.db", tmp_path / "environment.db"
    upgrade_head(f"sqlite:///{own}")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{other}")  # not migrated: any use of it would fail
    app = create_app(Settings(database_url=f"sqlite:///{own}", admin_token=None, rate_limit_per_minute=0))
    with TestClient(app) as client:
        made = client.post("/v1/campaigns", json={"name": "Ici", "ruleset": "great-cosmos"})
        assert made.status_code == 201, made.text
        gm = {"Authorization": f"Bearer {made.json()['gm_token']}"}
        hero = client.post(
            f"/v1/campaigns/{made.json()['id']}/characters",
            headers=gm,
            json={
                "name": "Aiko",
                "kind": "pc",
                "sheet": {
                    "race": "humain",
                    "hp_max": 100,
                    "mp_max": 50,
                    "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60},
                },
            },
        )
        assert hero.status_code == 201, hero.text
        rolled = client.post(f"/v1/characters/{hero.json()['id']}/tests", headers=gm, json={"stat": "force"})
        assert rolled.status_code == 201, rolled.text
        assert (
            client.get(f"/v1/campaigns/{made.json()['id']}/rolls", headers=gm).json()["items"][0]["id"]
            == rolled.json()["id"]
        )
    with sqlite3.connect(own) as db:
        assert db.execute("SELECT count(*) FROM roll_log").fetchone() == (1,)
    assert not other.exists() or other.stat().st_size == 0
