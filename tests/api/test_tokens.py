"""The tokens' lifecycle (issue 14 item 11, API.md): who am I, rotating the GM's
and a player's token (the old one dead at once, in every worker), removing a
player (its characters stay, unowned), deleting a campaign (everything of it, in
one transaction)."""

from __future__ import annotations

import httpx
import pytest

from app.models.tables import metadata
from tests.api.support import assert_problem, bearer
from tests.factories import GC, GC_MINIMAL
from tests.hardening.conftest import Server


def test_me_names_the_tokens_campaign_role_and_player(client, campaign, player_factory):
    alice = player_factory(campaign)
    assert client.get("/v1/me", headers=campaign.gm).json() == {
        "campaign_id": campaign.id,
        "role": "gm",
        "player_id": None,
    }
    assert client.get("/v1/me", headers=alice.headers).json() == {
        "campaign_id": campaign.id,
        "role": "player",
        "player_id": alice.id,
    }
    assert_problem(client.get("/v1/me"), 401, "unauthorized")
    assert_problem(client.get("/v1/me", headers=bearer("gm_nope")), 401, "unauthorized")


def test_rotating_the_gm_token_kills_the_old_one_at_once(client, campaign, player_factory):
    alice = player_factory(campaign)
    assert_problem(client.post(f"/v1/campaigns/{campaign.id}/gm-token/rotate", headers=alice.headers), 403, "forbidden")
    r = client.post(f"/v1/campaigns/{campaign.id}/gm-token/rotate", headers=campaign.gm)
    assert r.status_code == 200, r.text
    new = bearer(r.json()["gm_token"])
    assert r.json()["gm_token"] != campaign.gm_token
    assert_problem(client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm), 401, "unauthorized")
    assert_problem(client.get("/v1/me", headers=campaign.gm), 401, "unauthorized")
    assert client.get("/v1/me", headers=new).json()["role"] == "gm"
    assert client.get(f"/v1/campaigns/{campaign.id}", headers=new).status_code == 200
    assert client.get("/v1/me", headers=alice.headers).status_code == 200  # players keep theirs


def test_rotating_a_players_token(client, campaign, player_factory):
    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    url = f"/v1/campaigns/{campaign.id}/players/{alice.id}/token/rotate"
    assert_problem(client.post(url, headers=bob.headers), 403, "forbidden")
    assert_problem(client.post(url, headers=alice.headers), 403, "forbidden")
    assert_problem(
        client.post(f"/v1/campaigns/{campaign.id}/players/{'0' * 32}/token/rotate", headers=campaign.gm),
        404,
        "not-found",
    )
    r = client.post(url, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert_problem(client.get("/v1/me", headers=alice.headers), 401, "unauthorized")
    assert client.get("/v1/me", headers=bearer(r.json()["token"])).json()["player_id"] == alice.id
    assert client.get("/v1/me", headers=bob.headers).status_code == 200


def test_removing_a_player_kills_its_token_and_keeps_its_characters_unowned(
    client, campaign, player_factory, character_factory, count_rows
):
    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    hero = character_factory(campaign, GC_MINIMAL, player=alice)
    assert (
        client.post(
            f"/v1/characters/{hero['id']}/tests",
            json={"stat": "force"},
            headers={**alice.headers, "Idempotency-Key": "t1"},
        ).status_code
        == 201
    )
    url = f"/v1/campaigns/{campaign.id}/players/{alice.id}"
    assert_problem(client.delete(url, headers=bob.headers), 403, "forbidden")
    r = client.delete(url, headers=campaign.gm)
    assert r.status_code == 204, r.text
    assert_problem(client.get("/v1/me", headers=alice.headers), 401, "unauthorized")
    assert_problem(client.delete(url, headers=campaign.gm), 404, "not-found")
    kept = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm).json()
    assert kept["player_id"] is None and kept["name"] == hero["name"]
    assert [
        p["id"] for p in client.get(f"/v1/campaigns/{campaign.id}/players", headers=campaign.gm).json()["items"]
    ] == [bob.id]
    assert count_rows("credential", player_id=alice.id) == 0 and count_rows("player", id=alice.id) == 0
    assert count_rows("roll_log", campaign_id=campaign.id) == 1  # the log is append-only


def _tables_with_campaign_rows(count_rows, cid: str, encounter_id: str) -> dict[str, int]:
    counts = {t.name: count_rows(t.name, campaign_id=cid) for t in metadata.sorted_tables if "campaign_id" in t.c}
    counts["campaign"] = count_rows("campaign", id=cid)
    counts["combatant"] = count_rows("combatant", encounter_id=encounter_id)
    counts["encounter_action"] = count_rows("encounter_action", encounter_id=encounter_id)
    return counts


