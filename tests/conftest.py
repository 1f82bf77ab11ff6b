"""Test fixtures: one migrated database per xdist worker (SQLite by default;
PostgreSQL when DATABASE_URL is set: each worker makes `<db>_gw0`, `<db>_gw1`… from
it and drops it at the end), one app for the whole session (Polar's
`tests/fixtures/base.py`: an app per test costs ~200 ms of route preparation),
reset for each test, and factories that go through the HTTP API.

In-process requests run the production write path (issue 22 item 2): the app's
own session factory and write gate — SQLite's writer on the event loop, PostgreSQL's
greenlet writer — commit for real, and a test that touches the database leaves it
empty (`database`: every table emptied when the test ends), so exact row counts hold.
Not one rolled-back transaction per test: the production factory opens connections
of its own (a loop engine on SQLite, an asyncio engine on PostgreSQL), which cannot
join a test's transaction, and a transaction held open by the test would hold
SQLite's write lock against them."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, Iterator

import httpx._transports.default as httpx_transports
import pytest
from _pytest.nodes import NodeId
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool
from sqlmodel import Session, SQLModel

from app import openapi as openapi_text
from app.api.ratelimit import RateLimiter
from app.core.config import Settings
from app.core.db import READ_ONLY, SessionOpener, build_engine, normalize_database_url
from app.core.migrations import downgrade_base, upgrade_head
from app.main import create_app
from tests import typescript_build
from tests.hardening.conftest import Live, Pool

# `app.openapi.render()` (the committed openapi.json's text) is computed at the import of three test
# modules (test_openapi, test_odds_schema, test_contract_strict), in each xdist worker: ~0.4 s of CPU each
# time; the document depends on the code only, so it is rendered once per process
openapi_text.render = cache(openapi_text.render)


def _shared_tls(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
    """httpx makes a TLS context for every client it builds (certifi's bundle parsed: ~25 ms of CPU a
    client here), even one that only ever speaks plain HTTP to a loopback server, as the tests' do (a
    suite run builds hundreds: the live-server tests, the webhook receivers' clients…). One context per
    kind (verify on or off, the same environment) for the test process; a client given a context or a
    certificate of its own still gets its own."""
    if cert is not None or not isinstance(verify, bool):
        return _TLS_OF_HTTPX(verify=verify, cert=cert, trust_env=trust_env)
    key = (verify, trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if key not in _TLS:
        _TLS[key] = _TLS_OF_HTTPX(verify=verify, cert=cert, trust_env=trust_env)
    return _TLS[key]


_TLS: dict[tuple[Any, ...], Any] = {}
_TLS_OF_HTTPX = httpx_transports.create_ssl_context
httpx_transports.create_ssl_context = _shared_tls  # what httpx's transports call (sync and async)

pytest_plugins = ["tests.fixtures"]  # the shared fixtures built on these (campaign, alice, hero…)

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1… under pytest-xdist, else ""
TS_BUILD = pytest.StashKey[tuple[Any, Path]]()  # the background TypeScript build: (its process, its state dir)


def pytest_configure(config) -> None:
    """Redis keys of this worker's servers under a prefix of their own (tests that share a
    limit through Redis choose a prefix per test on top of it). In the xdist controller: the
    TypeScript scenario's build started in the background (tests/typescript_build.py)."""
    if WORKER:
        os.environ.setdefault("REDIS_KEY_PREFIX", f"jdr-test-{WORKER}")
    elif (
        config.pluginmanager.hasplugin("xdist")
        and config.getoption("numprocesses", None)
        and typescript_build.wanted(config.args, config.invocation_params.dir)
    ):
        state = Path(tempfile.mkdtemp(prefix="jdr-ts-build-"))
        config.stash[TS_BUILD] = (typescript_build.start(state), state)


def pytest_unconfigure(config) -> None:
    process, state = config.stash.get(TS_BUILD, (None, None))
    if process is not None:
        typescript_build.stop(process)
        shutil.rmtree(state, ignore_errors=True)


