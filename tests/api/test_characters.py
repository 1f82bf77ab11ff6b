"""HTTP tests of characters: CRUD, pagination, versions (ETag / If-Match), sheet
validation and ownership (issue #2), on a great-cosmos campaign."""

from __future__ import annotations

import pytest

from tests.api.support import assert_problem
from tests.factories import GC, GC_MINIMAL


@pytest.fixture
def hero_owner(alice):
    return alice


def post_character(client, campaign, headers, **body):
    return client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "X", "kind": "pc", "sheet": GC_MINIMAL, **body},
        headers=headers,
    )


# --- create and read ------------------------------------------------------------------------------


def test_create_returns_the_stored_character_with_version_and_etag(client, campaign, alice, count_rows):
    r = post_character(client, campaign, campaign.gm, name="Aria", player_id=alice.id)
    assert r.status_code == 201, r.text
    ch = r.json()
    assert set(ch) == {
        "id",
        "campaign_id",
        "name",
        "kind",
        "player_id",
        "ruleset",
        "sheet",
        "derived",
        "player_access",
        "version",
        "created_at",
        "updated_at",
        "metadata",
    }
    assert (ch["campaign_id"], ch["name"], ch["kind"], ch["player_id"], ch["ruleset"], ch["version"]) == (
        campaign.id,
        "Aria",
        "pc",
        alice.id,
        GC,
        1,
    )
    assert r.headers["etag"] == '"1"'
    # derived defaults filled (GC-S5/S6/S7), the given values kept
    sheet = ch["sheet"]
    assert sheet["stats"] == GC_MINIMAL["stats"]
    assert (sheet["hp"], sheet["hp_max"], sheet["mp"], sheet["mp_max"]) == (100, 100, 50, 50)
    assert (sheet["level"], sheet["karma"], sheet["intuition"]) == (1, 0, 3)
    assert ch["derived"]["karma"] == {"stored": 0, "effective": 0, "locked": False}
    assert count_rows("character", campaign_id=campaign.id) == 1

    r = client.get(f"/v1/characters/{ch['id']}", headers=campaign.gm)
    assert r.status_code == 200
    assert r.json() == ch
    assert r.headers["etag"] == '"1"'
    r = client.get(f"/v1/characters/{ch['id']}", headers=alice.headers)
    assert r.status_code == 200 and r.json() == ch


def test_any_member_reads_any_character(client, hero, bob):
    r = client.get(f"/v1/characters/{hero['id']}", headers=bob.headers)
    assert r.status_code == 200
    assert r.json()["id"] == hero["id"]


def test_unknown_character_is_a_404(client, campaign):
    r = client.get("/v1/characters/nope", headers=campaign.gm)
    assert_problem(r, 404, "not-found")


def test_npc_without_player(client, campaign):
    r = post_character(client, campaign, campaign.gm, kind="npc")
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == "npc" and r.json()["player_id"] is None


def test_player_id_of_another_campaign_is_a_422(client, campaign, campaign_factory, player_factory, count_rows):
    stranger = player_factory(campaign_factory(GC), "Stranger")
    r = post_character(client, campaign, campaign.gm, player_id=stranger.id)
    body = assert_problem(r, 422, "validation-error")
    assert body["errors"] == [{"loc": ["body", "player_id"], "msg": body["detail"]}]
    assert count_rows("character", campaign_id=campaign.id) == 0


@pytest.mark.parametrize(
    "sheet, loc",
    [
        ({**GC_MINIMAL, "stats": {**GC_MINIMAL["stats"], "force": 101}}, ["body", "sheet", "stats", "force"]),
        ({**GC_MINIMAL, "stats": {**GC_MINIMAL["stats"], "force": "strong"}}, ["body", "sheet", "stats", "force"]),
        ({k: v for k, v in GC_MINIMAL.items() if k != "hp_max"}, ["body", "sheet", "hp_max"]),
        ({**GC_MINIMAL, "mana": 3}, ["body", "sheet", "mana"]),
        ({**GC_MINIMAL, "karma": 11}, ["body", "sheet", "karma"]),
        ({**GC_MINIMAL, "race": "Not A Race!"}, ["body", "sheet", "race"]),
    ],
)
def test_bad_sheet_is_a_422_located_under_body_sheet(client, campaign, sheet, loc, count_rows):
    r = post_character(client, campaign, campaign.gm, sheet=sheet)
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [loc]
    assert count_rows("character", campaign_id=campaign.id) == 0


