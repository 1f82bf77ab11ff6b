"""A player's removal against concurrent writers (PostgreSQL: SQLite has one writer at a time, so
nothing slips in between). The removal lists the player's characters, then locks them: one given to
another player meanwhile is found so once its lock is had, and left to that player
(`characters.orphan` saves only those still the removed player's, and moves only their fights). A
character given to the player, and a stream ticket of its token, are ordered with the removal by
the locks they hold (never a foreign key broken: a 500); any other foreign key a concurrent deletion
breaks is a 409 race_lost."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.api.problems import app_error_response, database_refusal

from tests.api.support import read_events
from tests.factories import GC_MINIMAL
from tests.hardening.pg_locks import holding_the_event_counter, lock_waits, released

pytestmark = pytest.mark.usefixtures("postgres_only")


@pytest.fixture
def postgres_only(database_url):
    if not database_url.startswith("postgres"):
        pytest.skip("row locks are PostgreSQL's (SQLite has one writer at a time)")


def test_a_character_given_to_another_player_during_the_removal_stays_that_players(
    client, campaign, player_factory, character_factory, engine
):
    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    moving = character_factory(campaign, GC_MINIMAL, player=alice, name="Aiko")
    staying = character_factory(campaign, GC_MINIMAL, player=alice, name="Ren")
    fights = {}
    for hero in (moving, staying):  # a fight showing each: the one showing Aiko alone shows no change
        r = client.post(
            f"/v1/campaigns/{campaign.id}/encounters",
            json={"name": f"Gué {hero['name']}", "combatants": [{"character_id": hero["id"], "side": "a"}]},
            headers=campaign.gm,
        )
        assert r.status_code == 201, r.text
        fights[hero["id"]] = r.json()
    last = read_events(client, campaign.id, campaign.gm)[-1]["id"]

    with ThreadPoolExecutor(1) as pool, engine.connect() as holder:
        # another writer gives Aiko to Bob and holds her row until it commits
        holder.execute(
            text("UPDATE character SET player_id = :bob, version = version + 1 WHERE id = :id"),
            {"bob": bob.id, "id": moving["id"]},
        )
        removal = pool.submit(client.delete, f"/v1/campaigns/{campaign.id}/players/{alice.id}", headers=campaign.gm)
        lock_waits(engine, 1)  # the removal has listed Aiko as Alice's and waits for her row
        assert not removal.done()
        holder.commit()
        r = removal.result(timeout=30)
    assert r.status_code == 204, r.text

    aiko = client.get(f"/v1/characters/{moving['id']}", headers=campaign.gm).json()
    assert aiko["player_id"] == bob.id
    assert aiko["version"] == moving["version"] + 1  # the other writer's save alone: the removal wrote nothing
    ren = client.get(f"/v1/characters/{staying['id']}", headers=campaign.gm).json()
    assert ren["player_id"] is None and ren["version"] == staying["version"] + 1
    for hero, moved in ((moving, 0), (staying, 1)):
        fight = fights[hero["id"]]
        now = client.get(f"/v1/encounters/{fight['id']}", headers=campaign.gm).json()
        assert now["version"] == fight["version"] + moved, hero["name"]
    told = [(e["type"], e["data"]["id"]) for e in read_events(client, campaign.id, campaign.gm) if e["id"] > last]
    assert told == [
        ("encounter.updated", fights[staying["id"]]["id"]),
        ("character.updated", staying["id"]),
        ("player.deleted", alice.id),
    ]
    assert client.get("/v1/me", headers=bob.headers).json()["player_id"] == bob.id


def test_a_character_given_to_the_player_before_its_removal_is_left_unowned(
    client, campaign, player_factory, character_factory, engine
):
    """A PATCH gives the GM's character to Alice and stops at its event; Alice's removal comes: it
    waits for the PATCH (never lists Alice's characters without that one, whose foreign key would then
    break its DELETE: a 500), and then leaves the character unowned."""
    alice = player_factory(campaign, "Alice")
    gift = character_factory(campaign, GC_MINIMAL, name="Kai")
    url = f"/v1/campaigns/{campaign.id}/players/{alice.id}"
    with ThreadPoolExecutor(2) as pool, holding_the_event_counter(engine, campaign.id) as holder:
        given = pool.submit(
            client.patch, f"/v1/characters/{gift['id']}", json={"player_id": alice.id}, headers=campaign.gm
        )
        lock_waits(engine, 1)
        removal = pool.submit(client.delete, url, headers=campaign.gm)
        r = released(engine, holder, given, removal, 200)
    assert r.status_code == 204, r.text
    kai = client.get(f"/v1/characters/{gift['id']}", headers=campaign.gm).json()
    assert kai["player_id"] is None and kai["version"] == gift["version"] + 2  # given, then orphaned


@pytest.mark.parametrize("how", ["patch", "create"])
def test_a_character_given_to_the_player_during_its_removal_is_refused(
    client, campaign, player_factory, character_factory, engine, how
):
    """Alice's removal stops at its event; a PATCH or a creation giving a character to Alice comes:
    it waits for the removal, then finds no such player (422, never a foreign-key 500)."""
    alice = player_factory(campaign, "Alice")
    gift = character_factory(campaign, GC_MINIMAL, name="Kai")
    with ThreadPoolExecutor(2) as pool, holding_the_event_counter(engine, campaign.id) as holder:
        removal = pool.submit(client.delete, f"/v1/campaigns/{campaign.id}/players/{alice.id}", headers=campaign.gm)
        lock_waits(engine, 1)
        if how == "patch":
            given = pool.submit(
                client.patch, f"/v1/characters/{gift['id']}", json={"player_id": alice.id}, headers=campaign.gm
            )
        else:
            body = {"name": "Noé", "kind": "pc", "sheet": GC_MINIMAL, "player_id": alice.id}
            given = pool.submit(client.post, f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm)
        r = released(engine, holder, removal, given, 204)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "unknown_id"
    assert client.get(f"/v1/characters/{gift['id']}", headers=campaign.gm).json()["player_id"] is None


def test_a_stream_ticket_asked_during_the_players_removal_is_a_401(client, campaign, player_factory, engine):
    """Alice's removal (its credential deleted) stops at its event; Alice asks for a stream ticket: it
    waits for the removal, then its credential is gone: 401 (never a foreign-key 500)."""
    alice = player_factory(campaign, "Alice")
    assert client.get("/v1/me", headers=alice.headers).status_code == 200  # this process knows her token
    with ThreadPoolExecutor(2) as pool, holding_the_event_counter(engine, campaign.id) as holder:
        removal = pool.submit(client.delete, f"/v1/campaigns/{campaign.id}/players/{alice.id}", headers=campaign.gm)
        lock_waits(engine, 1)
        ticket = pool.submit(client.post, f"/v1/campaigns/{campaign.id}/events/tickets", headers=alice.headers)
        r = released(engine, holder, removal, ticket, 204)
    assert r.status_code == 401, r.text


def test_any_other_foreign_key_broken_by_a_concurrent_deletion_is_a_409_race_lost(engine, campaign):
    """The safety net where no use case holds what it refers to: PostgreSQL's foreign_key_violation
    (23503) is a race lost (409, Retry-After: the retry gets the use case's own answer), never a 500."""
    with engine.connect() as conn, pytest.raises(IntegrityError) as caught:
        conn.execute(
            text(
                "INSERT INTO stream_ticket (ticket_hash, token_hash, campaign_id, expires_at) VALUES (:t, :c, :k, now())"
            ),
            {"t": "x" * 64, "c": "gone" * 16, "k": campaign.id},
        )
    response = app_error_response(database_refusal(caught.value))
    body = json.loads(response.body)
    assert (response.status_code, response.headers.get("retry-after"), body["code"]) == (409, "1", "race_lost")
    assert body["detail"] == (
        "the request lost a race with a concurrent write (a row it refers to was deleted); "
        "nothing of it was written; retry"
    )
