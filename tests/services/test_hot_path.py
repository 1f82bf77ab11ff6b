"""The hot path of issue 16: statements on the DBAPI cursor write and read what Core
would, the writes of an operation (and, on PostgreSQL, its COMMIT) go in one batch
that commits nothing when a save finds a stale version, a logged body is encoded once
and sent as those bytes, a roll-log page sends the stored texts, one-die expressions
draw what randint draws and record the die."""

from __future__ import annotations

import json
import random

import pytest
from sqlalchemy import Integer, String, bindparam, insert, literal, literal_column, select, text
from sqlmodel import Session
from starlette.responses import JSONResponse

from app.core.prepared import Prepared
from app.models.tables import LogEntry, new_id, utcnow
from app.rules.dice import RandomDice, Roll, parse
from app.services import uow as uow_module
from app.services.records import Principal
from app.services.operations import EncodedBody, RollingWork
from app.services.uow import StaleVersion, retried
from tests.factories import GC_MINIMAL, old_roll_body


def _count(engine, table: str, cid: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table} WHERE campaign_id = :c"), {"c": cid}).scalar_one()


def test_a_batched_operation_commits_everything_once(engine, committed):
    cid, hero = committed
    gm = Principal(cid, "gm", None, "t" * 64)
    with Session(engine, expire_on_commit=False) as session, RollingWork(session, gm, cid, None) as uow:
        [ch] = uow.lock([hero])
        req = uow.adapter.TestRequest(stat="force", dice=[5])  # a critical success: karma changes
        body = uow.commit_outcome(uow.adapter.test(ch, req, uow.context(req)))
    assert isinstance(body, EncodedBody) and json.loads(body.json) == body
    assert (_count(engine, "roll_log", cid), _count(engine, "event", cid)) == (1, 2)  # character.updated, log.created
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT version FROM character WHERE id = :i"), {"i": hero}).scalar_one()
        logged = conn.execute(LogEntry.__table__.select().where(LogEntry.__table__.c.id == body["id"])).one()
    assert stored == 2 and logged.body == dict(body)  # the text written decodes to the body sent


def test_a_stale_save_in_the_batch_commits_nothing_and_is_run_again(engine, committed):
    """The save finds another version (here, bumped in the same transaction): StaleVersion at the end of
    the batch, the log entry and the event before and after it are not committed; `retried` runs again."""
    cid, hero = committed
    gm = Principal(cid, "gm", None, "t" * 64)
    attempts = []

    @retried
    def karma_test(uow: RollingWork) -> dict:
        with uow:
            [ch] = uow.lock([hero])
            attempts.append(ch.version)
            if len(attempts) == 1:
                uow.conn.execute(text("UPDATE character SET version = version + 1 WHERE id = :id"), {"id": hero})
            req = uow.adapter.TestRequest(stat="force", dice=[5])
            return uow.commit_outcome(uow.adapter.test(ch, req, uow.context(req)))

    with Session(engine, expire_on_commit=False) as session:
        karma_test(RollingWork(session, gm, cid, None))
    assert attempts == [1, 1]
    assert (_count(engine, "roll_log", cid), _count(engine, "event", cid)) == (1, 2)  # character.updated, log.created


def test_a_stale_save_alone_raises_at_the_end_of_the_batch(engine, committed):
    cid, hero = committed
    with Session(engine) as session, uow_module.UnitOfWork(session, cid) as uow:
        [ch] = uow.characters.load([hero])
        uow.conn.execute(text("UPDATE character SET version = version + 1 WHERE id = :id"), {"id": hero})
        with pytest.raises(StaleVersion), uow.writes(commit=True):
            uow.characters.save(ch, now=utcnow(), name="Lost")
            uow.record("character.updated", {"id": hero})
    assert _count(engine, "event", cid) == 0
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM character WHERE id = :i"), {"i": hero}).scalar_one() == "Aiko"


def test_the_response_is_the_logged_text_as_json_response_would_encode_it(client, campaign_factory, character_factory):
    camp = campaign_factory("great-cosmos")
    hero = character_factory(camp, GC_MINIMAL, name="Aïko «l'éclair»")
    r = client.post(f"/v1/characters/{hero['id']}/tests", headers=camp.gm, json={"stat": "force", "dice": [42]})
    assert r.status_code == 201 and r.headers["content-type"] == "application/json"
    assert r.content == JSONResponse(r.json()).body


