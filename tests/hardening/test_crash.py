"""Crash safety: SIGKILL the server in the middle of a burst of writes, restart
it on the same database, and check that the log and the sheet agree: every
logged test's karma effect is in the sheet, no sheet change lacks its log
entry, and every write the client saw acknowledged (201) survived."""

from __future__ import annotations

import signal
import threading

import httpx
import pytest

from tests.hardening.conftest import bearer, check_karma_fold, read_log_oldest_first

pytestmark = pytest.mark.slow

KILL_AFTER = 25  # acknowledged writes before the kill
WRITERS = 4


def test_sigkill_mid_burst_leaves_log_and_sheets_consistent(live):
    server = live.start(workers=1, own=True)  # killed here
    cid, token, character_id = live.campaign(server, "great-cosmos")
    acknowledged: list[dict] = []
    lock = threading.Lock()
    enough = threading.Event()
    stop = threading.Event()

    def burst(offset: int) -> None:
        with httpx.Client(base_url=server.url, timeout=httpx.Timeout(10.0, connect=2.0)) as http:
            i = offset
            while not stop.is_set():
                try:
                    r = http.post(
                        f"/v1/characters/{character_id}/tests",
                        headers=bearer(token),
                        json={"stat": "force", "dice": [42] if i % 2 == 0 else [66]},
                    )
                except httpx.HTTPError:
                    return  # the server is gone
                i += 1
                if r.status_code == 201:
                    with lock:
                        acknowledged.append(r.json())
                        if len(acknowledged) >= KILL_AFTER:
                            enough.set()
                else:
                    assert r.status_code == 409, r.text

    threads = [threading.Thread(target=burst, args=(n,), daemon=True) for n in range(WRITERS)]
    for t in threads:
        t.start()
    try:
        assert enough.wait(30), f"only {len(acknowledged)} writes in 30 s: {server.tail()}"
        server.kill(signal.SIGKILL)  # requests are in flight: a kill in the middle of the burst
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    with lock:
        seen = list(acknowledged)

    restarted = live.start(workers=1, own=True)
    with httpx.Client(base_url=restarted.url, timeout=10.0) as http:
        logged, character = check_karma_fold(http, cid, token, character_id, initial_karma=0, initial_version=1)
        log_ids = {e["id"] for e in read_log_oldest_first(http, cid, token, character_id=character_id)}
        assert {e["id"] for e in seen} <= log_ids  # every acknowledged write survived the kill
        assert logged - len(seen) <= WRITERS  # at most the requests in flight committed unacknowledged
        # the restarted server writes on the surviving state
        r = http.post(
            f"/v1/characters/{character_id}/tests", headers=bearer(token), json={"stat": "force", "dice": [42]}
        )
        assert r.status_code == 201, r.text
        assert r.json()["effects"]["karma"]["before"] == character["sheet"]["karma"]
    print(f"\nkilled after {len(seen)} acknowledged writes; {logged} logged after restart")
