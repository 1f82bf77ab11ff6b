"""Issue 27 item 6 (API.md round 3, "Events … per viewer"): a character the players other than its
owner saw and may see no more (`player_access` made `none`) is announced to them by `character.hidden`
(its id only, which they knew), so a page drops its card at once; their `character.updated` stays
withheld. A character they never saw is never named to them."""

from __future__ import annotations

import json

from tests.api.test_player_access import _about, _access, _events, table  # noqa: F401  # (the fixture)


def _hidden(client, t, who) -> list[dict]:
    return [e["data"] for e in _events(client, t, who) if e["type"] == "character.hidden"]


def test_issue27_item6_a_limited_npc_made_none_is_announced_hidden_to_everyone_once(client, table):  # noqa: F811
    t = table
    _access(client, t, t["orc"], "limited")
    _access(client, t, t["orc"], "none")
    for who in (t["c"].gm, t["alice"].headers, t["bob"].headers):
        assert _hidden(client, t, who) == [{"id": t["orc"]}]
    # the players' streams: the limited view when shown, then only its id; nothing after it
    kinds = [k for k, _ in _about(_events(client, t, t["alice"].headers), t["orc"])]
    assert kinds == ["character.updated", "character.hidden"]
    # hidden again while hidden: nothing more
    _access(client, t, t["orc"], "none")
    r = client.patch(f"/v1/characters/{t['orc']}", json={"name": "Orc chief"}, headers=t["c"].gm)
    assert r.status_code == 200, r.text
    assert _hidden(client, t, t["alice"].headers) == [{"id": t["orc"]}]


def test_issue27_item6_a_pc_made_none_hidden_from_the_others_its_owner_still_reads_it(client, table):  # noqa: F811
    t = table
    _access(client, t, t["aiko"], "none")
    assert _hidden(client, t, t["bob"].headers) == [{"id": t["aiko"]}]
    assert client.get(f"/v1/characters/{t['aiko']}", headers=t["bob"].headers).status_code == 404
    assert client.get(f"/v1/characters/{t['aiko']}", headers=t["alice"].headers).status_code == 200


def test_issue27_item6_a_character_never_seen_is_never_named_to_players(client, table):  # noqa: F811
    t = table
    _access(client, t, t["orc"], "none")  # an NPC is `none` from its creation: nobody saw it
    r = client.patch(f"/v1/characters/{t['orc']}", json={"name": "Orc chief"}, headers=t["c"].gm)
    assert r.status_code == 200, r.text
    for player in (t["alice"], t["bob"]):
        assert _hidden(client, t, player.headers) == []
        assert t["orc"] not in json.dumps(_events(client, t, player.headers))
    assert _hidden(client, t, t["c"].gm) == []


def test_issue27_item6_a_combatant_hidden_mid_fight_its_character_announced_hidden(client, table):  # noqa: F811
    """Bran (Bob's PC, seen by Alice) hidden in a fight: Alice's stream gets `character.hidden` for
    him; Orc (never seen by players) hidden: nothing names it to them."""
    t = table
    r = client.post(
        f"/v1/campaigns/{t['c'].id}/encounters",
        headers=t["c"].gm,
        json={"name": "Shadows", "combatants": [{"character_id": t["bran"]}, {"character_id": t["orc"]}]},
    )
    assert r.status_code == 201, r.text
    for c in r.json()["combatants"]:
        u = client.patch(
            f"/v1/encounters/{r.json()['id']}/combatants/{c['id']}", json={"hidden": True}, headers=t["c"].gm
        )
        assert u.status_code == 200, u.text
    assert _hidden(client, t, t["alice"].headers) == [{"id": t["bran"]}]
    assert client.get(f"/v1/characters/{t['bran']}", headers=t["alice"].headers).status_code == 404
    assert t["orc"] not in json.dumps(_events(client, t, t["alice"].headers))