def test_a_log_page_sends_old_and_new_stored_texts_alike(client, campaign_factory, db_session):
    """An entry stored before (Core's JSON: spaced, ASCII escapes) and one stored now (compact UTF-8)."""
    camp = campaign_factory("great-cosmos")
    old_body = old_roll_body(new_id(), "café")
    db_session.connection().execute(
        insert(LogEntry.__table__),
        {
            "id": old_body["id"],
            "campaign_id": camp.id,
            "character_id": None,
            "kind": "roll",
            "hidden": False,
            "created_at": utcnow(),
            "body": old_body,
            "rerolls": None,
        },
    )
    db_session.commit()
    r = client.post(f"/v1/campaigns/{camp.id}/rolls", headers=camp.gm, json={"expression": "2d6", "purpose": "thé"})
    assert r.status_code == 201
    page = client.get(f"/v1/campaigns/{camp.id}/rolls", headers=camp.gm)
    assert page.status_code == 200 and page.headers["content-type"] == "application/json"
    assert page.json() == {"items": [r.json(), old_body], "next_cursor": None}


@pytest.mark.parametrize("expression, faces, constant", [("1d100", 100, 0), ("1d20+5", 20, 5), ("d6-1", 6, -1)])
def test_a_one_die_expression_draws_what_randint_draws_and_records_its_die(expression, faces, constant):
    ours, floor = random.Random(16), random.Random(16)
    for _ in range(200):
        source = RandomDice(ours)
        total = parse(expression).roll(source, "attaque")
        value = floor.randint(1, faces)
        assert total == value + constant
        assert source.rolls == [Roll(f"d{faces}", value, "attaque")]


def test_an_rng_with_its_own_randbelow_is_used_as_it_is():
    class Loaded(random.Random):
        def _randbelow(self, n: int) -> int:
            return n - 1  # always the highest face

    source = RandomDice(Loaded(1))
    assert parse("1d20+5").roll(source, "p") == 25 and parse("3d6").roll(source, "p") == 18
    assert [r.value for r in source.rolls] == [20, 6, 6, 6]


# --- issue 28 item 2: public APIs only, the opening in one statement ---------------------------

# the private attributes the hot path once read, named for the reader (`escaped_bind_names`: not
# documented; `SQLCompiler.positiontup` is, with the unescaped names); and any `_name` that
# SQLAlchemy's or psycopg's own classes define (what a module of app/ may not reach into)
_FORBIDDEN = {
    "_bind_processors",
    "_result_columns",
    "_cached_result_processor",
    "escaped_bind_names",
    "_handle_dbapi_exception",
}


def _private_names_of_the_drivers() -> set[str]:
    import psycopg
    import sqlalchemy.engine.default
    import sqlalchemy.orm
    import sqlalchemy.sql.compiler
    import sqlalchemy.sql.elements
    import sqlalchemy.types
    from psycopg import pq

    classes = [
        sqlalchemy.engine.Connection,
        sqlalchemy.engine.Engine,
        sqlalchemy.engine.CursorResult,
        sqlalchemy.engine.default.DefaultDialect,
        sqlalchemy.engine.default.DefaultExecutionContext,
        sqlalchemy.sql.compiler.SQLCompiler,
        sqlalchemy.sql.elements.BindParameter,
        sqlalchemy.types.TypeEngine,
        sqlalchemy.orm.Session,
        psycopg.Connection,
        psycopg.AsyncConnection,
        psycopg.Cursor,
        pq.PGconn,
    ]
    return {n for c in classes for n in dir(c) if n.startswith("_") and not n.startswith("__")}


