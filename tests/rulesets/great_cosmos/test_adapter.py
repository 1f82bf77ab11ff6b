"""Great Cosmos through the HTTP API: sheets (GC-S, GC-I), tests (GC-T, GC-K), odds, level-ups (GC-L)."""

from fractions import Fraction

import pytest

from tests.factories import GC, SHEETS, sheet, stats
from tests.rulesets.great_cosmos.test_rules_odds import brute_force


def post_test(client, campaign, hero, **body):
    return client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers=campaign.gm)


def get(client, campaign, hero):
    return client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm).json()


def error_locs(r):
    return [e["loc"] for e in r.json().get("errors", [])]


# --- sheets -------------------------------------------------------------------------


# rule: GC-S10
def test_gc_s6_gc_s7_gc_s10_defaults_filled_and_derived(hero):
    s = hero["sheet"]
    assert (s["light_points"], s["dark_points"], s["mental_health"]) == (1, 1, 100)
    d = hero["derived"]
    assert d["mental_health"] == {"value": 100, "min": 0, "max": 100, "insane": False}
    assert d["insane"] is False
    assert d["max_move"] == 3  # GC-D2: ceil(55 / 20)
    assert (d["inventory"]["capacity"], d["inventory"]["used"], d["inventory"]["free"]) == (24, 0, 24)


@pytest.mark.parametrize(
    "race,light,dark,mh",
    [
        ("magical_girl", 2, 1, 50),
        ("gardien", 2, 1, 50),
        ("succube", 1, 2, 150),
        ("onikaosu", 1, 2, 150),
        ("elementaire", 1, 1, 100),
        ("machina", 1, 1, 100),
    ],
)
def test_gc_s3_gc_s6_gc_s7_race_defaults(campaign, character_factory, race, light, dark, mh):
    c = character_factory(campaign, sheet(GC, race=race))
    assert (c["sheet"]["light_points"], c["sheet"]["dark_points"], c["sheet"]["mental_health"]) == (light, dark, mh)


def test_gc_s1_furtivite_is_accepted_and_stored_as_agilite(campaign, character_factory):
    given = {**SHEETS[GC]["stats"]}
    given["furtivite"] = given.pop("agilite")
    c = character_factory(campaign, sheet(GC, stats=given))
    assert c["sheet"]["stats"]["agilite"] == 55 and "furtivite" not in c["sheet"]["stats"]


def test_gc_s1_stat_out_of_range_is_422(client, campaign):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        headers=campaign.gm,
        json={"name": "X", "kind": "pc", "sheet": sheet(GC, stats=stats(GC, force=101))},
    )
    assert r.status_code == 422
    assert ["body", "sheet", "stats", "force"] in error_locs(r)


def test_gc_s7_mental_health_outside_race_bounds_needs_gm_override(client, campaign, character_factory):
    body = {"name": "X", "kind": "pc", "sheet": sheet(GC, race="gardien", mental_health=60)}
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", headers=campaign.gm, json=body)
    assert r.status_code == 422
    assert ["body", "sheet", "mental_health"] in error_locs(r)
    assert "0..50" in r.json()["detail"]
    c = character_factory(campaign, sheet(GC, race="gardien", mental_health=60), gm_override=True)
    assert c["sheet"]["mental_health"] == 60
    assert c["derived"]["mental_health"]["max"] == 50


def test_gc_s7_mental_health_0_is_insane(client, campaign, hero):
    r = client.patch(f"/v1/characters/{hero['id']}", headers=campaign.gm, json={"sheet": {"mental_health": 0}})
    assert r.status_code == 200, r.text
    assert r.json()["derived"]["insane"] is True


INVENTORY = {
    "items": [
        {"name": "Épée longue", "kind": "two_handed_weapon", "slots": 5, "damage": "2d6+3"},
        {"name": "Casque", "kind": "armor", "piece": "head", "slots": 1},
        {"name": "Potion", "kind": "item", "slots": 1, "quantity": 2, "container": "ceinture"},
        {"name": "Bague", "kind": "trinket"},
        {"name": "Dé", "kind": "trinket"},
    ],
    "money": 5001,
    "purse_slots": 2,
    "containers": [{"name": "ceinture", "slots": 2}],
}


