"""The unit of work and the retry decorator (#11 item 3): one character repository
(one loader, one versioned writer) for rolling operations and character writes
alike, all-or-nothing commits, and `retried` instead of a template method."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

from app.kit.errors import Conflict, NotFound
from app.models.tables import new_id, utcnow
from app.services import uow as uow_module
from app.services.records import Principal
from app.services.operations import RollingWork
from app.rulesets.contract.adapter import Outcome
from app.services.uow import MAX_ATTEMPTS, CharacterRepository, StaleVersion, UnitOfWork, retried
from app.models.validation import InvalidBody
from tests.factories import GC_MINIMAL


# --- retried, on a fake unit of work ------------------------------------------------


class FakeWork:
    def __init__(self, replays: list[Any] | None = None):
        self.rollbacks = 0
        self.replays = list(replays or [])

    def rollback(self) -> None:
        self.rollbacks += 1

    def replayed(self) -> Any:
        return self.replays.pop(0) if self.replays else None


def failing(*errors: BaseException):
    """A use case raising `errors` in turn, then answering how many attempts it took."""
    calls = []

    @retried
    def use_case(uow, value):
        calls.append(value)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return len(calls)

    return use_case


def operational(message: str, *, invalidated: bool = False) -> OperationalError:
    return OperationalError("SELECT 1", {}, Exception(message), connection_invalidated=invalidated)


def test_a_lost_version_race_is_run_again_after_a_rollback():
    work = FakeWork()
    assert failing(StaleVersion("c"), StaleVersion("c"))(work, "x") == 3
    assert work.rollbacks == 2


def test_too_many_lost_races_are_a_409_with_retry_after():
    work = FakeWork()
    with pytest.raises(Conflict) as caught:
        failing(*[StaleVersion("c")] * MAX_ATTEMPTS)(work, "x")
    assert caught.value.retry_after == 1 and work.rollbacks == MAX_ATTEMPTS


@pytest.mark.parametrize(
    "error",
    [
        operational("database is locked"),
        operational("deadlock detected"),
        operational("could not serialize access"),
        operational("server closed the connection", invalidated=True),
    ],
)
def test_transient_database_errors_are_retried(error):
    assert failing(error)(FakeWork(), "x") == 2


def test_other_database_errors_are_raised_at_once():
    work = FakeWork()
    with pytest.raises(OperationalError):
        failing(operational("no such table: character"))(work, "x")
    assert work.rollbacks == 1


def test_an_integrity_race_gives_the_winners_answer_when_it_was_the_same_request():
    duplicate = IntegrityError("INSERT", {}, Exception("duplicate key"))
    work = FakeWork(replays=[None, {"id": "first"}])  # nothing to replay at first; the twin's answer after
    assert failing(duplicate)(work, "x") == {"id": "first"}


def test_an_integrity_race_is_retried_once_then_raised():
    duplicate = IntegrityError("INSERT", {}, Exception("duplicate key"))
    assert failing(duplicate)(FakeWork(), "x") == 2
    with pytest.raises(IntegrityError):
        failing(duplicate, duplicate)(FakeWork(), "x")


def test_an_answered_request_is_replayed_without_running():
    use_case = failing(AssertionError("must not run"))
    assert use_case(FakeWork(replays=[{"id": "kept"}]), "x") == {"id": "kept"}


# --- the unit of work on the real database --------------------------------------------


@pytest.fixture
def gc(client, campaign_factory, character_factory):
    campaign = campaign_factory("great-cosmos")
    hero = character_factory(campaign, GC_MINIMAL, name="Aiko")
    other = character_factory(campaign, GC_MINIMAL, name="Ben")
    return campaign, hero, other


def _row(db_session, table: str, **where: str) -> list:
    clause = " AND ".join(f"{k} = :{k}" for k in where)
    return db_session.connection().execute(text(f"SELECT * FROM {table} WHERE {clause}"), where).all()


def test_the_loader_keeps_the_order_asked_and_refuses_twins_and_strangers(
    db_session, gc, campaign_factory, character_factory
):
    campaign, hero, other = gc
    stranger = character_factory(campaign_factory("great-cosmos"), GC_MINIMAL, name="Stranger")
    repo = CharacterRepository(db_session.connection(), campaign.id)
    assert [c.name for c in repo.load([other["id"], hero["id"]])] == ["Ben", "Aiko"]
    with pytest.raises(InvalidBody, match="named twice"):
        repo.load([hero["id"], hero["id"]])
    with pytest.raises(NotFound, match="no character with this id"):  # the id is not echoed: secrets
        repo.load([hero["id"], stranger["id"]])
    with pytest.raises(NotFound, match="no character with this id"):
        repo.get(stranger["id"])


def test_the_versioned_writer_refuses_a_stale_version_and_writes_nothing(db_session, gc):
    campaign, hero, _ = gc
    repo = CharacterRepository(db_session.connection(), campaign.id)
    before = repo.get(hero["id"])
    after = repo.save(before, now=utcnow(), name="Aiko II")
    assert (after.version, after.name) == (before.version + 1, "Aiko II")
    with pytest.raises(StaleVersion):
        repo.save(before, now=utcnow(), name="Lost")
    assert repo.get(hero["id"]).name == "Aiko II"


def test_a_unit_of_work_left_by_an_error_keeps_nothing(db_session, gc):
    campaign, hero, _ = gc
    events_before = len(_row(db_session, "event", campaign_id=campaign.id))
    with pytest.raises(RuntimeError, match="boom"):
        with UnitOfWork(db_session, campaign.id) as uow:
            [stored] = uow.characters.load([hero["id"]])
            uow.characters.save(stored, now=utcnow(), sheet={**stored.sheet, "karma": 7})
            body = {"id": new_id(), "kind": "roll", "rolls": []}
            uow.log.append(body, character_id=hero["id"], hidden=False, created_at=utcnow())
            uow.record("log.created", {"entry_id": body["id"]})
            raise RuntimeError("boom")
    assert _row(db_session, "character", id=hero["id"])[0].version == hero["version"]
    assert _row(db_session, "roll_log", id=body["id"]) == []
    assert len(_row(db_session, "event", campaign_id=campaign.id)) == events_before


def test_a_rolling_commit_that_fails_half_way_keeps_nothing(db_session, gc):
    """The log entry is written, then a sheet of a character not loaded: the whole operation is undone."""
    campaign, hero, other = gc
    gm = Principal(campaign.id, "gm", None, "t" * 64)
    with pytest.raises(RuntimeError, match="not given"):
        with RollingWork(db_session, gm, campaign.id, None) as uow:
            [ch] = uow.lock([hero["id"]])
            req = uow.adapter.TestRequest(stat="force", dice=[50])
            outcome = uow.adapter.test(ch, req, uow.context(req))
            outcome.sheets[other["id"]] = ch.sheet
            uow.commit_outcome(outcome)
    assert _row(db_session, "roll_log", character_id=hero["id"]) == []
    assert [r.version for r in _row(db_session, "character", campaign_id=campaign.id)] == [1, 1]


def test_a_use_case_beaten_by_a_concurrent_writer_runs_again_on_fresh_state(db_session, gc):
    campaign, hero, _ = gc
    gm = Principal(campaign.id, "gm", None, "t" * 64)
    attempts = []

    @retried
    def karma_test(uow: RollingWork) -> dict:
        with uow:
            [ch] = uow.lock([hero["id"]])
            attempts.append(ch.version)
            if len(attempts) == 1:  # another writer slips in between our read and our write
                uow.conn.execute(text("UPDATE character SET version = version + 1 WHERE id = :id"), {"id": ch.id})
            req = uow.adapter.TestRequest(stat="force", dice=[5])  # a critical success: karma changes
            return uow.commit_outcome(uow.adapter.test(ch, req, uow.context(req)))

    body = karma_test(RollingWork(db_session, gm, campaign.id, None))
    assert attempts == [1, 1]  # the first attempt's read was stale: rolled back, read again
    assert body["effects"]["karma"]["after"] != 0
    [row] = _row(db_session, "character", id=hero["id"])
    assert (row.version, len(_row(db_session, "roll_log", character_id=hero["id"]))) == (2, 1)


def test_rolling_operations_and_character_writes_share_the_one_versioned_writer(client, gc, monkeypatch):
    campaign, hero, _ = gc
    saved: list[str] = []
    original = uow_module.CharacterRepository.save

    def spy(self, before, **kwargs):
        saved.append(before.id)
        return original(self, before, **kwargs)

    monkeypatch.setattr(uow_module.CharacterRepository, "save", spy)
    assert (
        client.post(
            f"/v1/characters/{hero['id']}/tests", headers=campaign.gm, json={"stat": "force", "dice": [5]}
        ).status_code
        == 201
    )
    assert client.patch(f"/v1/characters/{hero['id']}", headers=campaign.gm, json={"name": "Aiko"}).status_code == 200
    assert saved == [hero["id"], hero["id"]]
