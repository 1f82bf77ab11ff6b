"""The characters of hidden combatants (API.md, encounters' visibility: a player never
sees a hidden combatant until it is revealed): the NPC copies made for a hidden
combatant, or any character the GM puts in a fight hidden, are not listed to other
players, read as 404 on every character route, and neither their roll-log entries nor
their events reach those players; the GM, and a character's owner, see everything."""

from __future__ import annotations

import json

import pytest

from tests.api.support import assert_problem, read_events
from tests.factories import GC_MINIMAL


@pytest.fixture
def fight(client, campaign_factory, player_factory, character_factory):
    """A Great Cosmos campaign: Alice's Aiko, a Goblin NPC, an encounter with Aiko and two hidden
    copies of the Goblin (Goblin 1, Goblin 2)."""
    c = campaign_factory("great-cosmos")
    alice, bob = player_factory(c, "Alice"), player_factory(c, "Bob")
    aiko = character_factory(c, GC_MINIMAL, name="Aiko", player=alice)["id"]
    goblin = character_factory(c, GC_MINIMAL, kind="npc", name="Goblin")["id"]
    r = client.patch(
        f"/v1/characters/{goblin}", json={"player_access": "observer"}, headers=c.gm
    )  # seen, but in hiding
    assert r.status_code == 200, r.text
    r = client.post(
        f"/v1/campaigns/{c.id}/encounters",
        headers=c.gm,
        json={
            "name": "Ambush",
            "combatants": [{"character_id": aiko}, {"character_id": goblin, "count": 2, "hidden": True}],
        },
    )
    assert r.status_code == 201, r.text
    state = r.json()
    copies = {x["name"]: (x["character_id"], x["id"]) for x in state["combatants"][1:]}
    return {"c": c, "alice": alice, "bob": bob, "aiko": aiko, "goblin": goblin, "eid": state["id"], "copies": copies}


def _names(client, campaign_id: str, headers) -> list[str]:
    r = client.get(f"/v1/campaigns/{campaign_id}/characters", headers=headers)
    assert r.status_code == 200, r.text
    return sorted(x["name"] for x in r.json()["items"])  # copies share a creation time: their order is by id


def test_hidden_combatants_copies_are_not_listed_nor_read_by_players(client, fight):
    c, alice = fight["c"], fight["alice"]
    copy, _ = fight["copies"]["Goblin 1"]
    assert _names(client, c.id, c.gm) == ["Aiko", "Goblin", "Goblin 1", "Goblin 2"]
    assert _names(client, c.id, alice.headers) == ["Aiko", "Goblin"]
    assert client.get(f"/v1/characters/{copy}", headers=c.gm).status_code == 200
    for r in (
        client.get(f"/v1/characters/{copy}", headers=alice.headers),
        client.get(f"/v1/characters/{copy}/level-ups", headers=alice.headers),
        client.post(f"/v1/characters/{copy}/tests/odds", json={"stat": "force"}, headers=alice.headers),
        client.patch(f"/v1/characters/{copy}", json={"name": "X"}, headers=alice.headers),
        client.delete(f"/v1/characters/{copy}", headers=alice.headers),
    ):
        body = assert_problem(r, 404, "not-found")
        assert body["detail"] == "no character with this id"


def test_a_revealed_combatants_character_is_seen_again(client, fight):
    c, alice, eid = fight["c"], fight["alice"], fight["eid"]
    copy, combatant = fight["copies"]["Goblin 2"]
    r = client.patch(f"/v1/encounters/{eid}/combatants/{combatant}", json={"hidden": False}, headers=c.gm)
    assert r.status_code == 200, r.text
    assert _names(client, c.id, alice.headers) == ["Aiko", "Goblin", "Goblin 2"]
    assert client.get(f"/v1/characters/{copy}", headers=alice.headers).status_code == 200


def test_a_hidden_player_character_stays_its_owners_only(client, fight, character_factory):
    c, alice, bob = fight["c"], fight["alice"], fight["bob"]
    spy = character_factory(c, GC_MINIMAL, name="Spy", player=bob)["id"]
    r = client.post(
        f"/v1/encounters/{fight['eid']}/combatants", json={"character_id": spy, "hidden": True}, headers=c.gm
    )
    assert r.status_code == 201, r.text
    assert _names(client, c.id, bob.headers) == ["Aiko", "Goblin", "Spy"]
    assert client.get(f"/v1/characters/{spy}", headers=bob.headers).status_code == 200
    assert _names(client, c.id, alice.headers) == ["Aiko", "Goblin"]
    assert_problem(client.get(f"/v1/characters/{spy}", headers=alice.headers), 404, "not-found")


