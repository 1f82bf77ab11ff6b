"""Issue 21 items 3 and 5 (API.md round 3, "What players may see of a character" and
"Events … per viewer"): a character's `player_access` — `observer`, `limited`, `none`;
a PC `observer` and an NPC `none` by default — decides what players other than its
owner read of it on every character route, in the roll log and in the event stream,
made stricter by the `hp_visibility` of a fight it is in; the GM and the owner see
everything; events are filtered per viewer by the same rules as the reads."""

from __future__ import annotations

import json
import re

import pytest

from tests.api.support import assert_problem, read_events
from tests.factories import GC_MINIMAL

LIMITED_KEYS = {
    "id",
    "campaign_id",
    "name",
    "kind",
    "ruleset",
    "player_access",
    "pools",
    "version",
    "created_at",
    "updated_at",
}


@pytest.fixture
def table(client, campaign_factory, player_factory, character_factory):
    """Great Cosmos: Alice's Aiko, Bob's Bran, an Orc NPC (100 hp, at 87 after a GM edit)."""
    c = campaign_factory("great-cosmos")
    alice, bob = player_factory(c, "Alice"), player_factory(c, "Bob")
    aiko = character_factory(c, GC_MINIMAL, name="Aiko", player=alice)
    bran = character_factory(c, GC_MINIMAL, name="Bran", player=bob)
    orc = character_factory(c, {**GC_MINIMAL, "hp": 87}, kind="npc", name="Orc")
    return {"c": c, "alice": alice, "bob": bob, "aiko": aiko["id"], "bran": bran["id"], "orc": orc["id"]}


def _access(client, t, character_id: str, access: str) -> dict:
    r = client.patch(f"/v1/characters/{character_id}", json={"player_access": access}, headers=t["c"].gm)
    assert r.status_code == 200, r.text
    assert r.json()["player_access"] == access
    return r.json()


def _listed(client, t, headers) -> dict[str, dict]:
    r = client.get(f"/v1/campaigns/{t['c'].id}/characters", headers=headers)
    assert r.status_code == 200, r.text
    return {x["name"]: x for x in r.json()["items"]}


def _refused_everywhere(client, character_id: str, headers) -> None:
    """Every character route answers as for an unknown id."""
    for r in (
        client.get(f"/v1/characters/{character_id}", headers=headers),
        client.get(f"/v1/characters/{character_id}/level-ups", headers=headers),
        client.post(f"/v1/characters/{character_id}/tests/odds", json={"stat": "force"}, headers=headers),
        client.post(f"/v1/characters/{character_id}/tests", json={"stat": "force"}, headers=headers),
        client.patch(f"/v1/characters/{character_id}", json={"name": "X"}, headers=headers),
        client.patch(f"/v1/characters/{character_id}", json={"name": ""}, headers=headers),
        client.delete(f"/v1/characters/{character_id}", headers=headers),
    ):
        assert assert_problem(r, 404, "not-found")["detail"] == "no character with this id"


def test_issue21_item5_defaults_a_pc_observer_an_npc_none(client, table):
    t = table
    gm_view = _listed(client, t, t["c"].gm)
    assert {n: x["player_access"] for n, x in gm_view.items()} == {
        "Aiko": "observer",
        "Bran": "observer",
        "Orc": "none",
    }
    assert sorted(_listed(client, t, t["alice"].headers)) == ["Aiko", "Bran"]
    assert _listed(client, t, t["alice"].headers)["Bran"]["sheet"]["hp"] == 100  # another player's PC: observer
    _refused_everywhere(client, t["orc"], t["alice"].headers)


def test_issue21_item5_only_the_gm_sets_player_access(client, table, character_factory):
    t = table
    r = client.patch(f"/v1/characters/{t['aiko']}", json={"player_access": "none"}, headers=t["alice"].headers)
    assert_problem(r, 403, "forbidden")
    r = client.post(
        f"/v1/campaigns/{t['c'].id}/characters",
        headers=t["alice"].headers,
        json={"name": "Shy", "kind": "pc", "sheet": GC_MINIMAL, "player_access": "none"},
    )
    assert_problem(r, 403, "forbidden")
    r = client.post(
        f"/v1/campaigns/{t['c'].id}/characters",
        headers=t["c"].gm,
        json={"name": "Ally", "kind": "npc", "sheet": GC_MINIMAL, "player_access": "observer"},
    )
    assert r.status_code == 201 and r.json()["player_access"] == "observer", r.text
    r = client.patch(f"/v1/characters/{t['orc']}", json={"player_access": "friends"}, headers=t["c"].gm)
    assert r.status_code == 422, r.text


