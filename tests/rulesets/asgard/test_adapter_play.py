"""Asgard over HTTP: opposition (AS-T9), cooperation (AS-T6) and character actions
(AS-C5..C10, AS-C12, AS-H3..H5)."""

import pytest

from tests.factories import AS, SHEETS, sheet


@pytest.fixture
def ruleset():
    return AS


@pytest.fixture
def foe(campaign, character_factory):
    return character_factory(
        campaign, sheet(AS, skills={"combat": 5, "defense": 4, "survie": 6}, tier="boss"), kind="npc", name="Jarl"
    )


def sheet_of(client, campaign, ch):
    return client.get(f"/v1/characters/{ch['id']}", headers=campaign.gm).json()["sheet"]


def act(client, campaign, ch, body, status=201, headers=None):
    r = client.post(f"/v1/characters/{ch['id']}/actions", json=body, headers=headers or campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


# --- AS-T9 -----------------------------------------------------------------------


def test_as_t9_opposition_dice_a_then_b_best_result_wins(client, campaign, hero, foe):
    body = {
        "a": {"character_id": hero["id"], "skill": "combat"},
        "b": {"character_id": foe["id"], "skill": "defense"},
        "dice": [4, 4, 4, 3, 3, 3],
    }
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm)
    assert r.status_code == 201, r.text
    out = r.json()
    assert (out["kind"], out["ruleset"], out["winner"], out["winner_character_id"], out["decided_by"]) == (
        "opposed",
        "asgard",
        "a",
        hero["id"],
        "score",
    )
    assert (out["a"]["score"], out["b"]["score"], out["margin"]) == (18, 13, 5)
    assert [(x["value"], x["side"]) for x in out["rolls"]] == [(4, "a")] * 3 + [(3, "b")] * 3


def test_as_t9_tie_skill_then_defender(client, campaign, hero, foe):
    body = {
        "a": {"character_id": hero["id"], "skill": "defense"},
        "b": {"character_id": foe["id"], "skill": "defense"},
        "dice": [3, 3, 3, 3, 3, 3],
    }
    out = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm).json()
    assert (out["winner"], out["decided_by"]) == ("b", "defender")
    body["a"]["skill"] = "survie"  # hero survie 3 + 11 = 14
    body["b"]["skill"] = "combat"  # foe combat 5 + 9 = 14: the higher skill value wins
    body["dice"] = [4, 4, 3, 3, 3, 3]
    out = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm).json()
    assert (out["a"]["score"], out["b"]["score"], out["winner"], out["decided_by"]) == (14, 14, "b", "skill")


def test_as_t9_heroism_spent_per_side_and_409_when_unaffordable(client, campaign, hero, foe, character_factory):
    body = {
        "a": {"character_id": hero["id"], "skill": "combat", "heroism_4d6": True},
        "b": {"character_id": foe["id"], "skill": "defense"},
        "dice": [1, 2, 3, 6, 5, 5, 5],
    }
    out = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm).json()
    assert (out["a"]["natural"], out["a"]["score"], out["b"]["score"], out["winner"]) == (12, 18, 19, "b")
    assert sheet_of(client, campaign, hero)["heroism"] == 2
    poor = character_factory(campaign, sheet(AS, heroism=0), name="Poor")
    body["a"]["character_id"] = poor["id"]
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm)
    assert r.status_code == 409


def test_as_t7_close_skill_in_opposition(client, campaign, hero, foe):
    body = {
        "a": {"character_id": hero["id"], "skill": "combat", "close_skill": True},
        "b": {"character_id": foe["id"], "skill": "defense"},
        "dice": [4, 4, 4, 3, 3, 4],
    }
    out = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm).json()
    assert (out["a"]["score"], out["b"]["score"], out["winner"]) == (13, 14, "b")


# --- AS-T6 -----------------------------------------------------------------------


