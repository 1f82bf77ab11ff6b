"""Issue 28 item 4: scale out on one database.

Real servers on the test database: 1, 2 and 4 workers, each time beside a second instance on
another port, serve a burst of writes spread over both with no error, and every event reaches
every stream of every worker and instance exactly once, in order. On PostgreSQL the streams are
woken by LISTEN/NOTIFY (app.core.notify); their fallback poll is set to a minute here, so a
stream that waited for it could not get its events within the test's bound... unless its LISTEN
connection were down, when it polls every half second: the notification path itself is tested
in-process (tests/services/test_notify.py)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import httpx
import pytest
from sqlalchemy import text

from app.core.db import APPLICATION, application_name

from tests.factories import TEST_BODIES
from tests.hardening.conftest import bearer
from tests.hardening.test_streams import SSE, events_url

pytestmark = pytest.mark.slow

GC = "great-cosmos"
BURST = 48
MAX_CONNECTIONS = 6  # what the tests' servers open at most a process (tests/hardening/conftest.py, Pool.SHARED)
SETTINGS = {
    "EVENT_STREAMS_PER_TOKEN": "100",
    "EVENT_FALLBACK_POLL_SECONDS": "60",
    "DB_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
}


def _read(stream: SSE, expected: int, got: list[int], errors: list[str]) -> None:
    try:
        while len(got) < expected:
            got.append(int(stream.next_event()["id"]))
    except Exception as exc:  # a read timeout, a closed stream: reported by the test
        errors.append(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_issue28_item4_workers_and_two_instances_serve_a_burst_and_deliver_every_event_once(live, database, workers):
    first = live.start(workers=workers, **SETTINGS)
    second = live.start(own=True, **SETTINGS)  # another instance, another port, the same database
    cid, token, character = live.campaign(first, GC)
    with ExitStack() as stack, httpx.Client(timeout=10.0) as http:
        streams: list[SSE] = []
        starts: list[int] = []
        for server, count in ((first, 3 * workers), (second, 2)):  # connections spread over the workers
            for _ in range(count):
                stream = SSE(stack, events_url(server, cid), token)
                assert stream.next_frame() == {"retry": "2000"}
                starts.append(int(stream.next_frame()["id"]))  # the present: subscribed from here on
                streams.append(stream)
        assert len(set(starts)) == 1 and starts[0] >= 1  # the campaign and its character: nothing since
        results: list[list[int]] = [[] for _ in streams]
        errors: list[str] = []
        readers = [
            threading.Thread(target=_read, args=(s, BURST, got, errors), daemon=True)
            for s, got in zip(streams, results, strict=True)
        ]
        for reader in readers:
            reader.start()

        def write(n: int) -> int:
            server = (first, second)[n % 2]
            r = http.post(f"{server.url}/v1/characters/{character}/tests", json=TEST_BODIES[GC], headers=bearer(token))
            return r.status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(write, range(BURST)))
        assert statuses == [201] * BURST  # no error, whichever instance and worker took it
        deadline = time.monotonic() + 30
        for reader in readers:
            reader.join(timeout=max(0.1, deadline - time.monotonic()))
        assert errors == []
        for got, start in zip(results, starts, strict=True):  # every stream: each new event once, in order
            assert got == list(range(start + 1, start + BURST + 1))
        if database.dialect.name == "postgresql":  # each worker within DB_MAX_CONNECTIONS, its LISTEN included
            per_process = _connections(database)
            assert len(per_process) >= 2 and max(per_process.values()) <= MAX_CONNECTIONS, per_process


def _connections(engine) -> dict[str, int]:
    """The servers' connections to the test database, per process (`application_name`, app.core.db)."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name LIKE :app AND application_name <> :mine GROUP BY application_name"
            ),
            {"app": f"{APPLICATION}/%", "mine": application_name()},
        ).all()
    return {name: count for name, count in rows}