def test_issue21_item5_limited_shows_name_kind_and_pools_as_status_words(client, table):
    t = table
    _access(client, t, t["orc"], "limited")
    r = client.get(f"/v1/characters/{t['orc']}", headers=t["alice"].headers)
    assert r.status_code == 200, r.text
    orc = r.json()
    assert set(orc) == LIMITED_KEYS
    assert orc["player_access"] == "limited" and orc["name"] == "Orc" and orc["kind"] == "npc"
    assert orc["pools"] == {"hp": {"status": "wounded"}, "mp": {"status": "unhurt"}}
    assert r.headers["ETag"] == f'"{orc["version"]}"'
    assert _listed(client, t, t["alice"].headers)["Orc"] == orc
    gm = client.get(f"/v1/characters/{t['orc']}", headers=t["c"].gm).json()
    assert gm["sheet"]["hp"] == 87 and gm["player_access"] == "limited"
    # a limited character is still not the player's to change (403: it knows of it)
    assert_problem(
        client.patch(f"/v1/characters/{t['orc']}", json={"name": "X"}, headers=t["alice"].headers), 403, "forbidden"
    )


def test_issue21_item5_a_pc_with_access_none_is_its_owners_only(client, table):
    t = table
    _access(client, t, t["bran"], "none")
    assert sorted(_listed(client, t, t["alice"].headers)) == ["Aiko"]
    _refused_everywhere(client, t["bran"], t["alice"].headers)
    assert client.get(f"/v1/characters/{t['bran']}", headers=t["bob"].headers).json()["sheet"]["hp"] == 100


