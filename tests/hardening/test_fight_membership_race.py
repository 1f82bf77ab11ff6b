"""A character joining a fight against its concurrent edit or deletion (PostgreSQL: SQLite has one
writer at a time). A writer of the campaign is stopped at its event (`holding_the_event_counter`:
its other writes made, their locks held) so the other comes while it is under way:

- the deletion first: the fight's addition waits for the character and finds it gone (422), never
  adds a combatant of a character deleted before it;
- the addition first: the edit or deletion waits for the character, then moves that fight too (its
  version and `encounter.updated`: what the fight shows of the character changed), never leaves it
  at a version whose ETag still matches;
- a join's NPC copy taken by another fight while the join's revert waits for it: the revert refuses
  (409 changed_since, issue 27's rule), never deletes a copy another fight shows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


import pytest
from sqlalchemy import text

from tests.api.support import read_events
from tests.factories import GC_MINIMAL, wa_fighter
from tests.hardening.pg_locks import holding_the_event_counter, lock_waits, released

pytestmark = pytest.mark.usefixtures("postgres_only")


@pytest.fixture
def postgres_only(database_url):
    if not database_url.startswith("postgres"):
        pytest.skip("row locks are PostgreSQL's (SQLite has one writer at a time)")


@pytest.fixture
def fight(client, campaign, character_factory):
    first = character_factory(campaign, GC_MINIMAL, name="Aiko")
    r = client.post(
        f"/v1/campaigns/{campaign.id}/encounters",
        json={"name": "Gué", "combatants": [{"character_id": first["id"], "side": "a"}]},
        headers=campaign.gm,
    )
    assert r.status_code == 201, r.text
    return r.json()


@pytest.mark.parametrize("how", ["add", "create"])
def test_a_character_deleted_while_a_fight_takes_it_is_not_taken(
    client, campaign, character_factory, engine, fight, how
):
    kai = character_factory(campaign, GC_MINIMAL, name="Kai")
    with ThreadPoolExecutor(2) as pool, holding_the_event_counter(engine, campaign.id) as holder:
        deletion = pool.submit(client.delete, f"/v1/characters/{kai['id']}", headers=campaign.gm)
        lock_waits(engine, 1)
        if how == "add":
            url, body = f"/v1/encounters/{fight['id']}/combatants", {"character_id": kai["id"], "side": "b"}
        else:
            url = f"/v1/campaigns/{campaign.id}/encounters"
            body = {"name": "Pont", "combatants": [{"character_id": kai["id"], "side": "b"}]}
        taking = pool.submit(client.post, url, json=body, headers=campaign.gm)
        r = released(engine, holder, deletion, taking, 204)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "unknown_id"
    now = client.get(f"/v1/encounters/{fight['id']}", headers=campaign.gm).json()
    assert [c["character_id"] for c in now["combatants"]] == [fight["combatants"][0]["character_id"]]


@pytest.mark.parametrize("change", ["rename", "delete"])
def test_a_character_changed_while_a_fight_takes_it_moves_that_fight(
    client, campaign, character_factory, engine, fight, change
):
    kai = character_factory(campaign, GC_MINIMAL, name="Kai")
    url = f"/v1/characters/{kai['id']}"
    with ThreadPoolExecutor(2) as pool, holding_the_event_counter(engine, campaign.id) as holder:
        adding = pool.submit(
            client.post,
            f"/v1/encounters/{fight['id']}/combatants",
            json={"character_id": kai["id"], "side": "b"},
            headers=campaign.gm,
        )
        lock_waits(engine, 1)
        last = read_events(client, campaign.id, campaign.gm)[-1]["id"]
        if change == "rename":
            changing = pool.submit(client.patch, url, json={"name": "Kai le Brave"}, headers=campaign.gm)
        else:
            changing = pool.submit(client.delete, url, headers=campaign.gm)
        lock_waits(engine, 2)
        holder.commit()
        added = adding.result(timeout=30)
        assert added.status_code == 201, added.text
        assert changing.result(timeout=30).status_code in (200, 204), changing.result().text
    now = client.get(f"/v1/encounters/{fight['id']}", headers=campaign.gm).json()
    assert now["version"] == added.json()["version"] + 1  # the addition's, then the change's
    told = [(e["type"], e["data"]) for e in read_events(client, campaign.id, campaign.gm) if e["id"] > last]
    assert ("encounter.updated", {"id": fight["id"], "version": now["version"]}) in told


def test_a_copy_taken_by_another_fight_during_its_joins_revert_stops_the_revert(table, engine):
    """Issue 27's rule (a copy put in another fight since is deleted only when forced), when the other
    fight takes it while the revert waits for it: the revert reads the fights showing the copy again
    once it holds the copy, and refuses (409 changed_since), never deletes a copy another fight shows."""
    from tests.api.test_encounters_midfight import _orcs_join

    t = table("worlds-awakening")
    eid, joined, _n, copies = _orcs_join(t)
    goblin = t.character("Goblin", wa_fighter(1), kind="npc")
    other = t.encounter([{"character_id": goblin}])
    revert_url = f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert"
    with ThreadPoolExecutor(2) as pool, holding_the_event_counter(engine, t.c.id) as holder:
        taking = pool.submit(
            t.client.post,
            f"/v1/encounters/{other['id']}/combatants",
            json={"character_id": copies["Orc 1"], "side": "b"},
            headers=t.gm,
        )
        lock_waits(engine, 1)
        reverting = pool.submit(t.client.post, revert_url, json={}, headers=t.gm)
        r = released(engine, holder, taking, reverting, 201)
    assert r.status_code == 409, r.text
    assert (r.json()["code"], r.json()["field"], r.json()["current"]) == ("changed_since", "encounters", [other["id"]])
    shown = t.client.get(f"/v1/encounters/{other['id']}", headers=t.gm).json()
    assert copies["Orc 1"] in [c["character_id"] for c in shown["combatants"]]


def test_a_test_changing_a_fighting_characters_sheet_never_holds_it_while_waiting_for_its_fight(
    client, campaign, engine, fight
):
    """A test whose dice change Aiko's karma (GC-K1) while an action of Aiko's fight holds that fight (as an
    action's first statement does, before it locks the characters it names): the test must move the fight
    (issue 25), and waiting for it while holding Aiko would deadlock with the action's next step (PostgreSQL
    answers that after its 1 s deadlock_timeout). It gives Aiko back and waits for the fight first: the
    action takes Aiko at once (NOWAIT, here), and the test is answered once the action is done."""
    aiko = fight["combatants"][0]["character_id"]
    with ThreadPoolExecutor(1) as pool, engine.connect() as action:
        action.execute(text("SELECT 1 FROM encounter WHERE id = :e FOR UPDATE"), {"e": fight["id"]})
        test = pool.submit(
            client.post, f"/v1/characters/{aiko}/tests", json={"stat": "force", "dice": [1]}, headers=campaign.gm
        )
        lock_waits(engine, 1)  # the test waits for the fight…
        # …and does not hold Aiko meanwhile: else this raises LockNotAvailable
        action.execute(text("SELECT 1 FROM character WHERE id = :c FOR UPDATE NOWAIT"), {"c": aiko})
        action.commit()
        r = test.result(timeout=30)
    assert r.status_code == 201, r.text
    assert (r.json()["effects"]["karma"]["before"], r.json()["effects"]["karma"]["after"]) == (0, -1)
    moved = client.get(f"/v1/encounters/{fight['id']}", headers=campaign.gm).json()
    assert moved["version"] == fight["version"] + 1


def test_a_revert_moving_another_fight_never_holds_its_character_while_waiting_for_that_fight(
    client, campaign, engine, fight
):
    """Aiko in two fights; a GM's damage on Aiko in the first, then its revert (which names no combatant,
    so the other fight is not locked with the first): while an action of the other fight holds it (its
    first statement, before the characters it names), the revert must not wait for it holding Aiko — the
    action's next step would deadlock with it. It gives Aiko back and runs again with the other fight
    locked first: the action takes Aiko at once (NOWAIT, here), the revert is answered once it is done."""
    gm = campaign.gm
    cell = fight["combatants"][0]
    aiko, first = cell["character_id"], fight["id"]
    r = client.post(
        f"/v1/campaigns/{campaign.id}/encounters",
        json={"name": "Pont", "combatants": [{"character_id": aiko, "side": "a"}]},
        headers=gm,
    )
    assert r.status_code == 201, r.text
    other = r.json()
    assert client.post(f"/v1/encounters/{first}/start", json={}, headers=gm).status_code == 201
    hit = client.post(
        f"/v1/encounters/{first}/actions", json={"type": "damage", "target_id": cell["id"], "amount": 3}, headers=gm
    )
    assert hit.status_code == 201, hit.text
    moved = client.get(f"/v1/encounters/{other['id']}", headers=gm).json()["version"]
    assert moved == other["version"] + 1  # the damage moved the other fight (issue 25)
    with ThreadPoolExecutor(1) as pool, engine.connect() as action:
        action.execute(text("SELECT 1 FROM encounter WHERE id = :e FOR UPDATE"), {"e": other["id"]})
        revert = pool.submit(client.post, f"/v1/encounters/{first}/actions/{hit.json()['id']}/revert", headers=gm)
        lock_waits(engine, 1)  # the revert waits for the other fight…
        # …and does not hold Aiko meanwhile: else this raises LockNotAvailable
        action.execute(text("SELECT 1 FROM character WHERE id = :c FOR UPDATE NOWAIT"), {"c": aiko})
        action.commit()
        r = revert.result(timeout=30)
    assert r.status_code == 201, r.text
    assert client.get(f"/v1/encounters/{other['id']}", headers=gm).json()["version"] == moved + 1
