"""A ruleset's own setup and turn fields (GC-O3 `actions`, GC-O2 `chosen_orders`, AS-T8 `take_11`)
live in that ruleset's request models; the routes take every ruleset's, and a fight reads a body as
its own ruleset's model: another ruleset's field is a 422 naming whose it is, unless it is sent at
its default (as a client sending `"actions": 1` to every ruleset always could)."""

from __future__ import annotations

import pytest

from app.models import encounters
from app.rulesets import encounter_bodies
from app.rulesets.registry import rules_for
from tests.api.support import assert_validation
from tests.factories import as_fighter, gc_fighter, rb_fighter
from tests.fixtures import ids, table  # noqa: F401

OWN = {"actions", "take_11", "chosen_orders"}


def test_the_shared_models_hold_no_rulesets_field_and_each_ruleset_declares_its_own():
    shared = [encounters.CombatantCreateBase, encounters.CombatantUpdateBase, encounters.StartRequestBase]
    assert not any(OWN & m.model_fields.keys() for m in [*shared, encounters.NextTurnRequestBase])
    gc, asgard, rb = rules_for("great-cosmos"), rules_for("asgard"), rules_for("rulebook-d100")
    assert {"actions"} <= gc.CombatantCreate.model_fields.keys() & gc.CombatantUpdate.model_fields.keys()
    assert "chosen_orders" in gc.StartRequest.model_fields and "chosen_orders" in gc.NextTurnRequest.model_fields
    assert "take_11" in asgard.StartRequest.model_fields and "take_11" not in gc.StartRequest.model_fields
    assert rb.StartRequest is encounters.StartRequestBase and rb.CombatantCreate is encounters.CombatantCreateBase
    # the routes' bodies: every ruleset's fields, each model a subclass of each ruleset's
    assert {"take_11", "chosen_orders"} <= encounter_bodies.StartRequest.model_fields.keys()
    assert issubclass(encounter_bodies.StartRequest, (gc.StartRequest, asgard.StartRequest))


def test_another_rulesets_field_is_a_422_naming_whose_it_is(table):
    t = table("asgard")
    hero, foe = t.character("Hero", as_fighter(3), kind="pc"), t.character("Foe", as_fighter(1))
    url = f"/v1/campaigns/{t.c.id}/encounters"
    r = t.client.post(url, json={"name": "x", "combatants": [{"character_id": hero, "actions": 2}]}, headers=t.gm)
    body = assert_validation(r, [["body", "combatants", "0", "actions"]])
    assert body["code"] == "unsupported_operation" and "asgard has no `actions`" in body["detail"]
    assert "great-cosmos" in body["detail"]
    s = t.encounter([{"character_id": hero}, {"character_id": foe}])
    n = ids(s)
    r = t.client.patch(f"/v1/encounters/{s['id']}/combatants/{n['Hero']}", json={"actions": 3}, headers=t.gm)
    assert assert_validation(r, [["body", "actions"]])["code"] == "unsupported_operation"
    r = t.client.post(f"/v1/encounters/{s['id']}/start", json={"chosen_orders": [[n["Hero"]]]}, headers=t.gm)
    body = assert_validation(r, [["body", "chosen_orders"]])
    assert "great-cosmos" in body["detail"] and body["code"] == "unsupported_operation"

    g = table("great-cosmos")
    aiko = g.character("Aiko", gc_fighter(60), kind="pc")
    s = g.encounter([{"character_id": aiko, "actions": 2}])  # its own rule (GC-O3)
    assert s["combatants"][0]["actions"] == 2
    r = g.client.post(f"/v1/encounters/{s['id']}/start", json={"take_11": [ids(s)["Aiko"]]}, headers=g.gm)
    body = assert_validation(r, [["body", "take_11"]])
    assert "great-cosmos has no `take_11`: it is a field of asgard" in body["detail"]


@pytest.mark.parametrize("ruleset", ["asgard", "rulebook-d100"])
def test_another_rulesets_field_at_its_default_is_still_accepted(table, ruleset):
    """Valid before each ruleset had its own models: `"actions": 1`, an empty `chosen_orders`…"""
    t = table(ruleset)
    sheet = as_fighter(3) if ruleset == "asgard" else rb_fighter(60)
    s = t.encounter([{"character_id": t.character("Hero", sheet, kind="pc"), "actions": 1}])
    assert s["combatants"][0]["actions"] == 1
    started = t.start(s["id"], chosen_orders=[], take_11=[], seed=1)
    assert started["status"] == "active"
    t.next_turn(s["id"], chosen_orders=[])