def test_deleting_a_campaign_deletes_everything_of_it_and_nothing_else(
    client, campaign, campaign_factory, player_factory, character_factory, count_rows
):
    alice = player_factory(campaign)
    hero, foe = (
        character_factory(campaign, GC_MINIMAL, player=alice),
        character_factory(campaign, GC_MINIMAL, kind="npc", name="Foe"),
    )
    gm_key = {**campaign.gm, "Idempotency-Key": "k1"}
    assert (
        client.post(
            f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [42]}, headers=gm_key
        ).status_code
        == 201
    )
    assert (
        client.post(f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "d6"}, headers=alice.headers).status_code
        == 201
    )
    r = client.post(
        f"/v1/campaigns/{campaign.id}/encounters",
        headers=campaign.gm,
        json={"name": "Ambush", "combatants": [{"character_id": hero["id"]}, {"character_id": foe["id"]}]},
    )
    eid = r.json()["id"]
    assert client.post(f"/v1/encounters/{eid}/start", json={"seed": 1}, headers=campaign.gm).status_code == 201
    assert client.post(f"/v1/campaigns/{campaign.id}/events/tickets", headers=alice.headers).status_code == 201
    other = campaign_factory(GC, name="Untouched")
    character_factory(other, GC_MINIMAL)
    before_other = _tables_with_campaign_rows(count_rows, other.id, "")
    before = _tables_with_campaign_rows(count_rows, campaign.id, eid)
    assert all(
        before[t] > 0
        for t in (
            "campaign",
            "player",
            "credential",
            "character",
            "roll_log",
            "event",
            "encounter",
            "combatant",
            "encounter_action",
        )
    )
    assert count_rows("idempotency") >= 1

    url = f"/v1/campaigns/{campaign.id}"
    assert_problem(client.delete(url, headers=alice.headers), 403, "forbidden")
    assert_problem(client.delete(url, headers=other.gm), 404, "not-found")
    assert_problem(client.delete(url, headers={**campaign.gm, "If-Match": '"99"'}), 412, "precondition-failed")
    r = client.delete(url, headers={**campaign.gm, "If-Match": '"1"'})
    assert r.status_code == 204, r.text
    after = _tables_with_campaign_rows(count_rows, campaign.id, eid)
    assert after == dict.fromkeys(after, 0), after
    assert count_rows("stream_ticket") == 0 and count_rows("idempotency") == 0
    assert_problem(client.get(url, headers=campaign.gm), 401, "unauthorized")
    assert_problem(client.get("/v1/me", headers=alice.headers), 401, "unauthorized")
    assert _tables_with_campaign_rows(count_rows, other.id, "") == before_other
    assert client.get(f"/v1/campaigns/{other.id}", headers=other.gm).status_code == 200


def test_deleting_a_campaign_without_if_match_is_allowed(client, campaign):
    assert client.delete(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).status_code == 204
    assert_problem(client.get("/v1/me", headers=campaign.gm), 401, "unauthorized")


# --- every worker: a token remembered by a process dies with its credential ---------------------------


@pytest.fixture
def two_workers(live):
    """A real server of two workers, and the campaigns a test made there."""
    # the dead tokens' 401s are failed authentications
    return live.start(workers=2, AUTH_FAILURES_PER_MINUTE="0"), []


def _each_on_a_new_connection(server: Server, n: int, path: str, token: str) -> list[int]:
    """`n` GETs, each on a new connection: the server closes each after its answer
    (`Connection: close`), so the client connects again (one client: making an httpx
    client per request cost ~0.1 s here, its TLS context)."""
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=server.url, timeout=10, headers={"Connection": "close"}, limits=limits) as http:
        return [http.get(path, headers=bearer(token)).status_code for _ in range(n)]


