"""API.md round 4, "Import vouches for nothing it did not roll": an imported log entry keeps its
dice and outcome but says `provenance: "imported"` (`imported_provenance`: what the bundle
claimed), whoever reads it and however; only dice this service rolled are `server`. And a bundle
refers only to ids it defines: any other is a 422 naming its place, nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.support import bearer
from tests.api.test_export_import import _world
from tests.factories import SHEETS


def _export(client, cid: str, gm: dict[str, str]) -> dict[str, Any]:
    r = client.get(f"/v1/campaigns/{cid}/export", headers=gm)
    assert r.status_code == 200, r.text
    return r.json()


def _provenances(items: list[dict[str, Any]]) -> set[str]:
    return {e["provenance"] for e in items}


def test_gc_t1_a_d100_edited_to_99_claimed_server_is_read_as_imported_by_the_players(client):
    """The issue's scenario: a test's d100 edited to 99 against force 68, still
    `super_critical_success` and `provenance: "server"`. Imported, the players of the new campaign
    read it (the log, the entry, the character's log, the fight's actions) as `imported`, never as
    the server's roll; the GM reads the claim. Before, it was `server`."""
    cid, gm = _world(client, "great-cosmos")
    bundle = _export(client, cid, gm)
    entry = next(e for e in bundle["log"] if e["kind"] == "test" and not e["hidden"])
    body = entry["body"]
    assert body["target"] == 68 and body["rolls"][0]["die"] == "d100"
    body.update(natural=99, score=99, outcome="super_critical_success", success=True, provenance="server")
    body.pop("seed", None)
    body["rolls"][0]["value"] = 99
    entry["figures"]["outcome"] = "super_critical_success"
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 201, r.text
    new = r.json()
    new_cid, player, new_gm = new["id"], bearer(new["players"][0]["token"]), bearer(new["gm_token"])

    log = client.get(f"/v1/campaigns/{new_cid}/rolls", params={"limit": 100}, headers=player).json()["items"]
    edited = next(e for e in log if e["kind"] == "test" and e["natural"] == 99)
    assert edited["outcome"] == "super_critical_success" and edited["rolls"][0]["value"] == 99  # kept as it was
    assert edited["provenance"] == "imported" and edited["imported_provenance"] == "server"
    assert _provenances(log) == {"imported"}
    one = client.get(f"/v1/campaigns/{new_cid}/rolls/{edited['id']}", headers=player).json()
    assert one["provenance"] == "imported"
    hero = edited["character_id"]
    mine = client.get(f"/v1/campaigns/{new_cid}/rolls", params={"character_id": hero}, headers=player).json()
    assert mine["items"] and _provenances(mine["items"]) == {"imported"}
    encounter = client.get(f"/v1/campaigns/{new_cid}/encounters", headers=player).json()["items"][0]
    actions = client.get(f"/v1/encounters/{encounter['id']}/actions", headers=player).json()["items"]
    assert actions and _provenances(actions) == {"imported"}
    gm_log = client.get(f"/v1/campaigns/{new_cid}/rolls", params={"limit": 100}, headers=new_gm).json()["items"]
    assert _provenances(gm_log) == {"imported"}
    assert {e["imported_provenance"] for e in gm_log} == {"server", "seed"}  # each entry's own claim

    # what this service rolls in the imported campaign is its own again
    r = client.post(f"/v1/campaigns/{new_cid}/rolls", json={"expression": "1d6"}, headers=new_gm)
    assert r.status_code == 201 and r.json()["provenance"] == "server" and "imported_provenance" not in r.json()


def test_a_claim_of_imported_is_kept_with_the_first_claim_and_an_empty_claim_stays_empty(client):
    """A bundle may itself say `imported` (a campaign imported, exported again): it keeps its
    first claim; a hand-made `imported` without a claim gets none (nobody claimed anything)."""
    cid, gm = _world(client, "great-cosmos")
    bundle = _export(client, cid, gm)
    bundle["log"][0]["body"].update(provenance="imported", imported_provenance="table")
    bundle["log"][1]["body"]["provenance"] = "imported"
    new = client.post("/v1/campaigns/import", json=bundle).json()
    log = _export(client, new["id"], bearer(new["gm_token"]))["log"]
    assert log[0]["body"]["provenance"] == "imported" and log[0]["body"]["imported_provenance"] == "table"
    assert log[1]["body"]["provenance"] == "imported" and "imported_provenance" not in log[1]["body"]


# --- only ids the bundle defines ------------------------------------------------------------------


def _secret_npc(client) -> str:
    """Another campaign's NPC its players may not see: the id an attacker would name."""
    r = client.post("/v1/campaigns", json={"name": "Victim", "ruleset": "great-cosmos"})
    victim = bearer(r.json()["gm_token"])
    r = client.post(
        f"/v1/campaigns/{r.json()['id']}/characters",
        json={"name": "Secret", "kind": "npc", "sheet": SHEETS["great-cosmos"], "player_access": "none"},
        headers=victim,
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


ELSEWHERE = [
    (lambda b, x: b["encounters"][0]["combatants"][1].update(character_id=x), ["encounters", 0, "combatants", 1]),
    (lambda b, x: b["log"][0].update(character_id=x), ["log", 0, "character_id"]),
    (lambda b, x: b["log"][0]["characters"].append(x), ["log", 0, "characters", 0]),
    (lambda b, x: b["actions"][-1].update(reverts=x), ["actions", -1, "reverts"]),
    (lambda b, x: b["actions"][-1].update(reverted_by=x), ["actions", -1, "reverted_by"]),
]


@pytest.mark.parametrize(("spoil", "loc"), ELSEWHERE, ids=["combatant", "entry", "entry_link", "reverts", "reverted"])
def test_a_bundle_naming_an_id_it_does_not_define_is_a_422_naming_its_place(client, count_rows, spoil, loc):
    """A combatant pointing at another campaign's secret NPC (before: 201, stored as it was, and
    locked with the new campaign's fights), a log entry of it, an action reverting another
    campaign's: 422 at that place, nothing written."""
    cid, gm = _world(client, "great-cosmos")
    bundle = _export(client, cid, gm)
    secret = _secret_npc(client)
    spoil(bundle, secret)
    if loc[0] == "log":  # the body names the entry's character as the entry does
        bundle["log"][0]["body"]["character_id"] = bundle["log"][0]["character_id"]
    where = [str(len(bundle["actions"]) - 1) if p == -1 else str(p) for p in loc]
    before = count_rows("campaign"), count_rows("combatant"), count_rows("roll_log")
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_bundle"
    got = [str(p) for p in r.json()["errors"][0]["loc"]]
    assert got[: len(where) + 1] == ["body", *where], got
    assert secret in r.json()["detail"]
    assert (count_rows("campaign"), count_rows("combatant"), count_rows("roll_log")) == before