# Under `make test` (pytest-xdist, `--dist loadgroup`) a worker runs a whole module at a time,
# in order (its module-scoped fixtures are made once: the fuzz world, a generated client); the
# browser modules take turns on one worker, and so do the slow modules on real servers (load,
# crash, lock tests: they never compete with each other for the servers' CPU).
SERVERS = {"live", "server_database_url", "two_workers", "served", "in_process_server"}
BROWSER = {"browser", "page", "pages"}
# the longest groups handed out first, longest first (`--no-loadscope-reorder`; xdist gives each
# worker a group and the next one to the first worker done): the browser tests (~140 s of wall under
# a load of 7 on 2 cores) and the fuzz run (~100 s), then the next longest (test_plan_odds ~36 s of
# CPU-bound odds; the other groups of real servers, 15-35 s each; then modules of 7-11 s), so no
# worker is left alone with a long group at the end (test_plan_odds, picked last, once left one
# worker running ~30 s after the other was done); the short modules fill in around them
LONGEST = (
    "browser",
    "tests/hardening/test_fuzz.py",
    "tests/services/test_plan_odds.py",
    "slow-servers",
    "tests/hardening/test_streams.py",
    "tests/api/test_http_conventions.py",
    "tests/hardening/test_authz_matrix.py",
    "tests/services/test_hot_path.py",
    "tests/rulesets/test_step_keys.py",
    "tests/rulesets/test_adding_a_ruleset.py",
    "tests/rulesets/great_cosmos/test_rules_odds.py",
    "tests/hardening/test_ratelimit.py",
    "tests/api/test_tokens.py",
)


@dataclass
class _Module:
    fixtures: set[str]
    slow: bool = False

    def group(self, path: str) -> str:
        if self.fixtures & BROWSER:
            return "browser"
        return "slow-servers" if self.slow and self.fixtures & SERVERS else path


def _set_nodeid(item: pytest.Item, nodeid: str) -> None:
    """pytest 9.2 keeps a node's id as a structured `_id`; pytest-xdist 3.8 (its `@group` suffix)
    and Schemathesis 4 (an id per operation) still write `_nodeid`, which pytest no longer reads,
    so every fuzzed operation had the same id and xdist ran only one: their ids are set here."""
    item._id = NodeId.parse(nodeid)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the ids
def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if "[" in item.name and not item.nodeid.endswith("]"):  # a Schemathesis operation
            _set_nodeid(item, f"{item.nodeid}{item.name[item.name.index('[') :]}")
    if not (WORKER and config.getvalue("loadgroup")):
        return
    modules: dict[Any, _Module] = {}
    for item in items:
        module = modules.setdefault(item.path, _Module(set()))
        module.fixtures.update(getattr(item, "fixturenames", ()))
        module.slow = module.slow or item.get_closest_marker("slow") is not None
    groups = {item: modules[item.path].group(item.nodeid.split("::")[0]) for item in items}
    for item, group in groups.items():
        _set_nodeid(item, f"{item.nodeid}@{group}")
    items.sort(key=lambda item: LONGEST.index(groups[item]) if groups[item] in LONGEST else len(LONGEST))


# --- what the fuzzer sent (tests/hardening/test_fuzz.py), summed over the xdist workers -------------

FUZZED: dict[str, dict[int, int]] = {}  # "ruleset METHOD path" -> {status: requests}, from every worker
FUZZED_MAX: list[int] = []  # each worker's examples per operation


def _fuzzed_here() -> dict[str, Any]:
    """This process's fuzzing counts (nothing when the fuzz module was not collected here)."""
    module = sys.modules.get("tests.hardening.test_fuzz")
    return {"calls": module.CALLS, "max": module.MAX_EXAMPLES} if module else {"calls": {}, "max": 0}


