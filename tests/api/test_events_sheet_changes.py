"""Issue 25 (API.md "Events: a complete mirror"): a character test, reroll, action or level-up
that changes a sheet sends `character.updated` with the character as each viewer reads it,
before its `log.created`; one that changes no sheet sends `log.created` only."""

from __future__ import annotations

from typing import Any

from tests.api.support import read_events
from tests.factories import AS, GC, RB, SHEETS, WA, sheet


def _since(client, campaign, headers, after: int) -> list[dict[str, Any]]:
    return [e for e in read_events(client, campaign.id, headers) if e["id"] > after]


def _last(client, campaign) -> int:
    events = read_events(client, campaign.id, campaign.gm)
    return events[-1]["id"] if events else 0


def _post(client, path: str, body: dict, headers: dict) -> dict:
    r = client.post(path, json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def test_issue25_gc_k1_a_test_that_moves_karma_sends_character_updated_then_log_created(
    client, campaign_factory, character_factory, player_factory
):
    camp = campaign_factory(GC, {"players_may_enter_dice": True})
    alice = player_factory(camp, "Alice")
    hero = character_factory(camp, SHEETS[GC], player=alice)
    after = _last(client, camp)
    body = _post(client, f"/v1/characters/{hero['id']}/tests", {"stat": "force", "dice": [42]}, alice.headers)
    assert body["effects"]["karma"]["after"] != body["effects"]["karma"]["before"]
    for headers in (camp.gm, alice.headers):
        events = _since(client, camp, headers, after)
        assert [e["type"] for e in events] == ["character.updated", "log.created"]
        updated = events[0]["data"]
        assert updated["id"] == hero["id"]
        assert updated["sheet"]["karma"] == body["effects"]["karma"]["after"]
        assert updated["version"] == hero["version"] + 1
        assert events[1]["data"]["characters_changed"] == [{"id": hero["id"], "version": updated["version"]}]
    r = client.get(f"/v1/characters/{hero['id']}", headers=alice.headers)
    assert r.json()["sheet"] == updated["sheet"] and r.json()["version"] == updated["version"]


def test_issue25_a_test_that_changes_no_sheet_sends_log_created_only(client, campaign_factory, character_factory):
    camp = campaign_factory(RB)
    hero = character_factory(camp, SHEETS[RB])
    after = _last(client, camp)
    _post(client, f"/v1/characters/{hero['id']}/tests", {"stat": "FOR", "dice": [37]}, camp.gm)  # RB-T1: no effect
    assert [e["type"] for e in _since(client, camp, camp.gm, after)] == ["log.created"]


def test_issue25_wa_t5_an_action_saving_the_same_sheet_sends_no_character_updated(
    client, campaign_factory, character_factory
):
    camp = campaign_factory(WA)
    hero = character_factory(camp, sheet(WA, keep=("level", "stats", "hp", "hp_max")))
    after = _last(client, camp)
    path = f"/v1/characters/{hero['id']}/actions"
    _post(client, path, {"type": "pending_modifier", "stat": "FOR", "value": 0}, camp.gm)  # nothing pending: same sheet
    assert [e["type"] for e in _since(client, camp, camp.gm, after)] == ["log.created"]
    after = _last(client, camp)
    _post(client, path, {"type": "pending_modifier", "stat": "FOR", "value": 2}, camp.gm)
    events = _since(client, camp, camp.gm, after)
    assert [e["type"] for e in events] == ["character.updated", "log.created"]
    assert events[0]["data"]["sheet"]["pending"] == {"FOR": 2}


def test_issue25_as_h1_h2_a_reroll_and_an_action_spending_heroism_send_character_updated(
    client, campaign_factory, character_factory
):
    camp = campaign_factory(AS)
    hero = character_factory(camp, sheet(AS, drop=("weapons", "tier"), heroism=5))
    tests = f"/v1/characters/{hero['id']}/tests"
    rolled = _post(client, tests, {"skill": "defense", "difficulty": "moyen", "seed": 4}, camp.gm)
    after = _last(client, camp)
    _post(client, f"{tests}/{rolled['id']}/reroll", {"seed": 5}, camp.gm)  # AS-H2: 1 heroism
    events = _since(client, camp, camp.gm, after)
    assert [e["type"] for e in events] == ["character.updated", "log.created"]
    assert events[0]["data"]["sheet"]["heroism"] == 4
    after = _last(client, camp)
    _post(client, f"/v1/characters/{hero['id']}/actions", {"type": "heroic_effect", "asset": "Fils de Thor"}, camp.gm)
    events = _since(client, camp, camp.gm, after)
    assert [e["type"] for e in events] == ["character.updated", "log.created"]
    assert events[0]["data"]["sheet"]["heroism"] == 3


def test_issue25_gc_l1_a_level_up_sends_character_updated(client, campaign_factory, character_factory):
    camp = campaign_factory(GC)
    hero = character_factory(camp, {**SHEETS[GC], "level": 1})
    after = _last(client, camp)
    body = {"mode": "two_d10", "stats": ["force", "esprit"], "chance_bonus_pool": "hp", "seed": 1}
    _post(client, f"/v1/characters/{hero['id']}/level-ups", body, camp.gm)
    events = _since(client, camp, camp.gm, after)
    assert [e["type"] for e in events] == ["character.updated", "log.created"]
    assert events[0]["data"]["sheet"]["level"] == 2


def test_issue25_a_hidden_gm_roll_changing_a_sheet_is_the_gms_and_the_owners_alone(
    client, campaign_factory, character_factory, player_factory
):
    camp = campaign_factory(GC)
    alice, bob = player_factory(camp, "Alice"), player_factory(camp, "Bob")
    hero = character_factory(camp, SHEETS[GC], player=alice)
    after = _last(client, camp)
    _post(client, f"/v1/characters/{hero['id']}/tests", {"stat": "force", "dice": [42], "hidden": True}, camp.gm)
    assert [e["type"] for e in _since(client, camp, camp.gm, after)] == ["character.updated", "log.created"]
    assert [e["type"] for e in _since(client, camp, alice.headers, after)] == ["character.updated"]
    assert _since(client, camp, bob.headers, after) == []
