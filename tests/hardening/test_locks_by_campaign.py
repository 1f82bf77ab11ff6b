"""Every lock by id names its campaign (PostgreSQL): a fight of campaign A whose combatant names a
character of campaign B (as an import could write one) locks none of B's rows — neither that
character nor B's fights showing it — so B's writes are never coupled to A's fights. Each lock
is taken as its use case takes it, in a transaction held open, and another connection then asks
for the rows without waiting (NOWAIT): B's are free, A's own are held (the check can fail)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.kit.errors import NotFound
from app.services.encounters import store
from app.services.locks import FightLocks
from app.services.uow import CharacterRepository
from tests.conftest import make_campaign, make_character
from tests.factories import gc_fighter
from tests.fixtures import Table, ids, table  # noqa: F401


@pytest.fixture
def postgres_only(database_url):
    if not database_url.startswith("postgres"):
        pytest.skip("row locks are PostgreSQL's (SQLite has one writer at a time)")


@pytest.fixture
def coupled(table, engine, postgres_only):
    """A's started fight of Hero and Foe, Foe's combatant pointed at B's secret NPC, itself shown
    by one of B's fights."""
    t: Table = table("great-cosmos")
    hero = t.character("Hero", gc_fighter(), kind="pc", player=t.alice)
    foe = t.character("Foe", gc_fighter(40))
    s = t.encounter([{"character_id": hero}, {"character_id": foe}])
    t.start(s["id"], dice=[])
    b = make_campaign(t.client, "great-cosmos")
    secret = make_character(t.client, b, gc_fighter(), kind="npc", name="Secret")["id"]
    r = t.client.post(
        f"/v1/campaigns/{b.id}/encounters", json={"name": "B", "combatants": [{"character_id": secret}]}, headers=b.gm
    )
    assert r.status_code == 201, r.text
    n = ids(s)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE combatant SET character_id = :secret WHERE id = :foe"), {"secret": secret, "foe": n["Foe"]}
        )
    return SimpleNamespace(
        a=t.c.id,
        gm=t.gm,
        fight=s["id"],
        hero=hero,
        hero_combatant=n["Hero"],
        foe_combatant=n["Foe"],
        secret=secret,
        b_fight=r.json()["id"],
    )


def _free(engine, table_: str, row_id: str) -> bool:
    """Whether another transaction may lock this row at once."""
    with engine.connect() as other:
        try:
            other.execute(text(f"SELECT id FROM {table_} WHERE id = :id FOR UPDATE NOWAIT"), {"id": row_id})
        except DBAPIError as e:
            assert getattr(e.orig, "sqlstate", None) == "55P03", e  # lock_not_available
            return False
        finally:
            other.rollback()
    return True


LOCKS = {
    # an action naming both combatants: the encounter, the other fights of their characters, the characters
    "load_fight": lambda conn, c, repo: store.load_fight(
        conn, c.fight, lock=True, characters=repo, combatants=[c.hero_combatant, c.foe_combatant]
    ),
    # the characters an action involves, several in one round trip
    "load_characters": lambda conn, c, repo: store.load_characters(
        store.load_fight(conn, c.fight, lock=True, characters=repo), [c.hero, c.secret], lock=True
    ),
    "repository_one": lambda conn, c, repo: (repo.find([c.secret], lock=True), repo.find([c.hero], lock=True)),
    "repository_many": lambda conn, c, repo: repo.find([c.hero, c.secret], lock=True),
    # an action run again with the fights of its characters locked first
    "fights_first": lambda conn, c, repo: _locks(conn, c).before([c.hero, c.secret], encounter_id=c.fight),
}


def _locks(conn, c) -> FightLocks:
    locks = FightLocks()
    locks.start(conn, c.a)
    return locks


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_a_lock_by_id_never_reaches_another_campaigns_rows(coupled, engine, lock):
    with engine.connect() as conn:
        with conn.begin():
            LOCKS[lock](conn, coupled, CharacterRepository(conn, coupled.a))
            assert _free(engine, "character", coupled.secret)
            assert _free(engine, "encounter", coupled.b_fight)
            own = ("encounter", coupled.fight) if lock == "fights_first" else ("character", coupled.hero)
            assert not _free(engine, *own)  # A's own row is held: the check sees a lock


def test_a_locked_load_of_another_campaigns_fight_locks_nothing(coupled, engine):
    with engine.connect() as conn:
        with conn.begin():
            repo = CharacterRepository(conn, coupled.a)
            with pytest.raises(NotFound):
                store.load_fight(conn, coupled.b_fight, lock=True, characters=repo)
            assert _free(engine, "encounter", coupled.b_fight)


def test_an_action_of_the_coupled_fight_does_not_wait_for_the_other_campaign(coupled, engine, client):
    """B holds its secret NPC and its fight (a long write): A's GM acting on the combatant that
    names it is answered at once — that character is not A's — instead of waiting for B's locks
    (a 503 after `DB_LOCK_TIMEOUT_SECONDS`, 3 s, before)."""
    with engine.connect() as holder:
        with holder.begin():
            holder.execute(text("SELECT id FROM character WHERE id = :id FOR UPDATE"), {"id": coupled.secret})
            holder.execute(text("SELECT id FROM encounter WHERE id = :id FOR UPDATE"), {"id": coupled.b_fight})
            started = time.monotonic()
            r = client.post(
                f"/v1/encounters/{coupled.fight}/actions",
                json={"type": "damage", "target_id": coupled.foe_combatant, "amount": 1},
                headers=coupled.gm,
            )
            assert time.monotonic() - started < 2.0
            assert r.status_code not in (201, 503), r.text