def test_a_rotated_token_is_dead_in_every_worker_at_once(two_workers):
    server, created = two_workers
    with httpx.Client(base_url=server.url, timeout=10) as http:
        r = http.post("/v1/campaigns", json={"name": "Workers", "ruleset": GC})
        cid, old_gm = r.json()["id"], r.json()["gm_token"]
        created.append(cid)
        old_player = http.post(f"/v1/campaigns/{cid}/players", json={"name": "P"}, headers=bearer(old_gm)).json()
    # both workers remember both tokens (new connections are spread over the workers)
    assert _each_on_a_new_connection(server, 30, f"/v1/campaigns/{cid}", old_gm) == [200] * 30
    assert _each_on_a_new_connection(server, 30, "/v1/me", old_player["token"]) == [200] * 30
    with httpx.Client(base_url=server.url, timeout=10) as http:
        new_gm = http.post(f"/v1/campaigns/{cid}/gm-token/rotate", headers=bearer(old_gm)).json()["gm_token"]
        assert (
            http.post(
                f"/v1/campaigns/{cid}/players/{old_player['id']}/token/rotate", headers=bearer(new_gm)
            ).status_code
            == 200
        )
    assert _each_on_a_new_connection(server, 30, f"/v1/campaigns/{cid}", old_gm) == [401] * 30
    assert _each_on_a_new_connection(server, 30, "/v1/me", old_player["token"]) == [401] * 30
    assert _each_on_a_new_connection(server, 10, f"/v1/campaigns/{cid}/events?follow=false", old_gm) == [401] * 10
    assert _each_on_a_new_connection(server, 10, f"/v1/campaigns/{cid}", new_gm) == [200] * 10


def test_removing_a_player_saves_its_characters_unowned_and_tells_them(
    client, campaign, player_factory, character_factory
):
    """A removed player's characters stay, owned by nobody: each is saved so (its version moves: a
    conditional GET with the old ETag is not a 304, an If-Match with it is a 412) and told as
    `character.updated` (the events mirror every change), then `player.deleted`; a fight showing one
    moves too; another player's character is untouched."""
    from tests.api.support import read_events

    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    heroes = [character_factory(campaign, GC_MINIMAL, player=alice, name=n) for n in ("Aiko", "Ren")]
    bobs = character_factory(campaign, GC_MINIMAL, player=bob, name="Kai")
    fight = client.post(
        f"/v1/campaigns/{campaign.id}/encounters",
        json={"name": "Gué", "combatants": [{"character_id": c["id"], "side": "a"} for c in (heroes[0], bobs)]},
        headers=campaign.gm,
    )
    assert fight.status_code == 201, fight.text
    fight_url = f"/v1/encounters/{fight.json()['id']}"
    fight_before = client.get(fight_url, headers=campaign.gm)
    before = {h["id"]: client.get(f"/v1/characters/{h['id']}", headers=campaign.gm) for h in [*heroes, bobs]}
    last = read_events(client, campaign.id, campaign.gm)[-1]["id"]

    r = client.delete(f"/v1/campaigns/{campaign.id}/players/{alice.id}", headers=campaign.gm)
    assert r.status_code == 204, r.text

    told = [e for e in read_events(client, campaign.id, campaign.gm) if e["id"] > last]
    # the fight showing Aiko shows her owner: it moves too (its ETag is no longer a 304), told first
    fight_now = client.get(fight_url, headers={**campaign.gm, "If-None-Match": fight_before.headers["ETag"]})
    assert fight_now.status_code == 200 and fight_now.json()["version"] == fight_before.json()["version"] + 1
    owners = {c["character_id"]: c["player_id"] for c in fight_now.json()["combatants"]}
    assert owners == {heroes[0]["id"]: None, bobs["id"]: bob.id}
    assert (told[0]["type"], told[0]["data"]) == (
        "encounter.updated",
        {"id": fight.json()["id"], "version": fight_now.json()["version"]},
    )
    told = told[1:]
    assert sorted((e["type"], e["data"]["id"]) for e in told[:-1]) == sorted(
        ("character.updated", h["id"]) for h in heroes
    )
    assert (told[-1]["type"], told[-1]["data"]) == ("player.deleted", {"id": alice.id})  # last: after its characters
    heard_by_bob = [e for e in read_events(client, campaign.id, bob.headers) if e["id"] > last]
    assert heard_by_bob[-1] == told[-1]  # every member hears of it (the players' list is every member's)
    told = told[:-1]
    for hero in heroes:
        old = before[hero["id"]]
        now = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
        assert now.json()["player_id"] is None
        assert now.json()["version"] == old.json()["version"] + 1
        assert now.headers["ETag"] != old.headers["ETag"]
        assert next(e["data"] for e in told if e["data"]["id"] == hero["id"]) == now.json()
        again = client.get(
            f"/v1/characters/{hero['id']}", headers={**campaign.gm, "If-None-Match": old.headers["ETag"]}
        )
        assert again.status_code == 200 and again.json()["player_id"] is None
        stale = client.patch(
            f"/v1/characters/{hero['id']}",
            json={"name": "Old view"},
            headers={**campaign.gm, "If-Match": old.headers["ETag"]},
        )
        assert_problem(stale, 412, "precondition-failed")
    kept = client.get(f"/v1/characters/{bobs['id']}", headers=campaign.gm)
    assert kept.json()["player_id"] == bob.id and kept.headers["ETag"] == before[bobs["id"]].headers["ETag"]