def test_a_gm_test_on_a_hidden_copy_is_not_in_a_players_log(client, fight):
    """A GM test on the copy (seeded, not marked hidden) is in the GM's log only, whatever the filter."""
    c, alice = fight["c"], fight["alice"]
    copy, _ = fight["copies"]["Goblin 1"]
    r = client.post(f"/v1/characters/{copy}/tests", json={"stat": "force", "seed": 7}, headers=c.gm)
    assert r.status_code == 201, r.text
    entry = r.json()["id"]
    log = f"/v1/campaigns/{c.id}/rolls"
    assert [e["id"] for e in client.get(log, headers=c.gm).json()["items"]] == [entry]
    assert [e["id"] for e in client.get(log, params={"character_id": copy}, headers=c.gm).json()["items"]] == [entry]
    assert client.get(log, headers=alice.headers).json()["items"] == []
    assert client.get(log, params={"character_id": copy}, headers=alice.headers).json()["items"] == []
    assert client.get(f"{log}/{entry}", headers=c.gm).status_code == 200
    assert_problem(client.get(f"{log}/{entry}", headers=alice.headers), 404, "not-found")


def test_a_gm_edit_of_a_hidden_copy_is_announced_to_the_gm_only(client, fight):
    c, alice = fight["c"], fight["alice"]
    copy, _ = fight["copies"]["Goblin 1"]
    r = client.patch(f"/v1/characters/{copy}", json={"name": "Goblin chief"}, headers=c.gm)
    assert r.status_code == 200, r.text
    r = client.patch(
        f"/v1/characters/{copy}", json={"sheet": {"karma": 4}}, headers=c.gm
    )  # issue 21 item 3: sheet_edit
    assert r.status_code == 200, r.text
    assert client.delete(f"/v1/characters/{fight['copies']['Goblin 2'][0]}", headers=c.gm).status_code == 204
    gm_seen = [(e["type"], e["data"].get("id")) for e in read_events(client, c.id, c.gm)]
    assert ("character.updated", copy) in gm_seen
    assert ("character.deleted", fight["copies"]["Goblin 2"][0]) in gm_seen
    assert [e["data"]["entry"]["kind"] for e in read_events(client, c.id, c.gm) if e["type"] == "log.created"] == [
        "sheet_edit"
    ]
    players = json.dumps(read_events(client, c.id, alice.headers))
    assert all(cid not in players for cid, _ in fight["copies"].values())


def test_a_player_rolling_for_a_copy_in_hiding_gets_404_not_403(client, fight):
    """Tests, level-ups and actions on a hidden copy answer a player as for no character at all,
    whether the body is valid or not (the refusal's order checks the route's access first)."""
    c, alice = fight["c"], fight["alice"]
    copy, _ = fight["copies"]["Goblin 1"]
    for path, body in (
        (f"/v1/characters/{copy}/tests", {"stat": "force", "seed": 1}),
        (f"/v1/characters/{copy}/tests", {"stat": "nope"}),
        (f"/v1/characters/{copy}/level-ups", {"seed": 1}),
    ):
        assert_problem(client.post(path, json=body, headers=alice.headers), 404, "not-found")
    # not in hiding: the player is told it is not theirs
    assert_problem(
        client.post(
            f"/v1/characters/{fight['goblin']}/tests", json={"stat": "force", "seed": 1}, headers=alice.headers
        ),
        403,
        "forbidden",
    )
    assert (
        client.post(f"/v1/characters/{copy}/tests", json={"stat": "force", "seed": 1}, headers=c.gm).status_code == 201
    )


def test_the_gms_open_test_on_a_copy_in_hiding_is_announced_to_the_gm_only(client, fight):
    c, alice = fight["c"], fight["alice"]
    copy, _ = fight["copies"]["Goblin 1"]
    r = client.post(f"/v1/characters/{copy}/tests", json={"stat": "force", "seed": 1}, headers=c.gm)
    assert r.status_code == 201 and r.json()["hidden"] is False
    entry = r.json()["id"]
    # and one on Aiko, announced to all
    r = client.post(f"/v1/characters/{fight['aiko']}/tests", json={"stat": "force", "seed": 2}, headers=c.gm)
    assert r.status_code == 201
    aiko_entry = r.json()["id"]

    def logged(headers) -> list[str]:
        return [e["data"]["entry"]["id"] for e in read_events(client, c.id, headers) if e["type"] == "log.created"]

    assert entry in logged(c.gm) and aiko_entry in logged(c.gm)
    assert entry not in logged(alice.headers) and aiko_entry in logged(alice.headers)
