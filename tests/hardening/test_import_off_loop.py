"""API.md round 4, "Import vouches for nothing it did not roll": an import is parsed and checked
off the event loop, so the worker's other requests are not held up by it. A real server (one
worker), a 17 MB campaign bundle sent with `dry_run`, and meanwhile a request that touches no
database (`GET /v1/rulesets`) and one that reads the campaign, one after the other: none waits more
than a generous bound (the aim is 0.5 s; the machine is shared). Before, the body was parsed,
validated, checked and written on the loop: those requests waited 2.6-5 s (bench/bench_import.py
gives the figures)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import httpx

from tests.hardening.conftest import bearer

BUNDLE_BYTES = 17_000_000
BOUND_S = 1.5  # generous: the contract's aim is 0.5 s, on a machine shared by other jobs


def big_bundle(http: httpx.Client, cid: str, gm: dict[str, str], character_id: str, size: int) -> bytes:
    """The campaign's export with its one test copied (new ids) until the bundle is `size` bytes."""
    r = http.post(f"/v1/characters/{character_id}/tests", json={"stat": "force", "seed": 1}, headers=gm)
    assert r.status_code == 201, r.text
    bundle = http.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    entry = next(e for e in bundle["log"] if e["kind"] == "test")
    count = size // len(json.dumps(entry)) + 1
    log = []
    for _ in range(count):
        eid = uuid.uuid4().hex
        log.append({**entry, "id": eid, "body": {**entry["body"], "id": eid}})
    return json.dumps({**bundle, "log": log}).encode()


def test_other_requests_of_the_worker_are_not_held_up_by_a_17_mb_import(live):
    server = live.start(workers=1)
    cid, token, character_id = live.campaign(server, "great-cosmos")
    gm = bearer(token)
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        raw = big_bundle(http, cid, gm, character_id, BUNDLE_BYTES)
    assert len(raw) >= BUNDLE_BYTES

    answer: dict[str, Any] = {}

    def send() -> None:
        with httpx.Client(base_url=server.url, timeout=300.0) as http:
            started = time.monotonic()
            r = http.post(
                "/v1/campaigns/import",
                params={"dry_run": "true"},
                content=raw,
                headers={"Content-Type": "application/json"},
            )
            answer.update(response=r, took=time.monotonic() - started)

    waits: list[tuple[float, str]] = []
    importing = threading.Thread(target=send)
    with httpx.Client(base_url=server.url, timeout=60.0) as http:
        http.get("/v1/rulesets")  # the connection open before the import starts
        importing.start()
        while importing.is_alive():
            for path, headers in (("/v1/rulesets", {}), (f"/v1/campaigns/{cid}", gm)):
                started = time.monotonic()
                r = http.get(path, headers=headers)
                assert r.status_code == 200, r.text
                if importing.is_alive():
                    waits.append((time.monotonic() - started, path))
            time.sleep(0.02)
    importing.join()
    r = answer["response"]
    assert r.status_code == 200, r.text[:500]
    assert r.json()["valid"] is True and r.json()["counts"]["log"] > 10_000
    assert waits, "no request overlapped the import"
    worst = max(waits)
    assert worst[0] < BOUND_S, f"{worst[1]} waited {worst[0]:.2f} s during a {answer['took']:.1f} s import"
    # the requests overlapped the import all along (else the bound says nothing)
    assert len(waits) >= 10, (len(waits), answer["took"])
