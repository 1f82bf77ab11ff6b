"""HTTP tests of free rolls, dice provenance, the roll log, and who may roll what (issue #2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.support import assert_problem
from tests.factories import GC, GC_MINIMAL, RB, SHEETS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hero_owner(alice):
    return alice


def roll(client, campaign, headers=None, **body):
    return client.post(f"/v1/campaigns/{campaign.id}/rolls", json=body, headers=headers or campaign.gm)


def log(client, campaign, headers=None, **params):
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls", params=params, headers=headers or campaign.gm)
    assert r.status_code == 200, r.text
    return r.json()


def d(die: str, value: int, purpose: str = "roll", dropped: bool = False) -> dict:
    out = {"die": die, "value": value, "purpose": purpose}
    if dropped:
        out["dropped"] = True
    return out


# --- free rolls with table dice ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, dice, total, rolls",
    [
        ("3d6+2", [1, 2, 3], 8, [d("d6", 1), d("d6", 2), d("d6", 3)]),
        ("4d6kh3", [1, 5, 3, 6], 14, [d("d6", 1, dropped=True), d("d6", 5), d("d6", 3), d("d6", 6)]),
        (
            "4d6kl1",
            [4, 2, 6, 3],
            2,
            [d("d6", 4, dropped=True), d("d6", 2), d("d6", 6, dropped=True), d("d6", 3, dropped=True)],
        ),
        ("4d6dl1", [4, 2, 6, 3], 13, [d("d6", 4), d("d6", 2, dropped=True), d("d6", 6), d("d6", 3)]),
        ("d%", [42], 42, [d("d100", 42)]),
        ("d100", [100], 100, [d("d100", 100)]),
        ("2d6+1d4+3", [6, 5, 4], 18, [d("d6", 6), d("d6", 5), d("d4", 4)]),
        ("1d20-1", [20], 19, [d("d20", 20)]),
        ("2d6 - 1d4", [1, 1, 4], -2, [d("d6", 1), d("d6", 1), d("d4", 4)]),
        ("7", [], 7, []),
    ],
)
def test_free_roll_with_table_dice(client, campaign, count_rows, expression, dice, total, rolls):
    r = roll(client, campaign, expression=expression, dice=dice)
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {
        "id",
        "kind",
        "expression",
        "rolls",
        "total",
        "purpose",
        "hidden",
        "created_at",
        "character_id",
        "provenance",
    }
    assert (
        body["kind"],
        body["expression"],
        body["total"],
        body["purpose"],
        body["hidden"],
        body["character_id"],
        body["provenance"],
    ) == ("roll", expression, total, "roll", False, None, "table")
    assert body["rolls"] == rolls
    assert body["created_at"].endswith("Z")
    assert count_rows("roll_log", campaign_id=campaign.id) == 1


def test_free_roll_purpose_is_on_every_die(client, campaign):
    r = roll(client, campaign, expression="2d8+1", purpose="damage", dice=[3, 8])
    assert r.status_code == 201, r.text
    assert r.json()["purpose"] == "damage"
    assert r.json()["rolls"] == [d("d8", 3, "damage"), d("d8", 8, "damage")]
    assert r.json()["total"] == 12


def test_free_roll_without_dice_rolls_in_bounds(client, campaign):
    r = roll(client, campaign, expression="3d6")
    assert r.status_code == 201, r.text
    body = r.json()
    assert len(body["rolls"]) == 3
    assert all(x["die"] == "d6" and 1 <= x["value"] <= 6 for x in body["rolls"])
    assert body["total"] == sum(x["value"] for x in body["rolls"])


@pytest.mark.parametrize(
    "expression",
    ["garbage", "3d", "d", "3x6", "2d6++1", "101d6", "d1001", "d0", "0d6", "3d6kh4", "1234567+1", "1" * 201, "", "   "],
)
def test_bad_expression_is_a_422_and_not_logged(client, campaign, count_rows, expression):
    r = roll(client, campaign, expression=expression)
    body = assert_problem(
        r, 422, "validation-error" if len(expression) > 200 or expression == "" else "invalid-dice-expression"
    )
    assert [e["loc"] for e in body["errors"]] == [["body", "expression"]]
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_too_few_table_dice_says_which_is_needed(client, campaign, count_rows):
    r = roll(client, campaign, expression="2d6+1d4", purpose="damage", dice=[3, 4])
    body = assert_problem(r, 422, "dice-needed")
    assert body["needed"] == {"index": 2, "die": "d4", "purpose": "damage"}
    assert body["errors"] == [{"loc": ["body", "dice"], "msg": body["detail"]}]
    r = roll(client, campaign, expression="d100", dice=[])
    body = assert_problem(r, 422, "dice-needed")
    assert body["needed"] == {"index": 0, "die": "d100", "purpose": "roll"}
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


@pytest.mark.parametrize(
    "dice, index, value", [([3, 7], 1, 7), ([0, 1], 0, 0), ([-1, 1], 0, -1), ([10**30, 1], 0, 10**30)]
)
def test_table_die_out_of_range_is_a_422(client, campaign, count_rows, dice, index, value):
    r = roll(client, campaign, expression="2d6", dice=dice)
    body = assert_problem(r, 422, "invalid-dice")
    assert (body["index"], body["die"], body["value"]) == (index, "d6", value)
    assert [e["loc"] for e in body["errors"]] == [["body", "dice"]]
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_table_dice_left_over_is_a_422(client, campaign, count_rows):
    r = roll(client, campaign, expression="2d6", dice=[1, 2, 3])
    body = assert_problem(r, 422, "invalid-dice")
    assert (body["used"], body["given"]) == (2, 3)
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_seed_and_dice_together_is_a_422(client, campaign):
    r = roll(client, campaign, expression="d6", seed=1, dice=[1])
    assert_problem(r, 422, "validation-error")


# --- seeded rolls ------------------------------------------------------------------------------------


def test_seeded_rolls_are_reproducible(client, campaign, count_rows):
    first = roll(client, campaign, expression="4d6kh3+2d10+d100", seed=20261129).json()
    second = roll(client, campaign, expression="4d6kh3+2d10+d100", seed=20261129).json()
    assert first["id"] != second["id"]
    assert first["rolls"] == second["rolls"]
    assert first["total"] == second["total"]
    assert count_rows("roll_log", campaign_id=campaign.id) == 2
    other = roll(client, campaign, expression="4d6kh3+2d10+d100", seed=20261130).json()
    assert [x["value"] for x in other["rolls"]] != [x["value"] for x in first["rolls"]]

    # and in another process, straight from the dice core
    code = (
        "import json; from app.rules.dice import dice_source, parse; s = dice_source(seed=20261129); "
        "t = parse('4d6kh3+2d10+d100').roll(s, 'roll'); print(json.dumps([t, [r.to_dict() for r in s.rolls]]))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    total, rolls = json.loads(out.stdout)
    assert (total, rolls) == (first["total"], first["rolls"])


def test_seeded_test_is_reproducible(client, campaign, hero):
    bodies = [
        client.post(
            f"/v1/characters/{hero['id']}/tests", json={"stat": "esprit", "seed": 7}, headers=campaign.gm
        ).json()
        for _ in range(2)
    ]
    # karma may change between the two tests, but the d100 of a seed does not
    assert bodies[0]["rolls"][0] == bodies[1]["rolls"][0]
    code = "from app.rules.dice import dice_source; print(dice_source(seed=7).roll(100, 'test'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    assert int(out.stdout) == bodies[0]["natural"]


@pytest.mark.parametrize("seed", [2**63, -(2**63) - 1, 10**40, "abc", 1.5])
def test_out_of_range_seed_is_a_422(client, campaign, seed):
    r = roll(client, campaign, expression="d6", seed=seed)
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "seed"]]


# --- the log ------------------------------------------------------------------------------------------


def test_log_is_newest_first_with_keyset_pages(client, campaign):
    made = [roll(client, campaign, expression="d6", dice=[i]).json() for i in range(1, 6)]
    assert log(client, campaign) == {"items": made[::-1], "next_cursor": None}

    pages, cursor = [], None
    while True:
        page = log(client, campaign, limit=2, **({"cursor": cursor} if cursor else {}))
        pages.append([e["total"] for e in page["items"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == [[5, 4], [3, 2], [1]]


def test_log_cursor_is_stable_under_inserts(client, campaign):
    for i in range(1, 4):
        roll(client, campaign, expression="d6", dice=[i])
    page1 = log(client, campaign, limit=2)
    assert [e["total"] for e in page1["items"]] == [3, 2]
    roll(client, campaign, expression="d6", dice=[6])
    page2 = log(client, campaign, limit=2, cursor=page1["next_cursor"])
    assert [e["total"] for e in page2["items"]] == [1]
    assert page2["next_cursor"] is None


@pytest.mark.parametrize("params", [{"cursor": "nope!"}, {"cursor": "eDE"}, {"limit": 0}, {"limit": 501}])
def test_log_bad_cursor_or_limit_is_a_422(client, campaign, params):
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls", params=params, headers=campaign.gm)
    assert_problem(r, 422, "validation-error")


def test_log_filters_by_character_and_kind(client, campaign, hero, character_factory):
    other = character_factory(campaign, GC_MINIMAL, kind="npc", name="Orc")
    t1 = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [50]}, headers=campaign.gm
    ).json()
    r1 = roll(client, campaign, expression="d6", dice=[2], character_id=hero["id"]).json()
    t2 = client.post(
        f"/v1/characters/{other['id']}/tests", json={"stat": "force", "dice": [80]}, headers=campaign.gm
    ).json()
    r2 = roll(client, campaign, expression="d6", dice=[3]).json()

    assert log(client, campaign)["items"] == [r2, t2, r1, t1]
    assert log(client, campaign, character_id=hero["id"])["items"] == [r1, t1]
    assert log(client, campaign, character_id=other["id"])["items"] == [t2]
    assert log(client, campaign, kind="test")["items"] == [t2, t1]
    assert log(client, campaign, kind="roll")["items"] == [r2, r1]
    assert log(client, campaign, kind="roll", character_id=hero["id"])["items"] == [r1]
    assert log(client, campaign, kind="level_up")["items"] == []
    page = log(client, campaign, kind="test", limit=1)
    assert page["items"] == [t2]
    assert log(client, campaign, kind="test", limit=1, cursor=page["next_cursor"]) == {
        "items": [t1],
        "next_cursor": None,
    }


def test_a_tests_log_entry_is_its_response(client, campaign, hero, count_rows):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [50]}, headers=campaign.gm)
    assert r.status_code == 201, r.text
    result = r.json()
    assert (result["kind"], result["character_id"], result["ruleset"]) == ("test", hero["id"], GC)
    assert (result["natural"], result["score"], result["target"], result["outcome"], result["success"]) == (
        50,
        50,
        68,
        "success",
        True,
    )
    assert result["rolls"] == [d("d100", 50, "test")]
    assert result["effects"]["karma"]["before"] == 0 and result["effects"]["karma"]["after"] == 0
    assert count_rows("roll_log", campaign_id=campaign.id) == 1
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls/{result['id']}", headers=campaign.gm)
    assert r.status_code == 200
    assert r.json() == result
    assert log(client, campaign)["items"] == [result]


def test_a_free_rolls_log_entry_is_its_response(client, campaign, alice):
    made = roll(client, campaign, expression="3d6+2", dice=[1, 2, 3]).json()
    for headers in (campaign.gm, alice.headers):
        r = client.get(f"/v1/campaigns/{campaign.id}/rolls/{made['id']}", headers=headers)
        assert r.status_code == 200
        assert r.json() == made


def test_unknown_log_entry_is_a_404(client, campaign):
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls/nope", headers=campaign.gm)
    assert_problem(r, 404, "not-found")


def test_hidden_gm_rolls_are_only_for_the_gm(client, campaign, alice, count_rows):
    public = roll(client, campaign, expression="d6", dice=[1]).json()
    secret = roll(client, campaign, expression="d20", dice=[17], hidden=True)
    assert secret.status_code == 201, secret.text
    secret = secret.json()
    assert secret["hidden"] is True
    assert count_rows("roll_log", campaign_id=campaign.id) == 2

    assert log(client, campaign)["items"] == [secret, public]
    assert log(client, campaign, alice.headers)["items"] == [public]
    assert log(client, campaign, alice.headers, kind="roll")["items"] == [public]
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls/{secret['id']}", headers=campaign.gm)
    assert r.status_code == 200 and r.json() == secret
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls/{secret['id']}", headers=alice.headers)
    assert_problem(r, 404, "not-found")


def test_hidden_gm_test_is_only_for_the_gm(client, campaign, hero, alice):
    r = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [30], "hidden": True}, headers=campaign.gm
    )
    assert r.status_code == 201, r.text
    secret = r.json()
    assert log(client, campaign, alice.headers, character_id=hero["id"]) == {"items": [], "next_cursor": None}
    assert log(client, campaign, character_id=hero["id"])["items"] == [secret]


def test_player_pages_skip_hidden_entries(client, campaign, alice):
    visible = []
    for i in range(1, 7):
        r = roll(client, campaign, expression="d6", dice=[i], hidden=(i % 2 == 0)).json()
        if i % 2:
            visible.append(r)
    page1 = log(client, campaign, alice.headers, limit=2)
    assert page1["items"] == [visible[2], visible[1]]
    page2 = log(client, campaign, alice.headers, limit=2, cursor=page1["next_cursor"])
    assert page2 == {"items": [visible[0]], "next_cursor": None}


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_no_route_edits_or_deletes_the_log(client, campaign, count_rows, method):
    made = roll(client, campaign, expression="d6", dice=[4]).json()
    for path in (f"/v1/campaigns/{campaign.id}/rolls/{made['id']}", f"/v1/campaigns/{campaign.id}/rolls"):
        r = client.request(method, path, json={"total": 6}, headers=campaign.gm)
        body = assert_problem(r, 405, "method-not-allowed")
        assert body["title"] == "Method not allowed"
        assert "allow" in r.headers
    assert count_rows("roll_log", campaign_id=campaign.id) == 1
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls/{made['id']}", headers=campaign.gm)
    assert r.json() == made


def test_free_roll_for_a_character_of_another_campaign_is_a_404(
    client, campaign, campaign_factory, character_factory, count_rows
):
    other = campaign_factory(GC)
    stranger = character_factory(other, GC_MINIMAL)
    r = roll(client, campaign, expression="d6", dice=[1], character_id=stranger["id"])
    assert_problem(r, 404, "not-found")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


# --- who may roll what ----------------------------------------------------------------------------------


def test_player_free_roll_and_own_test(client, campaign, alice, hero, count_rows):
    """Rolled by the server: a player's `seed` is a 403 here (issue 21 item 2, tests/api/test_provenance.py)."""
    r = roll(client, campaign, alice.headers, expression="2d6")
    assert (r.status_code, r.json()["provenance"]) == (201, "server"), r.text
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force"}, headers=alice.headers)
    assert (r.status_code, r.json()["provenance"]) == (201, "server"), r.text
    assert count_rows("roll_log", campaign_id=campaign.id) == 2


