"""Shared pieces of the hardening tests: a valid sheet per ruleset, a seeded
campaign per ruleset (through the HTTP API), and real uvicorn servers: a pool of
them kept for the session (`Pool`; the `live` fixture of tests/conftest.py)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterator

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]

from tests.factories import RULESETS, SHEETS, TEST_BODIES  # noqa: E402, F401  (the one home of test data)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --- a real server --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVER_DEFAULTS = {"ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0"}  # over the environment's


@dataclass
class Server:
    url: str
    database_url: str
    workers: int
    process: "subprocess.Popen | Forked | None" = None
    log: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # settings of this server, over the defaults below
    zygote: "Zygote | None" = None  # forked from it (the pool's and a test's own), else a `python -m uvicorn`

    def start(self, timeout: float = 60.0) -> "Server":
        """Started, and ready (`/readyz`) within `timeout`: a liveness bound, generous (a server of two
        workers took 14-17 s to be ready here on PostgreSQL under a load of 8 on 2 cores; 20 s was met)."""
        port = int(self.url.rsplit(":", 1)[1])
        env = {**os.environ, "DATABASE_URL": self.database_url, **SERVER_DEFAULTS, **self.env}
        if self.zygote is not None:
            self.process = self.zygote.fork(env, port, self.workers, self.log)
        else:
            self.process = self._spawn(env, port)
        deadline = time.monotonic() + timeout
        # one client for the polls (a new httpx client costs ~0.1 s of CPU, its TLS context,
        # taken from the server starting beside it)
        with httpx.Client(base_url=self.url, timeout=1.0) as http:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"uvicorn exited with {self.process.returncode}: {self.tail()}")
                try:
                    if http.get("/readyz").status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
        self.kill()  # not left running after the test that gave up on it
        raise RuntimeError(f"uvicorn did not become ready in {timeout} s: {self.tail()}")

    def _spawn(self, env: dict[str, str], port: int) -> subprocess.Popen:
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "app.main:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(self.workers),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the server's whole process group (uvicorn and its workers), by its id."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def tail(self) -> str:
        if self.log and self.log.exists():
            return self.log.read_text(errors="replace")[-4000:]
        return ""


class Forked:
    """A server the zygote forked, seen as the `Popen` a `Server` keeps (pid, poll, wait): it is the
    zygote's child (reaped by it as it ends), so it is alive while its pid answers a signal 0."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = -signal.SIGKILL  # gone (its status went to the zygote)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"server {self.pid}", timeout or 0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


