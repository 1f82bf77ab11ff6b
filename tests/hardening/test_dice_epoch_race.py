"""20 concurrent rolling requests on one campaign through a real server with two worker processes
(API.md "Verifiable server dice"): each server die gets its own number `k` of the epoch, the
numbers have no gap, the epoch's `dice` is their count, and after the reveal every die recomputes.
On SQLite and, with DATABASE_URL set, on PostgreSQL (where the epoch's row lock orders them)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.api.test_dice_epochs import check_epoch, server_dice
from tests.hardening.conftest import bearer

REQUESTS = 20


def test_twenty_concurrent_rolling_requests_get_distinct_gapless_numbers(live):
    server = live.start(workers=2)
    cid, token, character_id = live.campaign(server, "great-cosmos")
    barrier = threading.Barrier(REQUESTS, timeout=20)
    with httpx.Client(
        base_url=server.url, timeout=httpx.Timeout(60.0, connect=10.0), limits=httpx.Limits(max_connections=REQUESTS)
    ) as http:

        def fire(i: int) -> httpx.Response:
            barrier.wait()
            if i % 2:  # a test (its d100, a karma d10 maybe) or a free roll of several dice
                return http.post(f"/v1/characters/{character_id}/tests", headers=bearer(token), json={"stat": "force"})
            return http.post(f"/v1/campaigns/{cid}/rolls", headers=bearer(token), json={"expression": "3d6"})

        with ThreadPoolExecutor(max_workers=REQUESTS) as pool:
            responses = list(pool.map(fire, range(REQUESTS)))
        assert [r.status_code for r in responses] == [201] * REQUESTS, [
            r.text for r in responses if r.status_code != 201
        ]
        answered = server_dice([r.json() for r in responses])
        numbers = sorted(d["k"] for d in answered)
        assert numbers == list(range(len(answered))), numbers  # distinct, no gap
        logged = server_dice(
            http.get(f"/v1/campaigns/{cid}/rolls", params={"limit": 500}, headers=bearer(token)).json()
        )
        assert sorted(d["k"] for d in logged) == numbers
        revealed = http.post(f"/v1/campaigns/{cid}/dice-epochs/current/reveal", headers=bearer(token))
        assert revealed.status_code == 200, revealed.text
        assert revealed.json()["dice"] == len(answered)
        check_epoch(revealed.json(), logged)