def _add_fuzzed(calls: dict[str, dict[int, int]]) -> None:
    for key, counts in calls.items():
        mine = FUZZED.setdefault(key, {})
        for status, n in counts.items():
            mine[status] = mine.get(status, 0) + n


def pytest_sessionfinish(session) -> None:
    """An xdist worker hands its counts to the controller (`pytest_testnodedown`)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["fuzzed"] = _fuzzed_here()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    fuzzed = node.workeroutput.get("fuzzed", {})
    _add_fuzzed(fuzzed.get("calls", {}))
    FUZZED_MAX.append(fuzzed.get("max", 0))


def pytest_terminal_summary(terminalreporter) -> None:
    """How much the fuzzer sent: operations x examples, and the statuses it got."""
    if getattr(terminalreporter.config, "workeroutput", None) is not None:
        return
    here = _fuzzed_here()
    _add_fuzzed(here["calls"])
    if not FUZZED:
        return
    total = sum(sum(c.values()) for c in FUZZED.values())
    terminalreporter.section("hardening: fuzzing")
    terminalreporter.write_line(
        f"{len(FUZZED)} (ruleset, operation) pairs, {total} requests "
        f"(max {max(FUZZED_MAX + [here['max']])} examples each)"
    )
    for key, counts in sorted(FUZZED.items()):
        terminalreporter.write_line(f"  {key}: " + ", ".join(f"{s}x{n}" for s, n in sorted(counts.items())))


def _maintenance(url: str) -> Engine:
    return create_engine(normalize_database_url(url), isolation_level="AUTOCOMMIT", poolclass=NullPool)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory) -> Iterator[str]:
    """The worker's database: a SQLite file, or `<DATABASE_URL's database>_<worker>` made on
    that server (dropped at the end), so two workers never share rows."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
        return
    if not WORKER or not url.startswith("postgres"):
        yield url
        return
    given = make_url(normalize_database_url(url))
    name = f"{given.database}_{WORKER}"
    admin = _maintenance(url)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield given.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    """The schema is built by `alembic upgrade head` (after a downgrade to base,
    so a reused database starts empty and the downgrades run too)."""
    upgrade_head(database_url)
    downgrade_base(database_url)
    upgrade_head(database_url)
    engine = build_engine(database_url)
    yield engine
    engine.dispose()


def empty(engine: Engine) -> None:
    """Every table emptied, children first (the schema and alembic's version stay)."""
    with engine.begin() as conn:
        for table in reversed(SQLModel.metadata.sorted_tables):
            conn.execute(table.delete())


@pytest.fixture
def database(engine: Engine) -> Iterator[Engine]:
    """The worker's database, emptied when the test ends: what the app (or a server)
    committed during the test is gone before the next one."""
    try:
        yield engine
    finally:
        empty(engine)


def reader(engine: Engine) -> Engine:
    """The engine for the test's own reads: a deferred transaction on SQLite (never the
    write lock the app's writers need)."""
    return engine.execution_options(**{READ_ONLY: True})


_SETTINGS: dict[tuple[Any, ...], Settings] = {}


def settings_for(database_url: str) -> Settings:
    """The tests' settings on `database_url`: built once per database, environment and `.env` (a
    `Settings()` reads both: ~3 ms, for each of ~900 tests), a copy of it each time (a test may change its own)."""
    env_file = Path(".env")
    key = (database_url, tuple(sorted(os.environ.items())), env_file.stat().st_mtime_ns if env_file.exists() else None)
    if key not in _SETTINGS:
        _SETTINGS[key] = Settings(database_url=database_url, admin_token=None, rate_limit_per_minute=0)
    return _SETTINGS[key].model_copy(deep=True)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return settings_for(database_url)


@pytest.fixture
def db_session(database: Engine) -> Iterator[Session]:
    """A session of the test's own on the worker's database: it reads what the app
    committed, and commits what it writes itself (the app sees only committed rows)."""
    with Session(reader(database), expire_on_commit=False) as session:
        yield session


@pytest.fixture(scope="session")
def session_app(database_url: str) -> FastAPI:
    """The one app of the session (its routes prepared once, on their first request)."""
    return create_app(settings_for(database_url))


def reset(app: FastAPI, settings: Settings) -> None:
    """What a test may change on the app, as `create_app(settings)` makes it: the settings,
    the production session factory, a fresh rate limiter, no event hub, no overrides."""
    app.state.settings = settings
    app.state.sessions = SessionOpener.of(settings)
    app.state.rate_limiter = RateLimiter(settings)
    app.state.event_hub = None  # made again at the first stream (app.api.events)
    app.dependency_overrides.clear()


@pytest.fixture
def app(session_app: FastAPI, settings: Settings, database: Engine) -> Iterator[FastAPI]:
    reset(session_app, settings)
    try:
        yield session_app
    finally:
        reset(session_app, settings)


# --- real servers (tests/hardening/conftest.py: Server, Pool, Live) ---------------------------


@pytest.fixture(scope="session")
def server_pool(database_url: str, engine, tmp_path_factory) -> Iterator[Pool]:
    pool = Pool(database_url, tmp_path_factory.mktemp("servers"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def server_database_url(database_url: str, database) -> str:
    """The database real servers write to: the worker's own, migrated once (by `engine`)
    and emptied after each test (`database`), as the in-process tests' is."""
    return database_url


@pytest.fixture
def live(server_pool: Pool, server_database_url: str, tmp_path) -> Iterator[Live]:
    state = Live(server_database_url, tmp_path, server_pool, [], [])
    try:
        yield state
    finally:
        for server in state.servers:
            server.kill()


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@dataclass(frozen=True)
class Campaign:
    id: str
    gm_token: str
    ruleset: str
    body: dict[str, Any]

    @property
    def gm(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.gm_token}"}


@dataclass(frozen=True)
class Player:
    id: str
    token: str
    campaign: Campaign

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def make_campaign(
    client: TestClient, ruleset: str, options: dict[str, Any] | None = None, name: str = "La campagne"
) -> Campaign:
    body = {"name": name, "ruleset": ruleset}
    if options is not None:
        body["options"] = options
    r = client.post("/v1/campaigns", json=body)
    assert r.status_code == 201, r.text
    data = r.json()
    return Campaign(id=data["id"], gm_token=data["gm_token"], ruleset=ruleset, body=data)


def make_player(client: TestClient, campaign: Campaign, name: str = "Alice") -> Player:
    r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": name}, headers=campaign.gm)
    assert r.status_code == 201, r.text
    return Player(id=r.json()["id"], token=r.json()["token"], campaign=campaign)


def make_character(
    client: TestClient,
    campaign: Campaign,
    sheet: dict[str, Any],
    *,
    kind: str = "pc",
    name: str = "Hero",
    player: Player | None = None,
    gm_override: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "kind": kind, "sheet": sheet}
    if player is not None:
        body["player_id"] = player.id
    if gm_override:
        body["gm_override"] = True
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm)
    assert r.status_code == 201, r.text
    return r.json()


# the factories on the test's client (a fixture of a wider scope calls the functions above with its own)
@pytest.fixture
def campaign_factory(client: TestClient):
    return partial(make_campaign, client)


@pytest.fixture
def player_factory(client: TestClient):
    return partial(make_player, client)


@pytest.fixture
def character_factory(client: TestClient):
    return partial(make_character, client)


@pytest.fixture
def count_rows(database: Engine):
    """Rows in a table, as committed now."""

    def count(table: str, **where: str) -> int:
        clause = " AND ".join(f"{k} = :{k}" for k in where) or "1=1"
        with reader(database).connect() as conn:
            return conn.execute(text(f"SELECT COUNT(*) FROM {table} WHERE {clause}"), where).scalar_one()

    return count