def test_issue28_item2_no_module_of_app_reads_a_private_attribute_of_sqlalchemy_or_psycopg():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "app"
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(root.rglob("*.py"))}
    # a name app/ defines itself (a method, a slot, an attribute it sets) is its own
    own = {n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    own |= {
        n.attr
        for t in trees.values()
        for n in ast.walk(t)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
    }
    forbidden = _FORBIDDEN | (_private_names_of_the_drivers() - own)
    assert "_handle_dbapi_exception" in forbidden and "_execute_context" in forbidden  # the check sees the drivers
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or node.attr not in forbidden:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):  # an app class's own
                continue
            found.append(f"{path.relative_to(root.parent)}:{node.lineno}: .{node.attr}")
    assert found == []


def test_a_prepared_statement_binds_names_sqlalchemy_escapes_and_a_name_used_twice(engine):
    """Each placeholder gets its own bind's value: names the compiler escapes in the SQL (a space,
    a percent sign, a dot, brackets), one name used twice, and a value the statement carries."""
    names = ["a b", "50%", "x.y", "[k]"]
    columns = [literal_column(f"'{n}'").label(f"c{i}") for i, n in enumerate(names)]
    statement = select(
        *[bindparam(n, type_=String) for n in names],
        bindparam("twice", type_=Integer) + bindparam("twice", type_=Integer),
        literal(7, Integer),
        *columns,
    )
    query = Prepared(statement)
    with engine.connect() as conn:
        [row] = query.all(conn, {"a b": "A", "50%": "P", "x.y": "D", "[k]": "K", "twice": 21})
        conn.rollback()
    assert row == ("A", "P", "D", "K", 42, 7, *names)


def _fight(engine, cid: str, character_id: str, *, hidden: bool) -> None:
    from app.models.tables import Combatant, Encounter

    with Session(engine) as s:
        encounter = Encounter(campaign_id=cid, name="Ambush")
        s.add(encounter)
        s.flush()
        s.add(Combatant(encounter_id=encounter.id, character_id=character_id, ordinal=1, side="a", hidden=hidden))
        s.commit()


def _credential(engine, cid: str) -> str:
    from app.models.tables import Credential

    token_hash = new_id().ljust(64, "0")
    with Session(engine) as s:
        s.add(Credential(token_hash=token_hash, campaign_id=cid, role="gm"))
        s.commit()
    return token_hash


def test_issue28_item2_one_statement_reads_the_character_its_campaign_the_credential_and_the_fights(engine, committed):
    cid, hero = committed
    token_hash = _credential(engine, cid)

    def opening():
        with Session(engine) as s:
            return uow_module.open_on(s.connection(), cid, hero, token_hash)

    first = opening()
    assert first is not None
    assert (first.character.id, first.character.campaign_id, first.character.version) == (hero, cid, 1)
    assert (first.campaign.id, first.campaign.ruleset) == (cid, "great-cosmos")
    assert (first.alive, first.in_hiding, first.fighting) == (True, False, False)
    _fight(engine, cid, hero, hidden=False)
    assert (opening().in_hiding, opening().fighting) == (False, True)
    _fight(engine, cid, hero, hidden=True)
    assert (opening().in_hiding, opening().fighting) == (True, True)
    with Session(engine) as s:
        gone = uow_module.open_on(s.connection(), cid, hero, "f" * 64)
        assert gone is not None and gone.alive is False  # the caller's credential is checked (401) by the caller
        assert uow_module.open_on(s.connection(), new_id(), hero, token_hash) is None  # another campaign's character
        assert uow_module.open_on(s.connection(), cid, new_id(), token_hash) is None


def test_issue28_item2_the_migration_starts_each_campaigns_event_counter_at_its_last_number(
    database_url, engine, tmp_path
):
    from sqlalchemy import create_engine

    from alembic import command
    from app.core.migrations import alembic_config
    from tests.api.test_events import _scratch_database

    with _scratch_database(database_url, engine, tmp_path) as url:
        command.upgrade(alembic_config(url), "0012")
        scratch = create_engine(url)
        try:
            with scratch.begin() as conn:
                for cid in ("ca", "cb", "cc"):
                    conn.execute(
                        text(
                            "INSERT INTO campaign (id, name, ruleset, options, version, created_at, updated_at,"
                            " client_metadata) VALUES (:id, 'c', 'asgard', '{}', 1, CURRENT_TIMESTAMP,"
                            " CURRENT_TIMESTAMP, '{}')"
                        ),
                        {"id": cid},
                    )
                for n, cid in [(1, "ca"), (1, "cb"), (2, "ca"), (3, "ca")]:
                    conn.execute(
                        text(
                            "INSERT INTO event (campaign_id, number, type, hidden, created_at, data)"
                            " VALUES (:cid, :n, 'player.created', false, CURRENT_TIMESTAMP, '{}')"
                        ),
                        {"cid": cid, "n": n},
                    )
            command.upgrade(alembic_config(url), "head")
            with scratch.connect() as conn:
                counters = dict(conn.execute(text("SELECT campaign_id, last_number FROM event_counter")).all())
        finally:
            scratch.dispose()
    assert counters == {"ca": 3, "cb": 1}  # a campaign without events gets its counter with its first