def test_sheet_rule_error_is_located_under_body_sheet(client, campaign):
    r = post_character(client, campaign, campaign.gm, sheet={**GC_MINIMAL, "hp": 101})
    body = assert_problem(r, 422, "validation-error")
    assert len(body["errors"]) == 1
    assert body["errors"][0]["loc"][:2] == ["body", "sheet"]
    assert "hp_max" in body["errors"][0]["msg"]


def test_bad_kind_and_missing_sheet_are_422(client, campaign):
    r = post_character(client, campaign, campaign.gm, kind="monster")
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "kind"]]
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", json={"name": "X"}, headers=campaign.gm)
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "sheet"]]


# --- players and ownership -------------------------------------------------------------------------


def test_player_creates_its_own_pc(client, campaign, alice):
    r = post_character(client, campaign, alice.headers, name="Mine")
    assert r.status_code == 201, r.text
    assert r.json()["player_id"] == alice.id
    r = post_character(client, campaign, alice.headers, name="Mine too", player_id=alice.id)
    assert r.status_code == 201, r.text
    assert r.json()["player_id"] == alice.id


@pytest.mark.parametrize("extra", [{"kind": "npc"}, {"player_id": "OTHER"}, {"gm_override": True}])
def test_player_may_not_create_npc_another_pc_or_override(client, campaign, alice, bob, count_rows, extra):
    if extra.get("player_id") == "OTHER":
        extra = {"player_id": bob.id}
    r = post_character(client, campaign, alice.headers, **extra)
    assert_problem(r, 403, "forbidden")
    assert count_rows("character", campaign_id=campaign.id) == 0


def test_owner_patches_its_character(client, hero, alice):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "Aria la Brave"}, headers=alice.headers)
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "Aria la Brave"
    assert r.json()["version"] == 2


def test_player_may_not_patch_or_delete_another_players_character(client, hero, bob, count_rows):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "Stolen"}, headers=bob.headers)
    assert_problem(r, 403, "forbidden")
    r = client.delete(f"/v1/characters/{hero['id']}", headers=bob.headers)
    assert_problem(r, 403, "forbidden")
    assert count_rows("character", id=hero["id"]) == 1
    r = client.get(f"/v1/characters/{hero['id']}", headers=bob.headers)
    assert r.json()["name"] == "Hero" and r.json()["version"] == 1


def test_player_may_not_patch_an_npc(client, campaign, character_factory, alice):
    """An NPC the player sees is 403 to its PATCH; one it may not know of (`player_access: none`,
    an NPC's default) is 404, valid body or not (refusal order, API.md round 3)."""
    npc = character_factory(campaign, GC_MINIMAL, kind="npc")
    for body in ({"name": "Mine now"}, {"name": ""}):
        assert_problem(client.patch(f"/v1/characters/{npc['id']}", json=body, headers=alice.headers), 404, "not-found")
    for access in ("observer", "limited"):
        r = client.patch(f"/v1/characters/{npc['id']}", json={"player_access": access}, headers=campaign.gm)
        assert r.status_code == 200, r.text
        for body in ({"name": "Mine now"}, {"name": ""}):
            assert_problem(
                client.patch(f"/v1/characters/{npc['id']}", json=body, headers=alice.headers), 403, "forbidden"
            )


@pytest.mark.parametrize(
    "body",
    [
        {"gm_override": True, "sheet": {"mental_health": 5000}},
        {"gm_override": True},
        {"kind": "npc"},
        {"player_id": None},
    ],
)
def test_owner_may_not_override_nor_change_kind_or_owner(client, hero, alice, body):
    r = client.patch(f"/v1/characters/{hero['id']}", json=body, headers=alice.headers)
    assert_problem(r, 403, "forbidden")
    r = client.get(f"/v1/characters/{hero['id']}", headers=alice.headers)
    assert r.json()["version"] == 1 and r.json()["kind"] == "pc" and r.json()["player_id"] == alice.id