def _fight(client, t, visibility: str) -> str:
    r = client.post(
        f"/v1/campaigns/{t['c'].id}/encounters",
        headers=t["c"].gm,
        json={
            "name": "Ambush",
            "options": {"hp_visibility": visibility},
            "combatants": [{"character_id": t["aiko"]}, {"character_id": t["orc"]}],
        },
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


@pytest.mark.parametrize(
    "visibility,pools", [("status", {"hp": {"status": "wounded"}, "mp": {"status": "unhurt"}}), ("hidden", {})]
)
def test_issue21_item5_a_fight_stricter_than_observer_wins_on_the_character_routes(client, table, visibility, pools):
    """The Orc is `observer`, but in a fight whose hp_visibility is `status` (or `hidden`): a player
    reads it limited there as on the character routes, never 87/100; once the fight ends, whole again."""
    t = table
    _access(client, t, t["orc"], "observer")
    eid = _fight(client, t, visibility)
    fight = {c["name"]: c for c in client.get(f"/v1/encounters/{eid}", headers=t["alice"].headers).json()["combatants"]}
    assert "value" not in json.dumps(fight["Orc"]["resources"])
    for orc in (
        client.get(f"/v1/characters/{t['orc']}", headers=t["alice"].headers).json(),
        _listed(client, t, t["alice"].headers)["Orc"],
    ):
        assert set(orc) == LIMITED_KEYS and orc["pools"] == pools
        shown = json.dumps({k: v for k, v in orc.items() if k != "version"})  # (a digest may hold the digits)
        assert "sheet" not in orc and not re.search(r":\s*87\b", shown)
    assert client.get(f"/v1/characters/{t['aiko']}", headers=t["alice"].headers).json()["sheet"]["hp"] == 100  # its own
    assert client.get(f"/v1/characters/{t['orc']}", headers=t["c"].gm).json()["sheet"]["hp"] == 87
    r = client.post(f"/v1/encounters/{eid}/end", headers=t["c"].gm)
    assert r.status_code == 200, r.text
    assert client.get(f"/v1/characters/{t['orc']}", headers=t["alice"].headers).json()["sheet"]["hp"] == 87


def test_issue21_item5_the_roll_log_leaves_out_entries_about_characters_a_player_does_not_see_whole(client, table):
    t = table
    log = f"/v1/campaigns/{t['c'].id}/rolls"
    entries = {}
    for access in ("none", "limited", "observer"):
        _access(client, t, t["orc"], access)
        r = client.post(f"/v1/characters/{t['orc']}/tests", json={"stat": "force", "dice": [50]}, headers=t["c"].gm)
        assert r.status_code == 201, r.text
        entries[access] = r.json()["id"]
    # what counts is the access now: observer, every entry of the Orc is the players' to read
    seen = [e["id"] for e in client.get(log, headers=t["alice"].headers).json()["items"]]
    assert set(entries.values()) <= set(seen)
    for access in ("none", "limited"):
        _access(client, t, t["orc"], access)
        assert [
            e["id"]
            for e in client.get(log, headers=t["alice"].headers).json()["items"]
            if e.get("character_id") == t["orc"]
        ] == []
        assert_problem(client.get(f"{log}/{entries['observer']}", headers=t["alice"].headers), 404, "not-found")
        assert client.get(f"{log}/{entries['observer']}", headers=t["c"].gm).status_code == 200


# --- events, per viewer (item 3) ------------------------------------------------------------


def _events(client, t, who) -> list[dict]:
    return read_events(client, t["c"].id, who)


def _about(events: list[dict], character_id: str) -> list[tuple[str, dict]]:
    """The events that carry this character, or an entry about it."""
    found = []
    for e in events:
        data = e["data"]
        entry = data.get("entry") or {}
        if data.get("id") == character_id or entry.get("character_id") == character_id:
            found.append((e["type"], data))
    return found


def test_issue21_item3_a_none_npc_is_announced_to_the_gm_only(client, table):
    t = table
    r = client.patch(f"/v1/characters/{t['orc']}", json={"sheet": {"karma": 3}}, headers=t["c"].gm)  # a sheet_edit
    assert r.status_code == 200, r.text
    assert (
        client.post(
            f"/v1/characters/{t['orc']}/tests", json={"stat": "force", "dice": [50]}, headers=t["c"].gm
        ).status_code
        == 201
    )
    assert [k for k, _ in _about(_events(client, t, t["c"].gm), t["orc"])] == [
        "character.created",
        "log.created",
        "character.updated",
        "log.created",
    ]
    for player in (t["alice"], t["bob"]):
        assert _about(_events(client, t, player.headers), t["orc"]) == []
        assert t["orc"] not in json.dumps(_events(client, t, player.headers))


def test_issue21_item3_a_limited_npc_reaches_players_as_they_read_it(client, table):
    t = table
    _access(client, t, t["orc"], "limited")
    r = client.patch(f"/v1/characters/{t['orc']}", json={"name": "Orc chief"}, headers=t["c"].gm)
    assert r.status_code == 200, r.text
    shown = client.get(f"/v1/characters/{t['orc']}", headers=t["alice"].headers).json()
    updates = [d for k, d in _about(_events(client, t, t["alice"].headers), t["orc"]) if k == "character.updated"]
    assert updates[-1] == shown and "sheet" not in updates[-1]
    gm_updates = [d for k, d in _about(_events(client, t, t["c"].gm), t["orc"]) if k == "character.updated"]
    assert gm_updates[-1]["sheet"]["hp"] == 87


def test_issue21_item3_a_hidden_pc_reaches_its_owner_only(client, table):
    """Bran (Bob's) is in a fight hidden: Alice's stream gets none of his tests, edits, free rolls
    or updates, as her REST reads say 404; Bob's gets them all."""
    t = table
    r = client.post(
        f"/v1/campaigns/{t['c'].id}/encounters",
        headers=t["c"].gm,
        json={"name": "Shadows", "combatants": [{"character_id": t["bran"], "hidden": True}]},
    )
    assert r.status_code == 201, r.text
    bob = t["bob"].headers
    # Bob's table die (the GM lets players enter theirs): a test that moves no karma, so the events
    # it sends are known (a random one moved karma 1 time in 4: a character.updated more)
    r = client.patch(
        f"/v1/campaigns/{t['c'].id}", json={"options": {"players_may_enter_dice": True}}, headers=t["c"].gm
    )
    assert r.status_code == 200, r.text
    r = client.post(f"/v1/characters/{t['bran']}/tests", json={"stat": "force", "dice": [50]}, headers=bob)
    assert r.status_code == 201, r.text
    assert (
        client.post(
            f"/v1/campaigns/{t['c'].id}/rolls", json={"expression": "1d6", "character_id": t["bran"]}, headers=bob
        ).status_code
        == 201
    )
    assert (
        client.patch(
            f"/v1/characters/{t['bran']}", json={"sheet": {"notes": "in the shadows"}}, headers=bob
        ).status_code
        == 200
    )
    assert (
        client.patch(f"/v1/characters/{t['bran']}", json={"sheet": {"karma": 2}}, headers=t["c"].gm).status_code == 200
    )
    kinds = ["log.created", "log.created", "character.updated", "log.created", "character.updated"]
    owner_seen = [k for k, _ in _about(_events(client, t, bob), t["bran"])]
    assert owner_seen == ["character.created", *kinds]
    alice_seen = _about(_events(client, t, t["alice"].headers), t["bran"])
    assert [k for k, _ in alice_seen] == ["character.created"]  # before the fight
    assert_problem(client.get(f"/v1/characters/{t['bran']}", headers=t["alice"].headers), 404, "not-found")
