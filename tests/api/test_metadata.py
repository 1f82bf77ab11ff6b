"""API.md round 3 `metadata` (issue 25 item 9): a client's own ids on campaigns and characters,
a string -> string map (at most 50 keys, key <= 40 characters, value <= 500), written by whoever
may write the resource's free fields, returned as stored; PATCH takes a merge patch (null removes)."""

from __future__ import annotations

import pytest

from tests.api.support import assert_validation, read_events
from tests.factories import GC, sheet

VTT = {"foundry_actor": "Actor.x1Y2z3", "discord_channel": "1234567890"}


def test_a_campaign_keeps_its_metadata_and_patches_it_by_merge(client):
    r = client.post("/v1/campaigns", json={"name": "Les Ombres", "ruleset": GC, "metadata": VTT})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["metadata"] == VTT
    gm = {"Authorization": f"Bearer {created['gm_token']}"}
    path = f"/v1/campaigns/{created['id']}"
    assert client.get(path, headers=gm).json()["metadata"] == VTT
    r = client.patch(path, json={"metadata": {"discord_channel": None, "roll20": "c-77"}}, headers=gm)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == {"foundry_actor": "Actor.x1Y2z3", "roll20": "c-77"}
    assert client.get(path, headers=gm).json()["metadata"] == {"foundry_actor": "Actor.x1Y2z3", "roll20": "c-77"}
    updated = [e for e in read_events(client, created["id"], gm) if e["type"] == "campaign.updated"]
    assert [e["data"]["metadata"] for e in updated] == [{"foundry_actor": "Actor.x1Y2z3", "roll20": "c-77"}]
    assert updated[0]["data"]["ruleset"] == GC and "role" not in updated[0]["data"]  # the campaign as GET returns it


def test_a_campaign_without_metadata_has_an_empty_map(campaign, client):
    assert campaign.body["metadata"] == {}
    assert client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).json()["metadata"] == {}


def test_a_players_campaign_metadata_change_is_refused(campaign, alice, client):
    r = client.patch(f"/v1/campaigns/{campaign.id}", json={"metadata": {"a": "b"}}, headers=alice.headers)
    assert r.status_code == 403
    assert client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).json()["metadata"] == {}


def test_a_character_keeps_its_metadata_through_tests_and_edits(campaign, client):
    body = {"name": "Aiko", "kind": "pc", "sheet": sheet(GC), "metadata": VTT}
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm)
    assert r.status_code == 201, r.text
    character = r.json()
    assert character["metadata"] == VTT
    path = f"/v1/characters/{character['id']}"
    r = client.post(f"{path}/tests", json={"stat": "force", "dice": [10]}, headers=campaign.gm)
    assert r.status_code == 201, r.text
    r = client.patch(path, json={"sheet": {"karma": 1}}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == VTT  # a sheet's save keeps it
    r = client.patch(path, json={"metadata": {"foundry_actor": "Actor.new"}}, headers=campaign.gm)
    assert r.json()["metadata"] == {"foundry_actor": "Actor.new", "discord_channel": "1234567890"}
    assert client.get(path, headers=campaign.gm).json()["metadata"] == {
        "foundry_actor": "Actor.new",
        "discord_channel": "1234567890",
    }
    updated = [e for e in read_events(client, campaign.id, campaign.gm) if e["type"] == "character.updated"]
    assert updated[-1]["data"]["metadata"] == {"foundry_actor": "Actor.new", "discord_channel": "1234567890"}


def test_the_owner_writes_its_characters_metadata_another_player_does_not(campaign, alice, bob, client):
    mine = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "Aiko", "kind": "pc", "sheet": sheet(GC)},
        headers=alice.headers,
    ).json()
    path = f"/v1/characters/{mine['id']}"
    r = client.patch(path, json={"metadata": {"token": "t-1"}}, headers=alice.headers)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == {"token": "t-1"}
    assert client.patch(path, json={"metadata": {"token": "stolen"}}, headers=bob.headers).status_code == 403
    assert client.get(path, headers=campaign.gm).json()["metadata"] == {"token": "t-1"}


def test_a_limited_reader_does_not_see_the_metadata(campaign, alice, client):
    body = {"name": "Boss", "kind": "npc", "sheet": sheet(GC), "metadata": VTT, "player_access": "limited"}
    npc = client.post(f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm).json()
    shown = client.get(f"/v1/characters/{npc['id']}", headers=alice.headers).json()
    assert shown["player_access"] == "limited" and "metadata" not in shown


@pytest.mark.parametrize(
    ("metadata", "loc"),
    [
        ({f"k{i}": "v" for i in range(51)}, ["body", "metadata"]),
        ({"k" * 41: "v"}, ["body", "metadata", "k" * 41, "[key]"]),
        ({"": "v"}, ["body", "metadata", "", "[key]"]),
        ({"k": "v" * 501}, ["body", "metadata", "k"]),
        ({"k": 7}, ["body", "metadata", "k"]),
        ({"k": "a\x00b"}, ["body", "metadata", "k"]),
    ],
)
def test_metadata_out_of_bounds_is_a_422_and_nothing_is_created(client, campaign, metadata, loc, count_rows):
    before = count_rows("character")
    body = {"name": "Aiko", "kind": "pc", "sheet": sheet(GC), "metadata": metadata}
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm)
    assert_validation(r, [loc])
    assert count_rows("character") == before


def test_a_patch_beyond_fifty_keys_is_a_422_and_changes_nothing(client, campaign):
    full = {f"k{i}": "v" for i in range(50)}
    body = {"name": "Aiko", "kind": "pc", "sheet": sheet(GC), "metadata": full}
    character = client.post(f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm).json()
    path = f"/v1/characters/{character['id']}"
    r = client.patch(path, json={"metadata": {"one_more": "v"}}, headers=campaign.gm)
    # the code a body of 51 keys answers (above): one limit, one code
    assert assert_validation(r, [["body", "metadata"]])["code"] == "validation_failed"
    after = client.get(path, headers=campaign.gm).json()
    assert after["metadata"] == full and after["version"] == character["version"]
    r = client.patch(path, json={"metadata": {"k0": None, "one_more": "v"}}, headers=campaign.gm)  # 50 again
    assert r.status_code == 200 and len(r.json()["metadata"]) == 50 and "k0" not in r.json()["metadata"]