def test_as_t6_cooperation_leader_adjustments_and_outcome(client, campaign, hero, foe, character_factory):
    third = character_factory(campaign, sheet(AS, skills={"survie": 0}), name="Ulf")
    body = {
        "mode": "cooperation",
        "skill": "survie",
        "difficulty": "difficile",
        "participants": [
            {"character_id": hero["id"]},
            {"character_id": foe["id"]},
            {"character_id": third["id"], "dice": [2, 3, 3]},
        ],
        "dice": [5, 5, 4, 4, 4, 5],
    }
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/group", json=body, headers=campaign.gm)
    assert r.status_code == 201, r.text
    out = r.json()
    # hero 14 + 3 = 17, foe 13 + 6 = 19 leads, Ulf 8 + 0 = 8: 19 + 1 - 1 = 19 < 20
    assert [p["score"] for p in out["participants"]] == [17, 19, 8]
    assert (out["leader"], out["leader_character_id"]) == (1, foe["id"])
    assert [p["adjustment"] for p in out["participants"]] == [1, 0, -1]
    assert (out["score"], out["target"], out["outcome"], out["success"]) == (19, 20, "failure", False)
    assert [(x["value"], x["participant"]) for x in out["rolls"]] == [
        (5, 0),
        (5, 0),
        (4, 0),
        (4, 1),
        (4, 1),
        (5, 1),
        (2, 2),
        (3, 2),
        (3, 2),
    ]
    assert out["kind"] == "group"


def test_as_t6_cooperation_can_succeed_where_the_leader_alone_fails(client, campaign, hero, foe):
    body = {
        "skill": "survie",
        "target": 20,
        "participants": [{"character_id": hero["id"]}, {"character_id": foe["id"]}],
        "dice": [4, 4, 4, 5, 4, 4],
    }
    out = client.post(f"/v1/campaigns/{campaign.id}/tests/group", json=body, headers=campaign.gm).json()
    assert (out["score"], out["outcome"]) == (20, "success")  # 19 + 1 (hero 15)


def test_as_t6_cooperation_rejects_duplicates_and_players(client, campaign, hero, player_factory):
    body = {"skill": "survie", "participants": [{"character_id": hero["id"]}, {"character_id": hero["id"]}]}
    assert client.post(f"/v1/campaigns/{campaign.id}/tests/group", json=body, headers=campaign.gm).status_code == 422
    player = player_factory(campaign)
    body = {"skill": "survie", "participants": [{"character_id": hero["id"]}]}
    assert client.post(f"/v1/campaigns/{campaign.id}/tests/group", json=body, headers=player.headers).status_code == 403


# --- actions -----------------------------------------------------------------------


# rule: AS-C8
def test_as_c8_fall_saves_vitality_with_the_log_entry(client, campaign, hero):
    out = act(client, campaign, hero, {"type": "fall", "metres": 9, "dice": [6, 2, 3, 5, 5, 5]})
    assert (out["kind"], out["type"], out["damage_dice"], out["cancelled"], out["damage"]) == (
        "action",
        "fall",
        [6, 2, 3],
        [6],
        5,
    )
    assert out["effects"]["vitality"] == {"before": 20, "after": 15}
    assert sheet_of(client, campaign, hero)["vitality"] == 15
    log = client.get(f"/v1/campaigns/{campaign.id}/rolls", headers=campaign.gm).json()["items"]
    assert log[0]["id"] == out["id"] and log[0]["damage"] == 5


# rule: AS-C8
def test_as_c8_voluntary_jump_second_test(client, campaign, hero):
    out = act(
        client, campaign, hero, {"type": "fall", "metres": 6, "voluntary": True, "dice": [4, 1, 5, 5, 5, 3, 3, 2]}
    )
    assert (out["cancelled"], out["damage"], len(out["tests"])) == ([4, 1], 0, 2)


# rule: AS-C9
def test_as_c9_fire(client, campaign, hero):
    out = act(client, campaign, hero, {"type": "fire", "size": "blaze", "rounds": 2, "dice": [1, 2, 3, 1, 1, 1]})
    assert (out["damage_per_round"], out["damage"], out["effects"]) == (
        [6, 3],
        9,
        {"vitality": {"before": 20, "after": 11}},
    )
    out = act(client, campaign, hero, {"type": "fire", "size": "torch", "rounds": 2, "dice": [3, 4]})
    assert (out["damage_per_round"], out["damage"]) == ([3, 4], 7)
    assert sheet_of(client, campaign, hero)["vitality"] == 4