def test_player_may_not_test_another_players_character(client, campaign, player_factory, hero, count_rows):
    bob = player_factory(campaign, "Bob")
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force"}, headers=bob.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_player_hidden_roll_is_a_403(client, campaign, alice, hero, count_rows):
    r = roll(client, campaign, alice.headers, expression="d6", hidden=True)
    assert_problem(r, 403, "forbidden")
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "hidden": True}, headers=alice.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_player_table_dice_need_the_option(client, campaign, alice, hero, count_rows):
    r = roll(client, campaign, alice.headers, expression="d6", dice=[4])
    assert_problem(r, 403, "forbidden")
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [50]}, headers=alice.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0

    r = client.patch(
        f"/v1/campaigns/{campaign.id}", json={"options": {"players_may_enter_dice": True}}, headers=campaign.gm
    )
    assert r.status_code == 200
    r = roll(client, campaign, alice.headers, expression="d6", dice=[4])
    assert r.status_code == 201, r.text
    assert r.json()["total"] == 4
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [50]}, headers=alice.headers)
    assert r.status_code == 201, r.text
    assert r.json()["natural"] == 50
    assert count_rows("roll_log", campaign_id=campaign.id) == 2


def test_player_level_up_is_a_403(client, campaign, alice, hero, count_rows):
    body = {"mode": "one_d20", "stats": ["force"], "chance_bonus_pool": "hp", "seed": 1}
    r = client.post(f"/v1/characters/{hero['id']}/level-ups", json=body, headers=alice.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0
    r = client.get(f"/v1/characters/{hero['id']}", headers=alice.headers)
    assert r.json()["sheet"]["level"] == 1 and r.json()["version"] == 1


@pytest.fixture
def rb(campaign_factory, player_factory, character_factory):
    c = campaign_factory("rulebook-d100")
    p = player_factory(c, "Carol")
    a = character_factory(c, SHEETS[RB], player=p, name="A")
    b = character_factory(c, SHEETS[RB], kind="npc", name="B")
    return c, p, a, b


def test_player_opposed_and_group_are_403(client, rb, count_rows):
    c, p, a, b = rb
    opposed = {"a": {"character_id": a["id"], "stat": "FOR"}, "b": {"character_id": b["id"], "stat": "FOR"}, "seed": 1}
    group = {"stat": "FOR", "participants": [{"character_id": a["id"]}, {"character_id": b["id"]}], "seed": 1}
    r = client.post(f"/v1/campaigns/{c.id}/tests/opposed", json=opposed, headers=p.headers)
    assert_problem(r, 403, "forbidden")
    r = client.post(f"/v1/campaigns/{c.id}/tests/group", json=group, headers=p.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("roll_log", campaign_id=c.id) == 0
    # the same bodies from the GM are fine
    r = client.post(f"/v1/campaigns/{c.id}/tests/opposed", json=opposed, headers=c.gm)
    assert r.status_code == 201, r.text
    r = client.post(f"/v1/campaigns/{c.id}/tests/group", json=group, headers=c.gm)
    assert r.status_code == 201, r.text
    assert count_rows("roll_log", campaign_id=c.id) == 2


def test_player_add_player_is_a_403(client, campaign, alice, count_rows):
    r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Mallory"}, headers=alice.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("player", campaign_id=campaign.id) == 1