def test_gm_reassigns_a_character(client, campaign, hero, bob):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"player_id": bob.id}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert r.json()["player_id"] == bob.id
    r = client.patch(f"/v1/characters/{hero['id']}", json={"kind": "npc", "player_id": None}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert (r.json()["kind"], r.json()["player_id"], r.json()["version"]) == ("npc", None, 3)


# --- patch: merge patch of the sheet ---------------------------------------------------------------


def test_patch_merges_the_sheet(client, campaign, hero):
    r = client.patch(
        f"/v1/characters/{hero['id']}",
        json={"sheet": {"stats": {"force": 70}, "notes": "brave", "hp": 80}},
        headers=campaign.gm,
    )
    assert r.status_code == 200, r.text
    ch = r.json()
    assert ch["sheet"]["stats"] == {**GC_MINIMAL["stats"], "force": 70}
    assert (ch["sheet"]["notes"], ch["sheet"]["hp"], ch["sheet"]["hp_max"]) == ("brave", 80, 100)
    assert ch["name"] == "Hero"
    assert ch["version"] == 2
    assert r.headers["etag"] == '"2"'
    # null removes a member (RFC 7396): notes back to its default
    r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": {"notes": None}}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert r.json()["sheet"]["notes"] is None
    assert r.json()["sheet"]["stats"]["force"] == 70
    r = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert r.json()["sheet"]["stats"]["force"] == 70 and r.json()["version"] == 3
    assert r.headers["etag"] == '"3"'


def test_patch_with_bad_sheet_is_a_422_and_changes_nothing(client, campaign, hero):
    r = client.patch(
        f"/v1/characters/{hero['id']}", json={"name": "New", "sheet": {"stats": {"force": 0}}}, headers=campaign.gm
    )
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "sheet", "stats", "force"]]
    r = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert r.json() == hero


def test_patch_unknown_field_is_a_422(client, campaign, hero):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"level": 3}, headers=campaign.gm)
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "level"]]


# --- If-Match --------------------------------------------------------------------------------------


def test_stale_if_match_is_a_412_and_nothing_changes(client, campaign, hero):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "v2"}, headers=campaign.gm)
    assert r.status_code == 200 and r.headers["etag"] == '"2"'
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "stale"}, headers={**campaign.gm, "If-Match": '"1"'})
    body = assert_problem(r, 412, "precondition-failed")
    assert body["current_version"] == 2
    r = client.delete(f"/v1/characters/{hero['id']}", headers={**campaign.gm, "If-Match": '"1"'})
    assert_problem(r, 412, "precondition-failed")
    r = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert r.status_code == 200
    assert (r.json()["name"], r.json()["version"]) == ("v2", 2)


@pytest.mark.parametrize("if_match", ['"1"', "1", 'W/"1"', '"7", "1"', "*"])
def test_current_or_star_if_match_is_accepted(client, campaign, hero, if_match):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "ok"}, headers={**campaign.gm, "If-Match": if_match})
    assert r.status_code == 200, r.text
    assert (r.json()["name"], r.json()["version"]) == ("ok", 2)
    assert r.headers["etag"] == '"2"'