def test_as_c5_reaching_zero_rolls_the_mal_en_point_checks(client, campaign, hero):
    # campfire 2 rounds: 6+6, 5+5 = 22 -> vitality 0 in the second round; checks vs 5 + 10 = 15,
    # the damage of that round (AS-C5): resistance 3 + 2+2+2 fails -> 1d6 = 3 rounds; volonte 1 + 6+6+6 automatic success
    out = act(
        client,
        campaign,
        hero,
        {"type": "fire", "size": "campfire", "rounds": 2, "dice": [6, 6, 5, 5, 2, 2, 2, 3, 6, 6, 6]},
    )
    checks = out["effects"]["mal_en_point"]
    assert (checks["damage"], checks["resistance"]["target"], checks["dying"], checks["dies_in_rounds"]) == (
        10,
        15,
        True,
        3,
    )
    assert (checks["volonte"]["outcome"], checks["unconscious_rounds"]) == ("critical_success", None)
    stored = sheet_of(client, campaign, hero)
    assert (stored["vitality"], stored["condition"]["dying"], stored["condition"]["dies_in_rounds"]) == (0, True, 3)
    client_char = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm).json()
    assert client_char["derived"]["mal_en_point"] is True


# rule: AS-C6
def test_as_c5_as_c6_first_aid_stops_dying_and_gives_one_vitality(client, campaign, hero):
    act(
        client,
        campaign,
        hero,
        {"type": "damage", "amount": 22, "protection": True, "dice": [2, 2, 2, 3, 1, 1, 2, 4, 4]},
    )
    stored = sheet_of(client, campaign, hero)
    assert (stored["vitality"], stored["condition"]["dying"], stored["condition"]["unconscious_rounds"]) == (0, True, 8)
    out = act(client, campaign, hero, {"type": "first_aid", "healer_soins": 5, "dice": [2, 2, 1]})
    assert (out["test"]["score"], out["test"]["target"], out["test"]["success"]) == (10, 10, True)
    stored = sheet_of(client, campaign, hero)
    assert (stored["vitality"], stored["condition"]["dying"], stored["condition"]["dies_in_rounds"]) == (1, False, None)
    act(client, campaign, hero, {"type": "first_aid", "dice": [2, 2, 1]}, status=422)  # no longer mal en point


def test_as_c5_standalone_checks_need_zero_vitality(client, campaign, hero):
    act(client, campaign, hero, {"type": "mal_en_point", "damage": 4, "dice": [3, 3, 3, 3, 3, 3]}, status=422)


def test_as_c5_damage_is_gm_only(client, campaign, hero, player_factory, character_factory):
    player = player_factory(campaign)
    mine = character_factory(campaign, SHEETS[AS], player=player, name="Mine")
    act(client, campaign, mine, {"type": "damage", "amount": 3}, status=403, headers=player.headers)


# rule: AS-C7
def test_as_c7_rest_with_a_healer(client, campaign, character_factory):
    hurt = character_factory(campaign, sheet(AS, vitality=5))
    out = act(client, campaign, hurt, {"type": "rest", "healer_soins": 4, "target": 15, "dice": [4, 4, 4]})
    assert (out["gain"], out["effects"]["vitality"]) == (7, {"before": 5, "after": 12})
    out = act(client, campaign, hurt, {"type": "rest"})
    assert (out["gain"], out["effects"]["vitality"], out["rolls"]) == (3, {"before": 12, "after": 15}, [])


# rule: AS-C10
def test_as_c10_asphyxia(client, campaign, hero):
    out = act(client, campaign, hero, {"type": "asphyxia", "rounds": 4, "from_round": 10, "dice": [1, 2, 3, 4, 5]})
    # 10 free; 11: 6 + 3 = 9 < 15 fails; 12, 13: 1d6 each
    assert [r["damage"] for r in out["rounds"]] == [None, None, 4, 5]
    assert (out["out_of_breath"], out["next_round"], out["damage"]) == (True, 14, 9)
    assert sheet_of(client, campaign, hero)["vitality"] == 11


def test_as_c12_chase_turn(client, campaign, hero):
    out = act(client, campaign, hero, {"type": "chase", "mode": "foot", "progression": 3, "dice": [5, 5, 4]})
    assert (out["test"]["skill"], out["test"]["score"], out["test"]["degree"], out["step"], out["progression"]) == (
        "athletisme",
        16,
        "moyen",
        2,
        5,
    )


