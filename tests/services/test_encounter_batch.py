"""Issue 16 item 4: an encounter action reads in one round trip (the encounter locked, the combatants its
body names, their characters locked) and writes in ONE batch with its COMMIT (`EncounterWork.later`,
`UnitOfWork.writes(commit=True)`), like `POST …/tests`: the roll-log entry with its other characters
goes in that batch (nothing read back), a stale version in it commits nothing (the whole action runs
again on fresh state), and a caller whose credential is gone is still refused first."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, select, text
from sqlmodel import Session

from app.rulesets.encounter_bodies import CombatantCreate, EncounterCreate, StartRequest
from app.models.tables import Campaign, Character, new_id, utcnow
from app.services.encounters import actions, setup, turns
from app.services.records import Principal
from app.services.encounters import record
from app.services.uow import StaleVersion, UnitOfWork
from tests.api.support import assert_problem
from tests.factories import SHEETS
from tests.hardening.conftest import purge_campaigns

SHEET = SHEETS["great-cosmos"]


@pytest.fixture
def fight(engine):
    """A Great Cosmos campaign and two NPCs in a started encounter, committed for real (sessions bound to
    the engine, as a request's are: the batch may then carry the COMMIT), removed afterwards:
    (campaign, GM principal, encounter, combatant ids by name, character ids by name)."""
    cid, now = new_id(), utcnow()
    characters = {"Ash": new_id(), "Birch": new_id()}
    with Session(engine) as s:
        conn = s.connection()
        conn.execute(
            insert(Campaign.__table__),
            {
                "id": cid,
                "name": "Batch",
                "ruleset": "great-cosmos",
                "options": {},
                "version": 1,
                "created_at": now,
                "updated_at": now,
            },
        )
        for name, character_id in characters.items():
            conn.execute(
                insert(Character.__table__),
                {
                    "id": character_id,
                    "campaign_id": cid,
                    "player_id": None,
                    "name": name,
                    "kind": "npc",
                    "sheet": SHEET,
                    "version": 1,
                    "created_at": now,
                    "updated_at": now,
                },
            )
        s.commit()
    gm = Principal(cid, "gm", None, "t" * 64)
    try:
        with Session(engine, expire_on_commit=False) as session:
            made = setup.create_encounter(
                session,
                gm,
                cid,
                EncounterCreate(
                    name="Clash", combatants=[CombatantCreate(character_id=characters[n]) for n in characters]
                ),
            )
        with Session(engine, expire_on_commit=False) as session:
            turns.start(session, gm, made["id"], StartRequest(seed=1), None, None)
        yield cid, gm, made["id"], {c["name"]: c["id"] for c in made["combatants"]}, characters
    finally:
        purge_campaigns(engine, [cid])


def _scalar(engine, sql: str, **params) -> int:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar_one()


def test_a_log_entry_with_other_characters_goes_in_the_batch_and_a_stale_save_after_it_commits_nothing(engine, fight):
    cid, _gm, _eid, _c, characters = fight
    ash, birch = characters["Ash"], characters["Birch"]
    body = {"id": new_id(), "kind": "confrontation", "result": "kept"}
    with Session(engine) as session, UnitOfWork(session, cid) as uow:
        uow.characters.load([ash, birch])
        with uow.writes(commit=True):  # on PostgreSQL in a pipeline: nothing may be read back
            uow.log.append(body, character_id=ash, hidden=False, created_at=utcnow(), others=[birch])
        uow.commit()
    entry = (
        "SELECT count(*) FROM roll_log_character r JOIN roll_log l ON l.seq = r.seq WHERE l.id = :e AND "
        "r.character_id = :c"
    )
    assert _scalar(engine, entry, e=body["id"], c=birch) == 1

    lost = {"id": new_id(), "kind": "confrontation", "result": "lost"}
    with Session(engine) as session, UnitOfWork(session, cid) as uow:
        [a, _b] = uow.characters.load([ash, birch])
        uow.conn.execute(text('UPDATE "character" SET version = version + 1 WHERE id = :i'), {"i": ash})
        with pytest.raises(StaleVersion), uow.writes(commit=True):
            uow.log.append(lost, character_id=ash, hidden=False, created_at=utcnow(), others=[birch])
            uow.characters.save(a, now=utcnow(), name="Lost")
    assert _scalar(engine, "SELECT count(*) FROM roll_log WHERE id = :e", e=lost["id"]) == 0
    assert _scalar(engine, "SELECT count(*) FROM roll_log_character WHERE character_id = :c", c=birch) == 1


def test_an_action_whose_encounter_changed_in_its_batch_commits_nothing_and_runs_again(engine, fight, monkeypatch):
    """The encounter's version is bumped behind the action's back (in its own transaction, after its read):
    the versioned update in the batch fails, nothing of that attempt is committed (no action, no log entry,
    no event, no sheet change), and the action runs again on fresh state: ONE action is recorded."""
    cid, gm_principal, eid, combatants, characters = fight
    version = _scalar(engine, "SELECT version FROM encounter WHERE id = :i", i=eid)
    saves = []
    real_save = record.store.save

    def save_after_a_bump(conn, fight, now, **kw):
        saves.append(fight.encounter["version"])
        if len(saves) == 1:
            conn.execute(text("UPDATE encounter SET version = version + 1 WHERE id = :i"), {"i": fight.id})
        return real_save(conn, fight, now, **kw)

    monkeypatch.setattr(record.store, "save", save_after_a_bump)
    with Session(engine, expire_on_commit=False) as session:
        shown = actions.act(
            session,
            gm_principal,
            eid,
            {"type": "damage", "actor_id": combatants["Ash"], "target_id": combatants["Birch"], "amount": 5},
            None,
            None,
        )
    assert saves == [version, version]  # the second attempt read the encounter as it was: the bump rolled back
    assert shown["encounter_version"] == version + 1
    assert _scalar(engine, "SELECT version FROM encounter WHERE id = :i", i=eid) == version + 1
    assert (
        _scalar(engine, "SELECT count(*) FROM encounter_action WHERE encounter_id = :i AND type = 'damage'", i=eid) == 1
    )
    assert (
        _scalar(
            engine,
            "SELECT count(*) FROM roll_log WHERE campaign_id = :c AND kind = 'combat' AND id = :a",
            c=cid,
            a=shown["id"],
        )
        == 1
    )
    assert (
        _scalar(engine, "SELECT count(*) FROM event WHERE campaign_id = :c AND type = 'encounter.action'", c=cid) == 1
    )  # this one's (the start's is an `encounter.updated`: issue 25 item 1)
    with engine.connect() as conn:
        birch = conn.execute(select(Character.__table__).where(Character.__table__.c.id == characters["Birch"])).one()
    assert (birch.version, birch.sheet["hp"]) == (2, SHEET["hp"] - 5)


def _revoke_elsewhere(db_session, token: str) -> None:
    """The credential deleted as another worker would: this process still remembers it."""
    from app.core.security import hash_token

    db_session.execute(text("DELETE FROM credential WHERE token_hash = :h"), {"h": hash_token(token)})
    db_session.commit()


def test_an_action_by_a_caller_whose_credential_is_gone_is_401_first_and_writes_nothing(
    client, campaign_factory, player_factory, db_session, count_rows
):
    """The action's first round trip checks the remembered caller's credential (`EncounterWork`):
    401 before 404 (no such encounter), 403, 422 or looking for an idempotent replay, and nothing written."""
    camp = campaign_factory("great-cosmos")
    alice = player_factory(camp)
    mine = client.post(
        f"/v1/campaigns/{camp.id}/characters",
        headers=camp.gm,
        json={"name": "Ash", "kind": "pc", "sheet": SHEET, "player_id": alice.id},
    ).json()["id"]
    theirs = client.post(
        f"/v1/campaigns/{camp.id}/characters", headers=camp.gm, json={"name": "Birch", "kind": "npc", "sheet": SHEET}
    ).json()["id"]
    r = client.post(
        f"/v1/campaigns/{camp.id}/encounters",
        headers=camp.gm,
        json={"name": "Clash", "combatants": [{"character_id": mine}, {"character_id": theirs}]},
    )
    eid, combatants = r.json()["id"], {c["name"]: c["id"] for c in r.json()["combatants"]}
    assert client.post(f"/v1/encounters/{eid}/start", headers=camp.gm, json={"seed": 1}).status_code == 201
    url, keyed = f"/v1/encounters/{eid}/actions", {**alice.headers, "Idempotency-Key": "k-1"}
    move = {"type": "move", "actor_id": combatants["Ash"], "to": {"x": 1, "y": 0}}
    assert client.get(f"/v1/encounters/{eid}", headers=alice.headers).status_code == 200  # alice is remembered now
    logged, versions = count_rows("roll_log"), count_rows("encounter_action")
    _revoke_elsewhere(db_session, alice.token)
    for path, body, headers in (
        (url, move, alice.headers),  # was 422 (not on the grid)
        (url, move, keyed),  # with an Idempotency-Key: checked before looking for a replay
        (f"/v1/encounters/{'0' * 32}/actions", move, alice.headers),  # no such encounter: 404
        (url, {**move, "actor_id": combatants["Birch"]}, alice.headers),  # not hers: 403
        (url, {"type": "damage", "target_id": combatants["Birch"], "amount": 1}, alice.headers),  # GM's: 403
        (url, {"type": "nope"}, alice.headers),  # invalid body: 422
        (f"/v1/encounters/{eid}/next-turn", {}, alice.headers),
    ):
        assert_problem(client.post(path, json=body, headers=headers), 401, "unauthorized")
    assert (count_rows("roll_log"), count_rows("encounter_action")) == (logged, versions)
