# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""The figures a refusal carries for a client to say why in its own words: `out_of_reach` names the
distance and the reach the rule allows (GC-D1), and a 422's schema faults their pydantic `type` and
its JSON `ctx` (a rule's refusal has none: its problem's `code` says why)."""

from __future__ import annotations

from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem
from tests.factories import as_fighter, gc_fighter

SWORD = {"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}


def test_out_of_reach_says_the_distance_and_the_reach_gc_d1(table):
    t: Table = table("great-cosmos")
    s = t.encounter(
        [
            {
                "character_id": t.character("Aiko", gc_fighter(60, inventory={"items": [SWORD]})),
                "position": {"x": 0, "y": 0},
            },
            {"character_id": t.character("Brute", gc_fighter(40)), "position": {"x": 3, "y": 1}},
        ]
    )
    eid, n = s["id"], ids(s)
    current = t.start(eid, seed=3)["current"]["combatant_id"]
    other = next(c for c in n.values() if c != current)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        json={"type": "attack", "actor_id": current, "target_id": other, "dice": [30, 50, 1]},
        headers=t.gm,
    )
    body = assert_problem(r, 422, "out-of-reach")
    assert (body["rule"], body["distance"], body["reach"]) == ("GC-D1", 4, 1)  # |dx| + |dy| = 3 + 1; melee: 1
    typed = t.client.get("/openapi.json").json()["components"]["schemas"]["OutOfReachProblem"]["allOf"][1]
    assert (typed["properties"]["reach"]["type"], typed["required"]) == ("integer", ["distance", "reach", "rule"])


def test_schema_faults_carry_their_type_and_figures_rule_refusals_none(table):
    t: Table = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Sigrid", as_fighter(perception=5), kind="pc")},
            {"character_id": t.character("Troll", as_fighter(perception=0))},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, seed=1)
    base = {"type": "attack", "actor_id": n["Sigrid"], "target_id": n["Troll"]}
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        json={**base, "modifier": 101, "skill": "x" * 61, "reaction": "flee", "asset_dice": "two", "bogus": 1},
        headers=t.gm,
    )
    faults = {tuple(e["loc"]): e for e in assert_problem(r, 422, "validation-failed")["errors"]}
    assert faults[("body", "modifier")]["type"] == "less_than_equal" and faults[("body", "modifier")]["ctx"] == {
        "le": 100
    }
    assert (faults[("body", "skill")]["type"], faults[("body", "skill")]["ctx"]) == (
        "string_too_long",
        {"max_length": 60},
    )
    assert (
        faults[("body", "reaction")]["type"] == "literal_error"
        and "'none'" in faults[("body", "reaction")]["ctx"]["expected"]
    )
    assert faults[("body", "asset_dice")]["type"] == "int_type"
    assert faults[("body", "bogus")]["type"] == "extra_forbidden" and "ctx" not in faults[("body", "bogus")]
    assert all(isinstance(e["msg"], str) and e["msg"] for e in faults.values())  # the English text stays
    r = t.client.post(f"/v1/encounters/{eid}/actions", json={"type": "attack", "actor_id": n["Sigrid"]}, headers=t.gm)
    missing = assert_problem(r, 422, "validation-failed")["errors"]
    assert [(e["loc"], e.get("type")) for e in missing] == [(["body", "target_id"], "missing")]
    r = t.client.get(
        f"/v1/encounters/{eid}/actions", params={"limit": "many"}, headers=t.gm
    )  # a query parameter's fault too
    assert [e.get("type") for e in assert_problem(r, 422, "validation-failed")["errors"]] == ["int_parsing"]
    # a rule's refusal: no `type`, the problem's code says why
    r = t.client.post(f"/v1/encounters/{eid}/actions", json={**base, "target_id": n["Sigrid"]}, headers=t.gm)
    refused = assert_problem(r, 422, "self-target")
    assert refused["errors"] and all("type" not in e for e in refused["errors"])
