"""Export and import of a campaign with a 10,000-entry log (issue 29 item 2): the import, one
transaction, should take at most 10x the export's time. In process (TestClient), on a fresh SQLite
file (or DATABASE_URL). Run: .venv/bin/python bench/bench_import.py [entries]"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid

from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.migrations import upgrade_head
from app.main import create_app


def main(entries: int = 10_000) -> None:
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
        client.post(f"/v1/campaigns/{camp['id']}/rolls", json={"expression": "3d6", "seed": 1}, headers=gm)
        seed = client.get(f"/v1/campaigns/{camp['id']}/export", headers=gm).json()
        entry = seed["log"][0]
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
    print(f"{entries} entries: export {export_s:.3f} s, import {import_s:.3f} s, ratio {import_s / export_s:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