# rule: GC-I3
def test_gc_i1_gc_i2_gc_i3_inventory_derived(campaign, character_factory):
    c = character_factory(campaign, sheet(GC, stats=stats(GC, force=52), inventory=INVENTORY))
    inv = c["derived"]["inventory"]
    # force 52 -> 20 slots; 5 + 1 + 2x1 + 1 trinket stack = 9 item slots; 5001 PO -> 2 slots
    assert (inv["capacity"], inv["items_slots"], inv["money_slots"], inv["used"], inv["free"]) == (20, 9, 2, 11, 9)
    assert inv["containers"] == {"ceinture": {"slots": 2, "used": 2, "free": 0}}
    assert inv["purse"] == {"slots": 2, "used": 2, "free": 0}


@pytest.mark.parametrize(
    "inventory,loc",
    [
        ({**INVENTORY, "money": 10001}, ["body", "sheet", "inventory", "money"]),
        (
            {**INVENTORY, "items": INVENTORY["items"] + [{"name": "Hache", "kind": "two_handed_weapon", "slots": 4}]},
            ["body", "sheet", "inventory", "items"],
        ),
        (
            {**INVENTORY, "items": INVENTORY["items"] + [{"name": "Corde", "slots": 1, "container": "ceinture"}]},
            ["body", "sheet", "inventory", "items"],
        ),
        (
            {**INVENTORY, "items": INVENTORY["items"] + [{"name": "Coffre", "slots": 3}] * 4},
            ["body", "sheet", "inventory"],
        ),
        (
            {"items": [{"name": "Lance", "kind": "two_handed_weapon", "slots": 3}]},
            ["body", "sheet", "inventory", "items", "0", "slots"],
        ),
    ],
)
def test_gc_i4_overloading_is_refused(client, campaign, inventory, loc):
    body = {"name": "X", "kind": "pc", "sheet": sheet(GC, stats=stats(GC, force=52), inventory=inventory)}
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", headers=campaign.gm, json=body)
    assert r.status_code == 422, r.text
    assert loc in error_locs(r)


def test_gc_i4_patch_that_overloads_changes_nothing(client, campaign, character_factory):
    c = character_factory(campaign, sheet(GC, stats=stats(GC, force=52), inventory=INVENTORY))
    r = client.patch(f"/v1/characters/{c['id']}", headers=campaign.gm, json={"sheet": {"inventory": {"money": 50000}}})
    assert r.status_code == 422
    after = client.get(f"/v1/characters/{c['id']}", headers=campaign.gm).json()
    assert after["version"] == c["version"] and after["sheet"]["inventory"]["money"] == 5001


# --- tests ------------------------------------------------------------------------------


# rule: GC-S10
def test_gc_s10_ruleset_description(client):
    body = client.get("/v1/rulesets/great-cosmos").json()
    assert body["stats"] == ["force", "esprit", "charisme", "agilite", "precision", "chance"]
    assert body["races"]["succube"] == {"light_points": 1, "dark_points": 2, "mental_health": {"min": 0, "max": 150}}


def test_gc_t1_player_table_dice_need_the_option(client, campaign, player_factory, character_factory):
    alice = player_factory(campaign)
    c = character_factory(campaign, SHEETS[GC], player=alice)
    r = client.post(f"/v1/characters/{c['id']}/tests", headers=alice.headers, json={"stat": "force", "dice": [5]})
    assert r.status_code == 403
    r = client.post(f"/v1/characters/{c['id']}/tests", headers=alice.headers, json={"stat": "force", "seed": 3})
    assert r.status_code == 403  # a seed chooses the dice as surely (issue 21 item 2)
    r = client.post(f"/v1/characters/{c['id']}/tests", headers=alice.headers, json={"stat": "force"})
    assert (r.status_code, r.json()["provenance"]) == (201, "server")


def test_gc_t1_gc_t2_gc_k1_test_result_and_karma_saved(client, campaign, hero):
    r = post_test(client, campaign, hero, stat="force", dice=[42])
    assert r.status_code == 201, r.text
    b = r.json()
    assert (b["natural"], b["score"], b["target"], b["outcome"], b["success"]) == (
        42,
        42,
        68,
        "super_critical_success",
        True,
    )
    assert b["effects"]["karma"]["before"] == 0 and b["effects"]["karma"]["after"] == -2
    assert b["rolls"] == [{"die": "d100", "value": 42, "purpose": "test"}]
    assert get(client, campaign, hero)["sheet"]["karma"] == -2
    log = client.get(f"/v1/campaigns/{campaign.id}/rolls", headers=campaign.gm).json()["items"]
    assert log[0]["id"] == b["id"] and log[0]["effects"]["karma"]["after"] == -2


