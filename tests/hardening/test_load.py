"""Issue 10, items 1 and 2: the service cannot be wedged by concurrent requests.

A real uvicorn (one worker) on the suite's database. Liveness only, with
generous bounds: every request of a burst is answered (200, or 503 with
Retry-After when the server sheds load) within 10 s, never a 500 nor a hang,
and the service answers normally right after."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from tests.factories import RULESETS
from tests.hardening.conftest import bearer

BURST = 300
ANSWER_WITHIN = 10.0  # each request's httpx timeouts: a request not answered in time is counted unanswered
# the whole burst ends (nothing hangs): a liveness bound, generous on the shared 2-core machine (it is no
# speed claim: the old `ANSWER_WITHIN + 5` was a wall-clock assert on a loaded CI; its speed is bench/'s)
BURST_ENDS_WITHIN = 60.0


async def _burst(url: str, path: str, headers: dict[str, str], n: int) -> list[int | str]:
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=ANSWER_WITHIN) as http:

        async def one() -> int | str:
            try:
                r = await http.get(path, headers=headers)
            except httpx.HTTPError as exc:
                return type(exc).__name__
            if r.status_code == 503:
                assert r.headers.get("Retry-After"), r.headers
                assert r.headers["content-type"].startswith("application/problem+json")
            return r.status_code

        return await asyncio.gather(*(one() for _ in range(n)))


def _check_burst(statuses: list[int | str], elapsed: float) -> None:
    unanswered = [s for s in statuses if s not in (200, 503)]
    assert not unanswered, (
        f"{len(unanswered)} of {len(statuses)} not answered 200/503: {sorted(set(map(str, unanswered)))}"
    )
    assert statuses.count(200) >= 1, statuses  # shedding load is not refusing everything
    assert elapsed < BURST_ENDS_WITHIN, elapsed


def _normal_after(url: str, token: str, character_id: str) -> None:
    with httpx.Client(base_url=url, timeout=5.0) as http:
        assert http.get("/healthz").status_code == 200
        assert http.get("/readyz").status_code == 200
        r = http.get(f"/v1/characters/{character_id}", headers=bearer(token))
        assert r.status_code == 200, r.text


@pytest.mark.slow
def test_bursts_of_unauthenticated_readyz_and_character_reads_are_answered(live):
    server = live.start(workers=1)
    cid, token, character_id = live.campaign(server, "great-cosmos")

    async def both() -> list[list[int | str]]:
        return await asyncio.gather(
            _burst(server.url, "/readyz", {}, BURST),
            _burst(server.url, f"/v1/characters/{character_id}", bearer(token), BURST),
        )

    for _round in range(2):  # and again: nothing stays wedged
        start = time.monotonic()
        for statuses in asyncio.run(both()):
            _check_burst(statuses, time.monotonic() - start)
        _normal_after(server.url, token, character_id)


LIVENESS_SECONDS = 10.0


@pytest.mark.slow
def test_healthz_answers_while_the_database_work_is_saturated(live):
    """/healthz never touches the database nor waits behind it."""
    server = live.start(workers=1)
    cid, token, character_id = live.campaign(server, "great-cosmos")

    async def scenario() -> tuple[list, float]:
        reads = asyncio.create_task(_burst(server.url, f"/v1/campaigns/{cid}/characters", bearer(token), BURST))
        await asyncio.sleep(0.2)
        async with httpx.AsyncClient(base_url=server.url, timeout=ANSWER_WITHIN) as http:
            start = time.monotonic()
            r = await http.get("/healthz")
            assert r.status_code == 200
            took = time.monotonic() - start
        return await reads, took

    statuses, took = asyncio.run(scenario())
    # liveness, not speed (issue 22 item 3: no speed assert on the shared CI machine): behind the
    # saturated database /healthz would wait for the burst; how fast it answers is bench/asgi_cost.py's
    assert took < LIVENESS_SECONDS, took
    _check_burst(statuses, 0)


@pytest.mark.parametrize("ruleset", RULESETS[:1])
def test_keyed_and_unkeyed_writes_do_not_deadlock(live, ruleset):
    """Item 2: 8 threads x 5 free rolls, half with an Idempotency-Key: every one
    is answered 201 (on SQLite they used to wait on each other until timeouts)."""
    server = live.start(workers=1)
    cid, token, _ = live.campaign(server, ruleset)
    statuses: list[int | str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        with httpx.Client(base_url=server.url, timeout=60.0) as http:
            for i in range(5):
                headers = bearer(token)
                if n % 2:
                    headers["Idempotency-Key"] = f"k-{n}-{i}"
                try:
                    status: int | str = http.post(
                        f"/v1/campaigns/{cid}/rolls", headers=headers, json={"expression": "1d6", "seed": n * 10 + i}
                    ).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                with lock:
                    statuses.append(status)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert statuses == [201] * 40, statuses
    assert time.monotonic() - start < 30, "40 small writes took more than 30 s"
