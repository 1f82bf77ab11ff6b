"""Issue 10, items 3, 6 and 8: nothing of hidden GM activity or other campaigns
leaks through conflicts or cursors; a log page is bounded by bytes; a player
attributes free rolls only to its own characters."""

from __future__ import annotations

import base64

import pytest

from app.services import rolls
from tests.factories import SHEETS


@pytest.fixture
def asgard(campaign_factory, player_factory, character_factory):
    camp = campaign_factory("asgard")
    alice = player_factory(camp, "Alice")
    hero = character_factory(camp, SHEETS["asgard"], player=alice, name="Sigrid")
    return camp, alice, hero


# rule: AS-H2
def test_as_h2_a_players_reroll_after_a_hidden_gm_reroll_does_not_name_the_hidden_entry(client, asgard):
    camp, alice, hero = asgard
    test = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"skill": "survie", "difficulty": "moyen"}, headers=alice.headers
    )
    assert test.status_code == 201, test.text
    hidden = client.post(
        f"/v1/characters/{hero['id']}/tests/{test.json()['id']}/reroll",
        json={"dice": [5, 5, 5], "hidden": True},
        headers=camp.gm,
    )
    assert hidden.status_code == 201, hidden.text
    mine = client.post(f"/v1/characters/{hero['id']}/tests/{test.json()['id']}/reroll", json={}, headers=alice.headers)
    assert mine.status_code == 409, mine.text
    assert mine.json()["rerolled_by"] is None
    assert hidden.json()["id"] not in mine.text
    # the GM is told which entry it was
    gm = client.post(
        f"/v1/characters/{hero['id']}/tests/{test.json()['id']}/reroll", json={"dice": [1, 1, 1]}, headers=camp.gm
    )
    assert gm.status_code == 409 and gm.json()["rerolled_by"] == hidden.json()["id"]


def _pages(client, cid: str, headers: dict[str, str], **params) -> tuple[list[dict], list[str]]:
    items, cursors, cursor = [], [], None
    while True:
        r = client.get(
            f"/v1/campaigns/{cid}/rolls", params={**params, **({"cursor": cursor} if cursor else {})}, headers=headers
        )
        assert r.status_code == 200, r.text
        items += r.json()["items"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return items, cursors
        cursors.append(cursor)


def _roll(client, cid: str, headers: dict[str, str], **body) -> dict:
    r = client.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "1d6", **body}, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def test_log_cursors_carry_no_sequence_that_would_count_hidden_or_other_campaigns_rolls(
    client, campaign_factory, player_factory
):
    camp, other = campaign_factory("great-cosmos"), campaign_factory("great-cosmos")
    alice = player_factory(camp)
    for i in range(4):
        _roll(client, camp.id, alice.headers)
        _roll(client, camp.id, camp.gm, seed=i, hidden=True)  # hidden GM activity between hers
        _roll(client, other.id, other.gm, seed=i)  # another campaign's activity
    items, cursors = _pages(client, camp.id, alice.headers, limit=1)
    assert len(items) == 4 and not any(e["hidden"] for e in items)
    # each cursor names the last entry the player saw, nothing more: no counter whose gaps show the rest
    for cursor, item in zip(cursors, items):
        decoded = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        assert decoded == "e" + item["id"], decoded
    # per campaign: a cursor of this campaign means nothing in another one
    r = client.get(f"/v1/campaigns/{other.id}/rolls", params={"cursor": cursors[0]}, headers=other.gm)
    assert r.status_code == 422, r.text


def test_a_log_page_is_bounded_by_bytes_and_the_cursor_continues(client, campaign_factory, monkeypatch):
    camp = campaign_factory("great-cosmos")
    made = [_roll(client, camp.id, camp.gm, expression="20d6", seed=i)["id"] for i in range(10)]
    monkeypatch.setattr(rolls, "PAGE_MAX_BYTES", 3 * 1200)
    r = client.get(f"/v1/campaigns/{camp.id}/rolls", params={"limit": 500}, headers=camp.gm)
    assert r.status_code == 200
    first = r.json()
    assert 1 <= len(first["items"]) < 10 and first["next_cursor"], len(first["items"])
    items, _ = _pages(client, camp.id, camp.gm, limit=500)
    assert [e["id"] for e in items] == list(reversed(made))  # all of them, once each, newest first
    monkeypatch.setattr(rolls, "PAGE_MAX_BYTES", 10)  # an entry bigger than the bound still comes, alone
    r = client.get(f"/v1/campaigns/{camp.id}/rolls", params={"limit": 500}, headers=camp.gm)
    assert len(r.json()["items"]) == 1 and r.json()["next_cursor"]


def test_a_player_attributes_a_free_roll_only_to_its_own_character(
    client, campaign_factory, player_factory, character_factory, count_rows
):
    camp = campaign_factory("great-cosmos")
    alice, bob = player_factory(camp, "Alice"), player_factory(camp, "Bob")
    hers = character_factory(camp, SHEETS["great-cosmos"], player=alice, name="Aiko")
    his = character_factory(camp, SHEETS["great-cosmos"], player=bob, name="Bjorn")
    npc = character_factory(camp, SHEETS["great-cosmos"], kind="npc", name="Gobelin")
    before = count_rows("roll_log")
    # an NPC is `none` to players by default: unknown (404); seen (`observer`), it is still not hers (403)
    for target, status in ((his, 403), (npc, 404), ("observer", 403)):
        if target == "observer":
            assert (
                client.patch(
                    f"/v1/characters/{npc['id']}", json={"player_access": "observer"}, headers=camp.gm
                ).status_code
                == 200
            )
            target = npc
        r = client.post(
            f"/v1/campaigns/{camp.id}/rolls",
            json={"expression": "1d6", "character_id": target["id"]},
            headers=alice.headers,
        )
        assert r.status_code == status, r.text
    assert count_rows("roll_log") == before
    assert _roll(client, camp.id, alice.headers, character_id=hers["id"])["character_id"] == hers["id"]
    assert _roll(client, camp.id, camp.gm, character_id=npc["id"])["character_id"] == npc["id"]


# rule: GC-K1
def test_a_hidden_gm_test_on_a_players_character_shows_only_its_sheet_effects(
    client, campaign_factory, player_factory, character_factory
):
    """README: the player sees the sheet's new values, not the entry, its dice nor an event."""
    camp = campaign_factory("great-cosmos")
    alice = player_factory(camp)
    hers = character_factory(camp, SHEETS["great-cosmos"], player=alice, name="Aiko")
    r = client.post(
        f"/v1/characters/{hers['id']}/tests", json={"stat": "force", "dice": [42], "hidden": True}, headers=camp.gm
    )
    assert r.status_code == 201, r.text
    karma = r.json()["effects"]["karma"]
    assert karma["before"] != karma["after"], karma  # the test moved the karma
    seen = client.get(f"/v1/characters/{hers['id']}", headers=alice.headers).json()
    assert seen["sheet"]["karma"] == karma["after"] and seen["version"] == hers["version"] + 1
    log = client.get(f"/v1/campaigns/{camp.id}/rolls", headers=alice.headers).json()["items"]
    assert r.json()["id"] not in [e["id"] for e in log]
    stream = client.get(
        f"/v1/campaigns/{camp.id}/events", params={"after": "0", "follow": "false"}, headers=alice.headers
    )
    assert stream.status_code == 200 and r.json()["id"] not in stream.text and "log.created" not in stream.text
    gm_stream = client.get(f"/v1/campaigns/{camp.id}/events", params={"after": "0", "follow": "false"}, headers=camp.gm)
    assert r.json()["id"] in gm_stream.text
