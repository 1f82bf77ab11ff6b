# ruff: noqa: F811  (the `table` fixture is imported from encounter_support)
"""Problems that tell nothing they should not and say where the fault is: a secret NPC's id answers
the rolls route as a made-up id does, byte for byte; a query parameter's fault is located in the
query; one limit answers one code."""

from __future__ import annotations

import pytest

from tests.api.encounter_support import table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem
from tests.factories import gc_fighter

MADE_UP = "f" * 32


def without_request_id(r) -> bytes:
    """The problem's bytes but for its `request_id` (each request's own)."""
    body = r.json()
    return r.content.replace(body["request_id"].encode(), b"")


@pytest.mark.parametrize("hidden_how", ["player_access_none", "hidden_combatant"])
def test_a_secret_npcs_id_on_the_rolls_route_is_a_made_up_ids_404_byte_for_byte(table, hidden_how):
    """A player's free roll for an NPC it may not know of (`player_access: none`, or an observer
    NPC that is a hidden combatant) answered "no character with this id" where a made-up id got
    "no character with id '…' in this campaign": the difference told the secret NPC exists."""
    t = table("great-cosmos")
    secret = t.character("Secret", gc_fighter(40), kind="npc")
    if hidden_how == "hidden_combatant":
        r = t.client.patch(f"/v1/characters/{secret}", json={"player_access": "observer"}, headers=t.gm)
        assert r.status_code == 200, r.text
        t.encounter([{"character_id": secret, "hidden": True}])
    answers = [
        t.client.post(
            f"/v1/campaigns/{t.c.id}/rolls", json={"expression": "1d6", "character_id": cid}, headers=t.alice.headers
        )
        for cid in (secret, MADE_UP)
    ]
    for r in answers:
        assert_problem(r, 404, "not-found")
    assert without_request_id(answers[0]) == without_request_id(answers[1])
    gm = t.client.post(
        f"/v1/campaigns/{t.c.id}/rolls", json={"expression": "1d6", "character_id": secret}, headers=t.gm
    )
    assert gm.status_code == 201, gm.text  # the GM knows it


def test_choices_locate_an_unknown_combatant_id_in_the_query(table):
    """`combatant_id` is a query parameter of `choices`: a 422 naming it says `["query",
    "combatant_id"]`, as a missing one does (FastAPI's own), never the body it is not in."""
    t = table("great-cosmos")
    s = t.encounter([{"character_id": t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice)}])
    path = f"/v1/encounters/{s['id']}/choices"
    for params in ({"combatant_id": MADE_UP}, {}):
        for who in (t.gm, t.alice.headers):
            r = t.client.get(path, params=params, headers=who)
            body = assert_problem(r, 422, "unknown-id" if params else "validation-error")
            assert [e["loc"] for e in body["errors"]] == [["query", "combatant_id"]]