class Zygote:
    """`python -m tests.hardening.zygote`: the app imported once, each pooled server forked from it
    (see that module). Started at the first server a worker needs, ended with the pool."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def fork(self, env: dict[str, str], port: int, workers: int, log: Path | None) -> Forked:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.hardening.zygote"],
                cwd=ROOT,
                env={**os.environ, **SERVER_DEFAULTS},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"env": env, "host": "127.0.0.1", "port": port, "workers": workers, "log": str(log or "")}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the server zygote exited with {self.process.wait()}")
        return Forked(json.loads(answer)["pid"])

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the end of its requests: it exits
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def settings_in_environment() -> dict[str, str]:
    """The app's settings this process's environment gives a server (a test may set some
    with `monkeypatch.setenv`): part of what a pooled server is chosen by."""
    from app.core.config import Settings

    names = {name.upper() for name in Settings.model_fields} - {"DATABASE_URL", *SERVER_DEFAULTS}
    return {name: value for name, value in os.environ.items() if name.upper() in names}


class Pool:
    """Real servers kept for the whole session (each start costs seconds: importing the app
    alone takes ~2.7 s here), keyed by their workers and settings, all on the worker's
    database; at most `size` stay up (`_evicted`). A server a test killed is started again."""

    # a pooled server outlives its test: per-address counts would carry over from test to test
    # (every test connects from 127.0.0.1), so they are off unless a test asks for them; and its
    # webhook delivery loop would take the webhooks of a later test's own servers (woken by the
    # same notification), so it is off unless a test asks for it. On PostgreSQL, the pooled servers of
    # both xdist workers (up to 4 each, several with 2-4 worker processes) and the tests' own servers
    # share one server's max_connections (100 by default): with the default of 10 connections a
    # process, a full run reached 104 and was refused ("too many clients"); 6 a process (5 pooled,
    # 1 LISTEN) keeps the run under ~70
    SHARED: ClassVar[dict[str, str]] = {
        "AUTH_FAILURES_PER_MINUTE": "0",
        "CAMPAIGNS_PER_HOUR_PER_ADDRESS": "0",
        "WEBHOOK_DELIVERY": "false",
        "DB_MAX_CONNECTIONS": "6",
    }

    def __init__(self, database_url: str, logs: Path, size: int = 4):
        self.database_url, self.logs, self.size = database_url, logs, size
        self.servers: dict[tuple, Server] = {}  # least recently used first
        self.plain = tuple(sorted({**self.SHARED, **settings_in_environment()}.items()))  # no test's own settings
        self.started = itertools.count()
        # JDR_SERVER_ZYGOTE=0: every server a `python -m uvicorn` of its own (to compare, or to rule the zygote out)
        self.zygote = Zygote() if os.environ.get("JDR_SERVER_ZYGOTE", "1") != "0" else None

    def get(self, workers: int, env: dict[str, str]) -> Server:
        env = {**self.SHARED, **settings_in_environment(), **env}
        key = (workers, tuple(sorted(env.items())))
        server = self.servers.pop(key, None)
        if server is None or server.process is None or server.process.poll() is not None:
            server = Server(
                url=f"http://127.0.0.1:{free_port()}",
                database_url=self.database_url,
                workers=workers,
                log=self.logs / f"uvicorn-{next(self.started)}.log",
                env=env,
                zygote=self.zygote,
            ).start()
        self.servers[key] = server
        while len(self.servers) > self.size:
            self.servers.pop(self._evicted(keep=key)).kill()
        return server

    def _evicted(self, keep: tuple) -> tuple:
        """The least recently used server with settings of a test's own (a limit, a cap: rarely
        asked for twice), else the least recently used: the plain servers most tests share stay up
        (evicting them cost two more starts of ~5 s in a run of the server modules here)."""
        older = [key for key in self.servers if key != keep]
        return next((key for key in older if key[1] != self.plain), older[0])

    def close(self) -> None:
        for server in self.servers.values():
            server.kill()
        if self.zygote is not None:
            self.zygote.close()


@dataclass
class Live:
    """Real servers on the test database (the pool's, or a test's own), and the campaigns
    they created (the database is emptied after the test: the server commits for real)."""

    database_url: str
    tmp_path: Path
    pool: Pool
    servers: list[Server]
    campaigns: list[str]

    def start(self, workers: int = 1, *, own: bool = False, **env: str) -> Server:
        """A running server: the pool's with these settings, or (`own`: a test that kills it)
        a new one, killed at the end of the test."""
        if not own:
            return self.pool.get(workers, env)
        server = Server(
            url=f"http://127.0.0.1:{free_port()}",
            database_url=self.database_url,
            workers=workers,
            log=self.tmp_path / "uvicorn.log",
            env={"DB_MAX_CONNECTIONS": Pool.SHARED["DB_MAX_CONNECTIONS"], **env},
            zygote=self.pool.zygote,
        )
        self.servers.append(server)
        return server.start()

    def campaign(self, server: Server, ruleset: str, sheet: dict[str, Any] | None = None) -> tuple[str, str, str]:
        cid, token, character_id = create_campaign_over_http(server.url, ruleset, sheet)
        self.campaigns.append(cid)
        return cid, token, character_id


def purge_campaigns(engine, campaign_ids: list[str]) -> None:
    """Delete what the servers committed for these campaigns, children first."""
    from sqlalchemy import bindparam, text

    ids = {"ids": list(campaign_ids)}
    statements = [
        "DELETE FROM idempotency WHERE token_hash IN (SELECT token_hash FROM credential WHERE campaign_id IN :ids)",
        'DELETE FROM "event" WHERE campaign_id IN :ids',
        "DELETE FROM encounter_action WHERE encounter_id IN (SELECT id FROM encounter WHERE campaign_id IN :ids)",
        "DELETE FROM combatant WHERE encounter_id IN (SELECT id FROM encounter WHERE campaign_id IN :ids)",
        "DELETE FROM encounter WHERE campaign_id IN :ids",
        "DELETE FROM roll_log_character WHERE seq IN (SELECT seq FROM roll_log WHERE campaign_id IN :ids)",
        "DELETE FROM roll_log WHERE campaign_id IN :ids",
        'DELETE FROM "character" WHERE campaign_id IN :ids',
        "DELETE FROM credential WHERE campaign_id IN :ids",
        "DELETE FROM player WHERE campaign_id IN :ids",
        "DELETE FROM dice_epoch WHERE campaign_id IN :ids",
        "DELETE FROM campaign WHERE id IN :ids",
    ]
    with engine.begin() as conn:
        for sql in statements:
            conn.execute(text(sql).bindparams(bindparam("ids", expanding=True)), ids)


def create_campaign_over_http(url: str, ruleset: str, sheet: dict[str, Any] | None = None) -> tuple[str, str, str]:
    """A fresh campaign and one character, committed by the server: (campaign id, GM token, character id)."""
    with httpx.Client(base_url=url, timeout=10.0) as http:
        r = http.post("/v1/campaigns", json={"name": "Hardening", "ruleset": ruleset})
        assert r.status_code == 201, r.text
        cid, token = r.json()["id"], r.json()["gm_token"]
        r = http.post(
            f"/v1/campaigns/{cid}/characters",
            headers=bearer(token),
            json={"name": "Target", "kind": "pc", "sheet": sheet or SHEETS[ruleset]},
        )
        assert r.status_code == 201, r.text
        return cid, token, r.json()["id"]


def read_log_oldest_first(http: httpx.Client, cid: str, token: str, **params: Any) -> list[dict[str, Any]]:
    """The whole roll log (every page), oldest first."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"limit": 500, **params, **({"cursor": cursor} if cursor else {})}
        r = http.get(f"/v1/campaigns/{cid}/rolls", params=query, headers=bearer(token))
        assert r.status_code == 200, r.text
        items.extend(r.json()["items"])
        cursor = r.json()["next_cursor"]
        if not cursor:
            return list(reversed(items))


def check_karma_fold(
    http: httpx.Client, cid: str, token: str, character_id: str, initial_karma: int, initial_version: int
) -> tuple[int, dict[str, Any]]:
    """The stored karma is the fold of the logged tests' karma effects, in log order,
    and the version counts one sheet write per logged test that moved the karma
    (a test that leaves karma as it was writes nothing). Returns (tests logged, character)."""
    log = [e for e in read_log_oldest_first(http, cid, token, character_id=character_id) if e["kind"] == "test"]
    karma = initial_karma
    writes = 0
    for i, entry in enumerate(log):
        effect = entry["effects"].get("karma")
        assert effect is not None, f"test {i} has no karma effect: {entry}"
        assert effect["before"] == karma, f"log entry {i} starts from karma {effect['before']}, previous after {karma}"
        writes += effect["after"] != effect["before"]
        karma = effect["after"]
    r = http.get(f"/v1/characters/{character_id}", headers=bearer(token))
    assert r.status_code == 200, r.text
    character = r.json()
    assert character["sheet"]["karma"] == karma, (character["sheet"]["karma"], karma)
    assert character["version"] == initial_version + writes, (character["version"], initial_version, writes, len(log))
    return len(log), character
