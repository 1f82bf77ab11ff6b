"""HTTP tests of `Idempotency-Key` on operations that roll dice (issue #2)."""

from __future__ import annotations

import pytest

from tests.api.support import assert_problem
from tests.factories import GC_MINIMAL

SUPER = {"stat": "force", "dice": [42]}  # super-critical success: karma 0 → -2 (GC-K1)


@pytest.fixture
def campaign_options():
    return {"players_may_enter_dice": True}


@pytest.fixture
def hero_owner(alice):
    return alice


def test_(client, hero, headers, body, key=None):
    extra = {"Idempotency-Key": key} if key is not None else {}
    return client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers={**headers, **extra})


test_.__test__ = False  # a helper, not a test
run = test_


def karma(client, campaign, hero) -> tuple[int, int]:
    r = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    return r.json()["sheet"]["karma"], r.json()["version"]


def test_same_key_same_body_replays_the_first_response(client, campaign, hero, count_rows):
    first = run(client, hero, campaign.gm, SUPER, "k-1")
    assert first.status_code == 201, first.text
    assert first.json()["outcome"] == "super_critical_success"
    assert first.json()["effects"]["karma"]["after"] == -2
    second = run(client, hero, campaign.gm, SUPER, "k-1")
    assert second.status_code == 201, second.text
    assert second.json() == first.json()
    assert count_rows("roll_log", campaign_id=campaign.id) == 1
    assert count_rows("idempotency") == 1
    assert karma(client, campaign, hero) == (-2, 2)  # changed once
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls", headers=campaign.gm)
    assert r.json()["items"] == [first.json()]


def test_replay_with_random_dice_gives_the_same_dice(client, campaign, hero, count_rows):
    first = run(client, hero, campaign.gm, {"stat": "esprit"}, "k-rand").json()
    for _ in range(3):
        assert run(client, hero, campaign.gm, {"stat": "esprit"}, "k-rand").json() == first
    assert count_rows("roll_log", campaign_id=campaign.id) == 1


def test_same_key_other_body_is_a_422(client, campaign, hero, count_rows):
    assert run(client, hero, campaign.gm, SUPER, "k-2").status_code == 201
    r = run(client, hero, campaign.gm, {"stat": "force", "dice": [43]}, "k-2")
    body = assert_problem(r, 422, "validation-error")
    assert body["errors"] == [{"loc": ["header", "Idempotency-Key"], "msg": body["detail"]}]
    assert count_rows("roll_log", campaign_id=campaign.id) == 1
    assert karma(client, campaign, hero) == (-2, 2)


def test_same_key_other_character_is_a_422(client, campaign, hero, character_factory, count_rows):
    other = character_factory(campaign, GC_MINIMAL, kind="npc", name="Orc")
    assert run(client, hero, campaign.gm, SUPER, "k-3").status_code == 201
    r = run(client, other, campaign.gm, SUPER, "k-3")
    assert_problem(r, 422, "validation-error")
    assert count_rows("roll_log", campaign_id=campaign.id) == 1
    assert karma(client, campaign, other) == (0, 1)


def test_different_keys_roll_twice(client, campaign, hero, count_rows):
    a = run(client, hero, campaign.gm, SUPER, "k-a")
    b = run(client, hero, campaign.gm, SUPER, "k-b")
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"]
    assert count_rows("roll_log", campaign_id=campaign.id) == 2
    assert count_rows("idempotency") == 2
    assert karma(client, campaign, hero) == (-4, 3)


def test_no_key_rolls_every_time(client, campaign, hero, count_rows):
    run(client, hero, campaign.gm, SUPER)
    run(client, hero, campaign.gm, SUPER)
    assert count_rows("roll_log", campaign_id=campaign.id) == 2
    assert count_rows("idempotency") == 0


def test_keys_are_per_token(client, campaign, hero, alice, count_rows):
    gm = run(client, hero, campaign.gm, SUPER, "shared")
    player = run(client, hero, alice.headers, SUPER, "shared")
    assert gm.status_code == player.status_code == 201
    assert gm.json()["id"] != player.json()["id"]
    assert count_rows("roll_log", campaign_id=campaign.id) == 2
    assert karma(client, campaign, hero) == (-4, 3)
    # each token replays its own
    assert run(client, hero, alice.headers, SUPER, "shared").json() == player.json()
    assert run(client, hero, campaign.gm, SUPER, "shared").json() == gm.json()
    assert count_rows("roll_log", campaign_id=campaign.id) == 2


def test_a_refused_request_does_not_burn_the_key(client, campaign, hero, count_rows):
    r = run(client, hero, campaign.gm, {"stat": "force", "dice": []}, "k-retry")
    assert_problem(r, 422, "dice-needed")
    assert count_rows("idempotency") == 0
    r = run(client, hero, campaign.gm, {"stat": "force", "dice": [50]}, "k-retry")
    assert r.status_code == 201, r.text
    assert count_rows("roll_log", campaign_id=campaign.id) == 1


def test_free_roll_idempotency(client, campaign, count_rows):
    url = f"/v1/campaigns/{campaign.id}/rolls"
    headers = {**campaign.gm, "Idempotency-Key": "roll-1"}
    first = client.post(url, json={"expression": "3d6"}, headers=headers)
    assert first.status_code == 201, first.text
    again = client.post(url, json={"expression": "3d6"}, headers=headers)
    assert again.status_code == 201
    assert again.json() == first.json()
    assert count_rows("roll_log", campaign_id=campaign.id) == 1
    r = client.post(url, json={"expression": "3d6+1"}, headers=headers)
    assert_problem(r, 422, "validation-error")
    assert count_rows("roll_log", campaign_id=campaign.id) == 1


def test_same_key_on_another_route_is_a_422(client, campaign, hero, count_rows):
    assert run(client, hero, campaign.gm, SUPER, "k-route").status_code == 201
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls",
        json={"expression": "d6"},
        headers={**campaign.gm, "Idempotency-Key": "k-route"},
    )
    assert_problem(r, 422, "validation-error")
    assert count_rows("roll_log", campaign_id=campaign.id) == 1


@pytest.mark.parametrize("key", ["", "x" * 201])
def test_key_of_bad_length_is_a_422(client, campaign, hero, key, count_rows):
    r = run(client, hero, campaign.gm, SUPER, key)
    assert_problem(r, 422, "validation-error")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0