def test_as_h3_heroic_effect_spends_one(client, campaign, hero):
    out = act(client, campaign, hero, {"type": "heroic_effect", "asset": "fils de thor"})
    assert (out["asset"], out["heroic_effect"], out["effects"]["heroism"]) == (
        "Fils de Thor",
        "relance la foudre",
        {"before": 3, "after": 2},
    )
    act(client, campaign, hero, {"type": "heroic_effect", "asset": "unknown"}, status=422)


# rule: AS-H4
def test_as_h4_cancel_damage_costs_two_and_h6_refuses_overspending(client, campaign, character_factory, count_rows):
    ch = character_factory(campaign, sheet(AS, vitality=16, heroism=3))
    act(client, campaign, ch, {"type": "damage", "amount": 6})
    out = act(client, campaign, ch, {"type": "cancel_damage", "damage": 6, "already_applied": True})
    assert out["effects"] == {"heroism": {"before": 3, "after": 1}, "vitality": {"before": 10, "after": 16}}
    before = count_rows("roll_log", campaign_id=campaign.id)
    act(client, campaign, ch, {"type": "cancel_damage", "damage": 6}, status=409)
    assert count_rows("roll_log", campaign_id=campaign.id) == before
    assert sheet_of(client, campaign, ch)["heroism"] == 1


# rule: AS-H4
def test_as_h4_a_blow_already_applied_gives_back_its_vitality_before_never_a_full_heal(
    client, campaign, character_factory
):
    """A 5-point blow at vitality 5 (AS-C5: mal en point) cancelled as `damage: 20` gave vitality
    20: exactly what the blow took comes back (5), the mal en point undone; the blow is given back
    once (the character's latest vitality change is then the cancel: 422, nothing spent)."""
    ch = character_factory(campaign, sheet(AS, vitality=5, vitality_max=20, heroism=4))
    blow = act(client, campaign, ch, {"type": "damage", "amount": 5, "seed": 1})
    assert blow["effects"]["vitality"] == {"before": 5, "after": 0}
    out = act(client, campaign, ch, {"type": "cancel_damage", "damage": 20, "already_applied": True})
    assert (out["lost"], out["effects"]["vitality"]) == (5, {"before": 0, "after": 5})
    condition = sheet_of(client, campaign, ch)["condition"]
    assert (condition["dying"], condition["unconscious_rounds"]) == (False, None)
    again = act(client, campaign, ch, {"type": "cancel_damage", "damage": 20, "already_applied": True}, status=422)
    assert again["errors"][0]["loc"][-1] == "already_applied"
    assert (sheet_of(client, campaign, ch)["vitality"], sheet_of(client, campaign, ch)["heroism"]) == (5, 2)


# rule: AS-H4
def test_as_h4_never_above_the_vitality_before_the_blow_and_only_a_blow_just_taken(client, campaign, character_factory):
    """Healed since the blow (AS-C7 rest: + resistance), a cancel without `damage_id` finds no blow
    just taken (422); naming the blow gives back up to its vitality before (10), never more."""
    ch = character_factory(campaign, sheet(AS, vitality=10, vitality_max=20, heroism=4))
    blow = act(client, campaign, ch, {"type": "damage", "amount": 6})
    rested = act(client, campaign, ch, {"type": "rest"})["effects"]["vitality"]
    assert rested["before"] == 4 < rested["after"] < 10
    act(client, campaign, ch, {"type": "cancel_damage", "damage": 6, "already_applied": True}, status=422)
    out = act(client, campaign, ch, {"type": "cancel_damage", "damage": 6, "damage_id": blow["id"]})
    assert (out["lost"], out["effects"]["vitality"]) == (6, {"before": rested["after"], "after": 10})


# rule: AS-H5
def test_as_h5_protect_ally_takes_the_damage_for_one_heroism(client, campaign, hero, foe):
    out = act(client, campaign, hero, {"type": "protect_ally", "ally_id": foe["id"], "damage": 7, "protection": True})
    assert (out["damage"], out["effects"]["heroism"], out["effects"]["vitality"]) == (
        5,
        {"before": 3, "after": 2},
        {"before": 20, "after": 15},
    )
