"""The hot path in-process, for A/B of two trees of the code: min, p25 and median ms
per request of POST /v1/characters/{id}/tests over batches of 100 (robust to load spikes).

    cd <tree A> && /work/main/.venv/bin/python bench/ab_hot_path.py 15
    cd <tree B> && /work/main/.venv/bin/python bench/ab_hot_path.py 15     # alternate A, B, A, B…

Same app, sheet and inline threadpool as profile_hot_path.py; a fresh SQLite WAL file. ~20 s.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository root on sys.path)
import profile_hot_path as hot


async def measure(batches: int) -> list[float]:
    import httpx

    from app.main import app

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ab") as c:
        camp = (await c.post("/v1/campaigns", json={"name": "AB", "ruleset": "great-cosmos"})).json()
        auth = {"Authorization": f"Bearer {camp['gm_token']}"}
        r = await c.post(
            f"/v1/campaigns/{camp['id']}/characters",
            headers=auth,
            json={"name": "Hero", "kind": "pc", "sheet": hot.GC_SHEET},
        )
        url = f"/v1/characters/{r.json()['id']}/tests"
        for _ in range(100):
            assert (await c.post(url, headers=auth, json={"stat": "force"})).status_code == 201
        times = []
        for _ in range(batches):
            t0 = time.perf_counter()
            for _ in range(100):
                assert (await c.post(url, headers=auth, json={"stat": "force"})).status_code == 201
            times.append((time.perf_counter() - t0) * 10)  # ms per request
        return sorted(times)


def main() -> None:
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='jdr-ab-')) / 'ab.db'}"
    os.environ.update({"DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"})
    from app.core.migrations import upgrade_head

    upgrade_head(url)
    hot.inline_threadpool()
    t = asyncio.run(measure(batches))
    print(f"min {t[0]:.3f} p25 {t[len(t) // 4]:.3f} median {t[len(t) // 2]:.3f} ms/request ({batches} batches of 100)")


if __name__ == "__main__":
    main()