def test_delete_with_current_if_match(client, campaign, hero, count_rows):
    r = client.delete(f"/v1/characters/{hero['id']}", headers={**campaign.gm, "If-Match": '"1"'})
    assert r.status_code == 204
    assert r.content == b""
    assert count_rows("character", id=hero["id"]) == 0
    r = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert_problem(r, 404, "not-found")
    r = client.delete(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert_problem(r, 404, "not-found")


def test_owner_deletes_its_character(client, hero, alice, count_rows):
    r = client.delete(f"/v1/characters/{hero['id']}", headers={**alice.headers, "If-Match": "*"})
    assert r.status_code == 204
    assert count_rows("character", id=hero["id"]) == 0


def test_delete_a_character_keeps_its_log(client, campaign, hero, count_rows):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [50]}, headers=campaign.gm)
    assert r.status_code == 201
    r = client.delete(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert r.status_code == 204, r.text
    assert count_rows("roll_log", campaign_id=campaign.id) == 1  # the log is append-only


# --- list and pagination ---------------------------------------------------------------------------


def test_list_paginates_with_limit_and_cursor(client, campaign, character_factory, alice):
    created = [character_factory(campaign, GC_MINIMAL, name=f"C{i}") for i in range(5)]
    for headers in (campaign.gm, alice.headers):
        r = client.get(f"/v1/campaigns/{campaign.id}/characters", headers=headers)
        assert r.status_code == 200
        assert r.json() == {"items": created, "next_cursor": None}

    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        r = client.get(f"/v1/campaigns/{campaign.id}/characters", params=params, headers=campaign.gm)
        assert r.status_code == 200, r.text
        page = r.json()
        pages += 1
        assert len(page["items"]) == (2 if pages < 3 else 1)
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert [c["id"] for c in seen] == [c["id"] for c in created]
    assert len({c["id"] for c in seen}) == 5


def test_list_is_stable_under_inserts(client, campaign, character_factory):
    first = [character_factory(campaign, GC_MINIMAL, name=f"C{i}") for i in range(3)]
    r = client.get(f"/v1/campaigns/{campaign.id}/characters", params={"limit": 2}, headers=campaign.gm)
    page1 = r.json()
    assert [c["id"] for c in page1["items"]] == [c["id"] for c in first[:2]]
    late = character_factory(campaign, GC_MINIMAL, name="Late")
    r = client.get(
        f"/v1/campaigns/{campaign.id}/characters",
        params={"limit": 2, "cursor": page1["next_cursor"]},
        headers=campaign.gm,
    )
    page2 = r.json()
    assert [c["id"] for c in page2["items"]] == [first[2]["id"], late["id"]]
    assert page2["next_cursor"] is None


def test_list_exact_limit_has_no_next_cursor(client, campaign, character_factory):
    for i in range(2):
        character_factory(campaign, GC_MINIMAL, name=f"C{i}")
    r = client.get(f"/v1/campaigns/{campaign.id}/characters", params={"limit": 2}, headers=campaign.gm)
    assert len(r.json()["items"]) == 2
    assert r.json()["next_cursor"] is None


@pytest.mark.parametrize(
    "params", [{"limit": 0}, {"limit": 501}, {"limit": "many"}, {"cursor": "garbage!"}, {"cursor": "W10="}]
)
def test_bad_limit_or_cursor_is_a_422(client, campaign, params):
    r = client.get(f"/v1/campaigns/{campaign.id}/characters", params=params, headers=campaign.gm)
    assert_problem(r, 422, "validation-error")


def test_list_of_another_campaign_is_empty_of_mine(client, campaign, campaign_factory, character_factory):
    other = campaign_factory(GC)
    character_factory(other, GC_MINIMAL)
    r = client.get(f"/v1/campaigns/{campaign.id}/characters", headers=campaign.gm)
    assert r.json() == {"items": [], "next_cursor": None}


def test_another_campaigns_token_gets_404_on_a_character_whatever_the_body(client, campaign_factory, character_factory):
    """A token of a campaign of another ruleset never learns whether a character exists: 404
    before the body is read (an Asgard body is not a Great Cosmos one)."""
    gc = campaign_factory("great-cosmos")
    other = campaign_factory("asgard")
    hero = character_factory(gc, GC_MINIMAL)
    for path, body in [
        ("tests", {"stat": "force", "dice": [50]}),
        ("tests", {"skill": "survie"}),
        ("tests/odds", {"stat": "force"}),
        ("level-ups", {}),
        ("actions", {"type": "fall"}),
    ]:
        r = client.post(f"/v1/characters/{hero['id']}/{path}", json=body, headers=other.gm)
        assert_problem(r, 404, "not-found")
