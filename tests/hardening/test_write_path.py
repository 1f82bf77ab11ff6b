"""Issue 16: on SQLite a write whose turn has come runs on the event loop (no thread
hand-off) — but only when the database is free at once. These tests hold SQLite's
write lock from another process (this one) and check the server never parks its
loop behind it: /healthz and reads answer meanwhile, and the writes go through
once the lock is released, nothing lost."""

from __future__ import annotations

import asyncio
import sqlite3

import httpx
import pytest

from tests.factories import TEST_BODIES
from tests.hardening.conftest import bearer, read_log_oldest_first

pytestmark = pytest.mark.slow


def _sqlite_path(database_url: str) -> str:
    if not database_url.startswith("sqlite"):
        pytest.skip("SQLite's single write lock")
    return database_url.split("///", 1)[1]


def test_writes_wait_for_a_lock_held_by_another_process_without_parking_the_loop(live):
    server = live.start(workers=1)
    cid, token, character_id = live.campaign(server, "great-cosmos")
    holder = sqlite3.connect(_sqlite_path(live.database_url), isolation_level=None, timeout=30)
    holder.execute("BEGIN IMMEDIATE")  # another process writes (and takes its time)

    async def scenario() -> tuple[list[int], list[float], list[int]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            writes = [
                asyncio.create_task(
                    http.post(
                        f"/v1/characters/{character_id}/tests", headers=bearer(token), json=TEST_BODIES["great-cosmos"]
                    )
                )
                for _ in range(3)
            ]
            await asyncio.sleep(0.5)
            assert not any(w.done() for w in writes), "a write went through while another process held the lock"
            waiting, reads = [], []
            for _ in range(3):  # the loop answers meanwhile: a bare route and a read of the database
                assert (await http.get("/healthz")).status_code == 200
                reads.append((await http.get(f"/v1/characters/{character_id}", headers=bearer(token))).status_code)
                waiting.append(not any(w.done() for w in writes))  # answered while every write still waited
            assert not any(w.done() for w in writes)
            holder.execute("COMMIT")
            return [(await w).status_code for w in writes], waiting, reads

    try:
        statuses, waiting, reads = asyncio.run(scenario())
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
    assert statuses == [201, 201, 201]
    assert reads == [200, 200, 200]
    assert waiting == [True, True, True], waiting
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert [e["kind"] for e in read_log_oldest_first(http, cid, token)] == ["test"] * 3


def test_writes_resume_on_the_loop_after_a_lock_held_elsewhere(live):
    """After waiting in a thread once, writes are answered as before (the loop's writer is not left locked)."""
    server = live.start(workers=1)
    cid, token, character_id = live.campaign(server, "great-cosmos")
    holder = sqlite3.connect(_sqlite_path(live.database_url), isolation_level=None, timeout=30)
    holder.execute("BEGIN IMMEDIATE")
    with httpx.Client(base_url=server.url, timeout=30) as http:

        async def first() -> int:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as a:
                pending = asyncio.create_task(
                    a.post(
                        f"/v1/characters/{character_id}/tests", headers=bearer(token), json=TEST_BODIES["great-cosmos"]
                    )
                )
                await asyncio.sleep(0.3)
                holder.execute("COMMIT")
                return (await pending).status_code

        assert asyncio.run(first()) == 201
        holder.close()
        ids = []
        for _ in range(5):
            r = http.post(
                f"/v1/characters/{character_id}/tests",
                headers=bearer(token),
                json=TEST_BODIES["great-cosmos"],
                timeout=5,
            )
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        assert [e["id"] for e in read_log_oldest_first(http, cid, token)][1:] == ids