def test_issue28_item2_concurrent_writers_number_a_campaigns_events_without_a_gap(engine, committed):
    """The counter's upsert numbers the events: concurrent writers of one campaign (and one rolled
    back) leave 1…n, in commit order."""
    from concurrent.futures import ThreadPoolExecutor

    from app.services import events

    cid, _hero = committed

    def write(i: int) -> None:
        for _attempt in range(50):
            try:
                with Session(engine) as s:
                    events.record(s, cid, "character.deleted", {"id": f"c{i}"})
                    if i == 3:
                        s.rollback()  # its number is not taken
                        return
                    s.commit()
                    return
            except Exception as exc:  # SQLite: the writer lock is busy; retried
                if "locked" not in str(exc).lower():
                    raise
        raise AssertionError("never written")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, range(12)))
    with engine.connect() as conn:
        numbers = conn.execute(
            text("SELECT number FROM event WHERE campaign_id = :c ORDER BY seq"), {"c": cid}
        ).scalars()
        assert list(numbers) == list(range(1, 12))
        count = conn.execute(text("SELECT last_number FROM event_counter WHERE campaign_id = :c"), {"c": cid})
        assert count.scalar_one() == 11


def test_issue28_item3_one_engine_per_database_and_one_session_factory(engine, database_url):
    """Every session of a database opens on its one engine: the read-only view and SQLite's
    writer on the loop share its pool; PostgreSQL's writes on the loop have the one other pool
    (measured, `Database.green`), within the same bounds."""
    from app.core.db import Bounds, SessionOpener, database, engine_for

    bounds = Bounds(connections=7)
    db = database(database_url, False, bounds)
    assert engine_for(database_url, False, bounds) is db.engine
    assert database(database_url, False, bounds) is db  # one per URL and bounds in this process
    assert db.reader.pool is db.engine.pool
    sessions = SessionOpener(database_url, bounds=bounds)
    with sessions(read_only=True) as read, sessions() as write:
        assert read.get_bind().pool is write.get_bind().pool is db.engine.pool
    opened = sessions.on_loop()
    assert opened is not None
    with opened.session as on_loop:
        if engine.dialect.name == "sqlite":
            assert (opened.green, db.green, on_loop.get_bind().pool) == (False, None, db.engine.pool)
        else:
            assert opened.green and db.no_wait is None and on_loop.get_bind().pool is db.green.pool  # type: ignore[union-attr]
    db.engine.dispose()


def test_issue28_item3_sqlites_writer_on_the_loop_waits_for_no_lock_and_gives_its_connection_back_waiting(
    engine, database_url
):
    """SQLite's writer on the loop begins with a busy timeout of 0 (another process's lock is
    answered at once, the write goes to a thread), on the one engine: a connection it gives
    back waits for locks again (30 s) in a thread's write or read."""
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite's writer on the loop")
    from app.core.db import SessionOpener, database

    sessions = SessionOpener(database_url)

    def busy(session: Session) -> int:
        return session.connection().exec_driver_sql("PRAGMA busy_timeout").scalar_one()

    for _ in range(2):
        opened = sessions.on_loop()
        assert opened is not None
        with opened.session as on_loop:
            assert busy(on_loop) == 0
        with sessions() as write:
            assert busy(write) == 30000
        with sessions(read_only=True) as read:
            assert busy(read) == 30000
    database(database_url).engine.dispose()