def test_gc_k2_karma_die_via_http(client, campaign, character_factory):
    c = character_factory(campaign, sheet(GC, karma=-5))
    b = post_test(client, campaign, c, stat="furtivite", modifier=5, dice=[55, 6]).json()
    assert (b["stat"], b["target"], b["score"], b["outcome"]) == ("agilite", 60, 61, "failure")
    assert b["rolls"] == [
        {"die": "d100", "value": 55, "purpose": "test"},
        {"die": "d10", "value": 6, "purpose": "karma"},
    ]
    r = post_test(client, campaign, c, stat="force", dice=[55])
    assert r.status_code == 422
    assert r.json()["needed"] == {"index": 1, "die": "d10", "purpose": "karma"}
    assert get(client, campaign, c)["version"] == c["version"]


def test_gc_k5_special_posture_keeps_stored_karma(client, campaign, character_factory):
    c = character_factory(campaign, sheet(GC, karma=2, posture="sepulcrale"))
    b = post_test(client, campaign, c, stat="force", dice=[42]).json()
    assert b["outcome"] == "critical_success"
    assert b["effects"]["karma"] == {"before": 2, "after": 2, "used": -10, "locked": True}
    assert get(client, campaign, c)["sheet"]["karma"] == 2


def test_gc_t3_intuition_test(client, campaign, hero):
    b = post_test(client, campaign, hero, stat="intuition", dice=[4]).json()
    assert (b["natural"], b["target"], b["outcome"], b["intuition"]) == (4, 3, "failure", "bad")
    assert b["rolls"] == [{"die": "d6", "value": 4, "purpose": "intuition"}]
    assert b["effects"]["karma"] == {"before": 0, "after": 0}


def test_gc_t1_unknown_stat_and_extra_fields_are_422(client, campaign, hero):
    assert post_test(client, campaign, hero, stat="luck").status_code == 422
    assert post_test(client, campaign, hero, stat="force", difficulty="hard").status_code == 422


def test_gc_t2_extreme_scores_option_off(client, campaign_factory, character_factory):
    campaign = campaign_factory("great-cosmos", {"extreme_scores": False})
    c = character_factory(campaign, sheet(GC, karma=6))
    b = post_test(client, campaign, c, stat="force", dice=[3, 3]).json()
    assert (b["score"], b["outcome"]) == (0, "critical_success")


def test_gc_t1_seeded_test_is_reproducible(client, campaign, character_factory):
    a = character_factory(campaign, sheet(GC, karma=-6), name="A")
    b = character_factory(campaign, sheet(GC, karma=-6), name="B")
    ra = post_test(client, campaign, a, stat="force", seed=1234).json()
    rb = post_test(client, campaign, b, stat="force", seed=1234).json()
    assert (ra["rolls"], ra["outcome"], ra["score"]) == (rb["rolls"], rb["outcome"], rb["score"])


# --- odds ---------------------------------------------------------------------------------


@pytest.mark.parametrize("karma", [-10, -5, 0, 7, 10])
def test_gc_t2_gc_k2_odds_endpoint_matches_brute_force(client, campaign, character_factory, karma):
    c = character_factory(campaign, sheet(GC, karma=karma))
    r = client.post(
        f"/v1/characters/{c['id']}/tests/odds", headers=campaign.gm, json={"stat": "precision", "modifier": 10}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    dist, after = brute_force(55, karma)
    for outcome, p in dist.items():
        assert Fraction(body["outcomes"][outcome]["probability"]) == p
        assert body["outcomes"][outcome]["p"] == float(p)
    success = sum(p for o, p in dist.items() if o.endswith("success"))
    assert body["success"]["probability"] == f"{success.numerator}/{success.denominator}"
    assert {int(k): Fraction(v["probability"]) for k, v in body["karma_after"].items()} == after


def test_gc_t2_odds_karma_0_stat_60(client, campaign, hero):
    body = client.post(f"/v1/characters/{hero['id']}/tests/odds", headers=campaign.gm, json={"stat": "chance"}).json()
    assert body["success"] == {"probability": "3/5", "p": 0.6}
    assert body["outcomes"]["success"]["probability"] == "49/100"


def test_gc_t3_intuition_odds(client, campaign, hero):
    body = client.post(
        f"/v1/characters/{hero['id']}/tests/odds", headers=campaign.gm, json={"stat": "intuition"}
    ).json()
    assert body["success"]["probability"] == "1/2"


# --- level-ups -------------------------------------------------------------------------------


def level_up(client, campaign, c, **body):
    return client.post(f"/v1/characters/{c['id']}/level-ups", headers=campaign.gm, json=body)


def at_level(campaign, character_factory, level, **extra):
    return character_factory(campaign, sheet(GC, level=level, **extra))


def test_gc_l1_level2_two_d10_via_http(client, campaign, hero):
    r = level_up(
        client,
        campaign,
        hero,
        mode="two_d10",
        stats=["force", "furtivite"],
        chance_bonus_pool="mp",
        dice=[9, 4, 30, 12, 5],
    )
    assert r.status_code == 201, r.text
    b = r.json()
    assert b["kind"] == "level_up" and b["level"] == {"before": 1, "after": 2}
    assert [(c["field"], c["before"], c["after"], c["dice"]) for c in b["changes"]] == [
        ("level", 1, 2, []),
        ("stats.force", 68, 77, [9]),
        ("stats.agilite", 55, 59, [4]),
        ("mp_max", 50, 67, [12, 5]),
        ("mp", 50, 67, [12, 5]),
    ]
    assert b["chance_test"]["outcome"] == "success" and b["chance_test"]["target"] == 60
    assert b["chance_bonus"] == {"pool": "mp", "dice": [12, 5], "total": 17}
    assert [x["die"] for x in b["rolls"]] == ["d10", "d10", "d100", "d20", "d20"]
    s = get(client, campaign, hero)["sheet"]
    assert (s["level"], s["stats"]["force"], s["stats"]["agilite"], s["mp_max"], s["mp"]) == (2, 77, 59, 67, 67)
    history = client.get(f"/v1/characters/{hero['id']}/level-ups", headers=campaign.gm).json()["items"]
    assert [h["id"] for h in history] == [b["id"]]


def test_gc_l1_level2_one_d20_capped_at_80(client, campaign, hero):
    b = level_up(client, campaign, hero, mode="one_d20", stats=["force"], chance_bonus_pool="hp", dice=[20, 70]).json()
    assert b["changes"][1] == {"field": "stats.force", "before": 68, "after": 80, "dice": [20]}
    assert b["chance_bonus"] is None


def test_gc_l2_level3_lowest_stat(client, campaign, character_factory):
    c = at_level(campaign, character_factory, 2)
    b = level_up(client, campaign, c, chance_bonus_pool="hp", dice=[6, 70]).json()
    assert b["rule"] == "GC-L2" and b["changes"][1] == {
        "field": "stats.charisme",
        "before": 40,
        "after": 46,
        "dice": [6],
    }


def test_gc_l3_level4_pool(client, campaign, character_factory):
    c = at_level(campaign, character_factory, 3, hp=80)
    b = level_up(client, campaign, c, pool="hp", chance_bonus_pool="hp", dice=[55, 70]).json()
    assert b["rule"] == "GC-L3"
    s = get(client, campaign, c)["sheet"]
    assert (s["hp_max"], s["hp"]) == (155, 135)


def test_gc_l4_level5_transfers_and_points(client, campaign, character_factory):
    c = at_level(campaign, character_factory, 4)
    b = level_up(
        client,
        campaign,
        c,
        transfers=[{"from": "charisme", "to": "force", "points": 10}],
        light=1,
        dark=2,
        chance_bonus_pool="hp",
        dice=[70],
    )
    assert b.status_code == 201, b.text
    s = get(client, campaign, c)
    assert (s["sheet"]["stats"]["force"], s["sheet"]["stats"]["charisme"]) == (78, 30)
    assert (s["sheet"]["light_points"], s["sheet"]["dark_points"]) == (2, 3)
    assert s["derived"]["final_skill_unlocked"] is True


def test_gc_l5_level6_changes(client, campaign, character_factory):
    c = at_level(campaign, character_factory, 5)
    b = level_up(client, campaign, c, changes={"esprit": 5, "mp_max": 10}, chance_bonus_pool="hp", dice=[70])
    assert b.status_code == 201, b.text
    s = get(client, campaign, c)["sheet"]
    assert (s["level"], s["stats"]["esprit"], s["mp_max"], s["mp"]) == (6, 55, 60, 60)


def test_gc_l6_chance_test_karma_saved(client, campaign, character_factory):
    c = at_level(campaign, character_factory, 5, karma=5)
    b = level_up(client, campaign, c, chance_bonus_pool="hp", dice=[95, 1]).json()
    assert (b["chance_test"]["score"], b["chance_test"]["outcome"]) == (94, "critical_failure")
    assert b["chance_test"]["rolls"] == [
        {"die": "d100", "value": 95, "purpose": "test"},
        {"die": "d10", "value": 1, "purpose": "karma"},
    ]
    assert get(client, campaign, c)["sheet"]["karma"] == 6


@pytest.mark.parametrize(
    "level,body,loc",
    [
        (1, {"stats": ["force"]}, ["body", "mode"]),
        (1, {"mode": "two_d10", "stats": ["force"]}, ["body", "stats"]),
        (1, {"mode": "one_d20", "stats": ["force"], "pool": "hp"}, ["body", "pool"]),
        (2, {"stat": "force"}, ["body", "stat"]),
        (3, {}, ["body", "pool"]),
        (4, {"light": 1, "dark": 1}, ["body", "light"]),  # fewer than level 5's +3 (a GM grant may add more, GC-S6)
        (
            4,
            {"light": 3, "dark": 0, "transfers": [{"from": "esprit", "to": "force", "points": 11}]},
            ["body", "transfers", 0, "points"],
        ),
        (
            4,
            {
                "light": 3,
                "dark": 0,
                "transfers": [
                    {"from": "esprit", "to": "force", "points": 6},
                    {"from": "esprit", "to": "chance", "points": 5},
                ],
            },
            ["body", "transfers"],
        ),
        (5, {"changes": {"force": 50}}, ["body", "changes", "force"]),
        (5, {"changes": {"wisdom": 1}}, ["body", "changes", "wisdom"]),
    ],
)
# rule: GC-L7
def test_gc_l7_illegal_level_up_is_422_and_changes_nothing(client, campaign, character_factory, level, body, loc):
    c = at_level(campaign, character_factory, level)
    r = level_up(client, campaign, c, chance_bonus_pool="hp", dice=[5, 5, 5], **body)
    assert r.status_code == 422, r.text
    assert loc in error_locs(r)
    after = get(client, campaign, c)
    assert after["version"] == c["version"] and after["sheet"] == c["sheet"]
    assert client.get(f"/v1/characters/{c['id']}/level-ups", headers=campaign.gm).json()["items"] == []


# rule: GC-L7
def test_gc_l7_missing_chance_bonus_pool_is_422(client, campaign, hero):
    r = client.post(
        f"/v1/characters/{hero['id']}/level-ups",
        headers=campaign.gm,
        json={"mode": "one_d20", "stats": ["force"], "dice": [5, 70]},
    )
    assert r.status_code == 422 and ["body", "chance_bonus_pool"] in error_locs(r)


# rule: GC-L7
def test_gc_l7_level_up_is_gm_only(client, campaign, player_factory, character_factory):
    alice = player_factory(campaign)
    c = character_factory(campaign, SHEETS[GC], player=alice)
    r = client.post(
        f"/v1/characters/{c['id']}/level-ups",
        headers=alice.headers,
        json={"mode": "one_d20", "stats": ["force"], "chance_bonus_pool": "hp"},
    )
    assert r.status_code == 403


def test_gc_i4_level_up_lowering_force_below_the_load_is_refused(client, campaign, character_factory):
    inv = {"items": [{"name": "Sac", "slots": 3}] * 8}  # 24 slots: force 68 carries 24
    c = at_level(campaign, character_factory, 4, inventory=inv)
    r = level_up(
        client,
        campaign,
        c,
        transfers=[{"from": "force", "to": "esprit", "points": 9}],
        light=3,
        dark=0,
        chance_bonus_pool="hp",
        dice=[70],
    )
    assert r.status_code == 422 and ["body", "transfers"] in error_locs(r)


# --- sheet fields (GC-S2, GC-S4, GC-S5, GC-S8, GC-S9) -------------------------------------------


def create(client, campaign, s):
    return client.post(
        f"/v1/campaigns/{campaign.id}/characters", headers=campaign.gm, json={"name": "X", "kind": "pc", "sheet": s}
    )


def test_gc_s2_intuition_1_to_6_default_3(client, campaign):
    minimal = {k: v for k, v in SHEETS[GC].items() if k != "intuition"}
    assert create(client, campaign, minimal).json()["sheet"]["intuition"] == 3
    r = create(client, campaign, sheet(GC, intuition=7))
    assert r.status_code == 422 and ["body", "sheet", "intuition"] in error_locs(r)


def test_gc_s4_karma_within_minus_10_plus_10_starts_at_0(client, campaign):
    minimal = {k: v for k, v in SHEETS[GC].items() if k != "karma"}
    assert create(client, campaign, minimal).json()["sheet"]["karma"] == 0
    r = create(client, campaign, sheet(GC, karma=11))
    assert r.status_code == 422 and ["body", "sheet", "karma"] in error_locs(r)


def test_gc_s5_level_and_pools(client, campaign):
    minimal = {k: v for k, v in SHEETS[GC].items() if k not in ("level", "hp", "mp")}
    s = create(client, campaign, minimal).json()["sheet"]
    assert (s["level"], s["hp"], s["mp"]) == (1, 100, 50)
    assert create(client, campaign, sheet(GC, level=0)).status_code == 422
    r = create(client, campaign, sheet(GC, hp=101))
    assert r.status_code == 422 and "hp_max" in r.text


def test_gc_s8_default_posture(client, campaign):
    minimal = {k: v for k, v in SHEETS[GC].items() if k != "default_posture"}
    assert create(client, campaign, minimal).json()["sheet"]["default_posture"] == "defensive"
    r = create(client, campaign, sheet(GC, default_posture="illumination"))
    assert r.status_code == 422 and ["body", "sheet", "default_posture"] in error_locs(r)


def test_gc_s9_free_form_lists_and_final_skill(client, campaign):
    fs = {"name": "Nova", "punchline": "Brille !", "cost_kind": "light", "cost_points": 2}
    r = create(
        client,
        campaign,
        sheet(
            GC,
            skills=["Épée", {"name": "Feu", "cost": "5 PM"}],
            affiliation="Ordre",
            talents=["Veille"],
            final_skill=fs,
        ),
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["sheet"]["final_skill"] == fs and body["sheet"]["skills"][1] == {"name": "Feu", "cost": "5 PM"}
    assert body["derived"]["final_skill_unlocked"] is False
    r = create(client, campaign, sheet(GC, final_skill={**fs, "cost_kind": "grey"}))
    assert r.status_code == 422 and ["body", "sheet", "final_skill", "cost_kind"] in error_locs(r)


# --- sheet writes in context (lead) -------------------------------------------------------------


def test_gc_s7_override_survives_later_edits_that_leave_mental_health_unchanged(
    client, campaign_factory, character_factory
):
    """GC-S7: a GM-overridden mental health stays while untouched; changing it again needs the override."""
    c = campaign_factory("great-cosmos")
    sheet = {
        "race": "humain",
        "hp_max": 100,
        "mp_max": 50,
        "mental_health": 130,
        "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60},
    }
    ch = character_factory(c, sheet, gm_override=True)
    r = client.patch(f"/v1/characters/{ch['id']}", json={"sheet": {"karma": 3}}, headers=c.gm)
    assert r.status_code == 200, r.text
    assert r.json()["sheet"]["mental_health"] == 130
    r = client.patch(f"/v1/characters/{ch['id']}", json={"sheet": {"mental_health": 120}}, headers=c.gm)
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][:2] == ["body", "sheet"]


def test_gc_i4_capacity_is_not_enforced_when_the_campaign_turns_inventory_rules_off(client, campaign_factory):
    """GC-I4 is an optional rule: with `inventory_rules` off an overloaded inventory is accepted."""
    heavy = {
        "race": "humain",
        "hp_max": 100,
        "mp_max": 50,
        "stats": {"force": 10, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60},
        "inventory": {"items": [{"name": "hache", "kind": "two_handed_weapon", "slots": 6}]},
    }
    on, off = campaign_factory("great-cosmos"), campaign_factory("great-cosmos", {"inventory_rules": False})
    refused = client.post(f"/v1/campaigns/{on.id}/characters", json={"name": "x", "sheet": heavy}, headers=on.gm)
    assert refused.status_code == 422, refused.text
    accepted = client.post(f"/v1/campaigns/{off.id}/characters", json={"name": "x", "sheet": heavy}, headers=off.gm)
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["derived"]["inventory"]["capacity"] == 4  # GC-I1: 40 × 10 / 100
    assert accepted.json()["sheet"]["inventory"]["items"][0]["slots"] == 6
    bad_item = {**heavy, "inventory": {"items": [{"name": "x", "slots": 9}]}}
    r = client.post(f"/v1/campaigns/{off.id}/characters", json={"name": "x", "sheet": bad_item}, headers=off.gm)
    assert r.status_code == 422  # GC-I2 item sizes are still checked
