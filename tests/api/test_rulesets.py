"""GET /v1/rulesets and /v1/rulesets/{id}: the catalogue a client builds its forms from."""

from __future__ import annotations

import pytest

from tests.api.encounter_support import ids, table  # noqa: F401  (the fixture)
from tests.factories import wa_fighter

RULESETS = ["great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"]


def test_the_four_rulesets_are_listed_without_a_token(client):
    r = client.get("/v1/rulesets")
    assert r.status_code == 200
    assert [item["id"] for item in r.json()["items"]] == RULESETS
    assert r.json()["next_cursor"] is None


@pytest.mark.parametrize("ruleset", RULESETS)
def test_each_ruleset_describes_stats_difficulties_options_and_sheet(client, ruleset):
    body = client.get(f"/v1/rulesets/{ruleset}").json()
    assert body["id"] == ruleset
    assert body["stats"], "a client needs the stat (or skill) names"
    assert isinstance(body["difficulties"], dict)
    assert body["options"]["defaults"]["players_may_enter_dice"] is False
    assert set(body["options"]["defaults"]) == set(body["options"]["schema"]["properties"])
    assert body["sheet_schema"]["type"] == "object" and body["sheet_schema"]["properties"]
    assert body["test_request_schema"]["additionalProperties"] is False


def test_catalogue_values_follow_the_rules_pages(client):
    gc = client.get("/v1/rulesets/great-cosmos").json()
    assert gc["stats"] == ["force", "esprit", "charisme", "agilite", "precision", "chance"]  # GC-S1
    asgard = client.get("/v1/rulesets/asgard").json()
    assert {k: v for k, v in asgard["difficulties"].items() if v is not None} == {
        "facile": 10,
        "moyen": 15,
        "difficile": 20,
        "heroique": 25,
    }  # AS-T2
    rb = client.get("/v1/rulesets/rulebook-d100").json()
    assert rb["difficulties"]["difficile"] == -30 and rb["difficulties"]["simplissime"] == 100  # RB-T2
    wa = client.get("/v1/rulesets/worlds-awakening").json()
    assert wa["stats"] == ["FOR", "DEX", "CON", "INT", "SAG", "CHA"]  # WA-S1


def test_campaign_options_defaults_are_the_catalogue_defaults(client, campaign_factory):
    for ruleset in RULESETS:
        c = campaign_factory(ruleset)
        assert c.body["options"] == client.get(f"/v1/rulesets/{ruleset}").json()["options"]["defaults"]


def test_unknown_ruleset_is_a_404_problem(client):
    r = client.get("/v1/rulesets/dnd5e")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"


# --- combat: what an encounter of each ruleset offers (its EncounterRules) --------------------

GM_ACTIONS = {"heal", "damage", "condition"}


def combat_of(client, ruleset: str) -> dict:
    r = client.get(f"/v1/rulesets/{ruleset}")
    assert r.status_code == 200
    return r.json()["combat"]


def test_gc_o1_o3_p2_catalogue_describes_great_cosmos_encounters(client):
    combat = combat_of(client, "great-cosmos")
    assert combat["pools"] == [
        {"name": "hp", "key": "hp", "max_key": "hp_max", "floor": 0},
        {"name": "mp", "key": "mp", "max_key": "mp_max", "floor": 0},
    ]
    assert (combat["reactions"], combat["default_reaction"]) == (["none", "dodge", "parry"], "dodge")  # GC-P2
    assert combat["multiple_actions"] is True  # GC-O3
    assert combat["initiative"]["reorders_each_round"] is True  # GC-O1
    assert combat["initiative"]["dice_order"].startswith("GC-O3 d6 per combatant with several actions")
    assert set(combat["actions"]) == GM_ACTIONS | {"attack", "move", "dash", "posture", "final_skill"}
    assert combat["options"]["defaults"] == {
        "hp_visibility": "exact",
        "reveal_on_turn": True,
        "odds_for_players": "visible",
        "tie_method": "d20",
    }
    assert combat["options"]["schema"]["properties"]["tie_method"]["enum"] == ["d20", "parallel"]  # GC-O2


def test_as_c1_c13_t8_catalogue_describes_asgard_encounters(client):
    combat = combat_of(client, "asgard")
    assert combat["pools"] == [
        {"name": "vitality", "key": "vitality", "max_key": "vitality_max", "floor": 0},
        {"name": "heroism", "key": "heroism", "max_key": None, "floor": 0},
    ]
    assert (combat["reactions"], combat["default_reaction"]) == (["defense", "defense_heroism", "none"], "defense")
    assert combat["multiple_actions"] is False
    assert combat["initiative"]["take_11_rule"] == "AS-T8"
    assert combat["initiative"]["dice_order"].startswith("AS-C13 3d6 perception per combatant")
    assert set(combat["actions"]) == GM_ACTIONS | {"attack", "heroism_reroll"}  # AS-H2 in combat
    attack = combat["actions"]["attack"]["schema"]
    assert {"also_target_id", "group", "heroism_4d6", "take_11"} <= set(attack["properties"])  # AS-C4, AS-C11…


def test_rb_f3_f4_catalogue_describes_rulebook_encounters(client):
    combat = combat_of(client, "rulebook-d100")
    assert [(p["name"], p["key"], p["max_key"]) for p in combat["pools"]] == [
        ("hp", "hp", "hp_max"),
        ("pe", "pe", "pe_max"),
    ]
    assert (combat["reactions"], combat["default_reaction"]) == (["dodge", "absorb", "none"], "dodge")  # RB-F3
    assert combat["initiative"]["late_rule"] == "RB-F4"  # a critical failure acts from round 2
    assert combat["initiative"]["reorders_each_round"] is False
    assert set(combat["actions"]) == GM_ACTIONS | {"attack"}


def test_wa_c1_c4_catalogue_describes_worlds_awakening_encounters(client):
    combat = combat_of(client, "worlds-awakening")
    assert [(p["name"], p["max_key"]) for p in combat["pools"]] == [("hp", "hp_max"), ("mp", "mp_max")]
    assert (combat["reactions"], combat["default_reaction"]) == (["none"], "none")  # WA-C1: a defense value
    assert combat["initiative"] == {
        "dice_order": "WA-C4 d20 roll-offs of tied initiatives, highest initiative first",
        "reorders_each_round": False,
        "take_11_rule": None,
        "late_rule": "turn",
    }
    attack = combat["actions"]["attack"]
    assert attack["gm_only"] is False
    assert attack["schema"]["properties"]["kind"]["enum"] == ["physical", "magical"]
    assert attack["schema"]["required"] == ["actor_id", "type", "target_id"]


@pytest.mark.parametrize("ruleset", RULESETS)
def test_catalogue_action_bodies_are_the_documented_ones(client, ruleset):
    """Each action's JSON Schema is self-contained (its `$defs` within) and says what openapi.json
    says of that action: the same fields, the same required ones; only the GM's three are gm_only."""
    combat = combat_of(client, ruleset)
    doc = client.get("/openapi.json").json()
    components = doc["components"]["schemas"]
    body = doc["paths"]["/v1/encounters/{encounter_id}/actions"]["post"]["requestBody"]["content"]["application/json"]
    [union] = [s for s in body["schema"]["anyOf"] if s["x-ruleset"] == ruleset]  # `attack` in every ruleset
    mapping = components[union["$ref"].rsplit("/", 1)[1]]["discriminator"]["mapping"]
    assert set(combat["actions"]) == set(mapping)
    for kind, action in combat["actions"].items():
        documented = components[mapping[kind].rsplit("/", 1)[1]]
        schema = action["schema"]
        assert (set(schema["properties"]), schema.get("required")) == (
            set(documented["properties"]),
            documented.get("required"),
        ), kind
        refs = {v for v in _refs(schema)}
        assert all(ref.startswith("#/$defs/") and ref.split("/")[-1] in schema["$defs"] for ref in refs), kind
        assert action["gm_only"] is (kind in GM_ACTIONS)


def _refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_wa_c1_an_attack_built_from_the_catalogue_schema_is_applied(client, table):
    """A client that knows only the catalogue: the attack's required fields and its table dice."""
    attack = combat_of(client, "worlds-awakening")["actions"]["attack"]["schema"]
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(dex=2, weapons=[{"name": "hache", "stat": "FOR", "damage": "1d6"}]))
    foe = t.character("Foe", wa_fighter(dex=1))
    fight = t.encounter([{"character_id": hero}, {"character_id": foe}])
    n = ids(fight)
    t.start(fight["id"], dice=[])
    body = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "dice": [15, 4]}
    assert set(attack["required"]) <= set(body) <= set(attack["properties"])
    done = t.act(fight["id"], body)
    assert [(r["die"], r["value"], r["purpose"]) for r in done["rolls"]] == [("d20", 15, "attack"), ("d6", 4, "damage")]
    assert done["steps"][0]["rule"] == "WA-C1"


def test_the_catalogue_answers_are_typed_per_ruleset_in_openapi(client):
    doc = client.get("/openapi.json").json()
    ok = doc["paths"]["/v1/rulesets/{ruleset}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/RulesetDetail"}
    detail = doc["components"]["schemas"]["RulesetDetail"]
    assert detail["discriminator"]["propertyName"] == "id"
    assert set(detail["discriminator"]["mapping"]) == set(RULESETS)
    asgard = doc["components"]["schemas"]["AsgardRuleset"]
    assert asgard["properties"]["combat"] == {"$ref": "#/components/schemas/CombatDescription"}
    assert {"skills", "take_11", "sheet_schema", "operations"} <= set(asgard["properties"])
    assert asgard["additionalProperties"] is False


# --- issue 27: every character action's body in the catalogue (the page builds its forms from it) ----


def _resolved(node, root: dict, prefix: str, *, properties: bool = False):
    """A schema with every `$ref` (under `prefix`: `#/$defs/`, `#/components/schemas/`) replaced by what
    it names, without the schemas' `title`s (openapi.json prefixes its names with the ruleset's) and
    examples: what a form is built from."""
    if isinstance(node, list):
        return [_resolved(v, root, prefix) for v in node]
    if not isinstance(node, dict):
        return node
    if not properties and isinstance(node.get("$ref"), str):
        assert node["$ref"].startswith(prefix), node["$ref"]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _resolved({**root[node["$ref"][len(prefix) :]], **rest}, root, prefix)
    if properties:  # field names -> their schemas (a field may be named "title")
        return {k: _resolved(v, root, prefix) for k, v in node.items()}
    return {
        k: _resolved(v, root, prefix, properties=k == "properties")
        for k, v in node.items()
        if k not in ("$defs", "examples") and not (k == "title" and isinstance(v, str))
    }


@pytest.mark.parametrize("ruleset", RULESETS)
def test_issue27_every_character_action_has_its_body_schema_in_the_catalogue_as_in_openapi(client, ruleset):
    """`operations.character_actions`: each of `operations.actions` with its body's JSON Schema (self-
    contained, `$defs` within), the same as openapi.json's schema of that body once their references
    are resolved, and whether it is the GM's only."""
    from app.rulesets.registry import get

    operations = client.get(f"/v1/rulesets/{ruleset}").json()["operations"]
    actions = operations["character_actions"]
    assert sorted(actions) == operations["actions"] == sorted(get(ruleset).adapter.actions)
    doc = client.get("/openapi.json").json()
    components = doc["components"]["schemas"]
    body = doc["paths"]["/v1/characters/{character_id}/actions"]["post"]["requestBody"]["content"]["application/json"]
    unions = [s for s in body["schema"]["oneOf"] if s["x-ruleset"] == ruleset]
    if not actions:
        assert unions == [] and ruleset in ("great-cosmos", "rulebook-d100")
        return
    [union] = unions
    mapping = components[union["$ref"].rsplit("/", 1)[1]]["discriminator"]["mapping"]
    assert set(actions) == set(mapping)
    for kind, action in actions.items():
        schema = action["schema"]
        assert all(ref.startswith("#/$defs/") and ref.split("/")[-1] in schema["$defs"] for ref in _refs(schema))
        documented = components[mapping[kind].rsplit("/", 1)[1]]
        assert _resolved(schema, schema.get("$defs", {}), "#/$defs/") == _resolved(
            documented, components, "#/components/schemas/"
        ), kind
        assert action["gm_only"] is get(ruleset).adapter.actions[kind].gm_only


def test_issue27_as_c6_as_h4_first_aid_and_cancel_damage_bodies_in_the_catalogue(client):
    actions = client.get("/v1/rulesets/asgard").json()["operations"]["character_actions"]
    first_aid, cancel = actions["first_aid"], actions["cancel_damage"]
    assert (first_aid["gm_only"], cancel["gm_only"]) == (False, False)
    assert {"healer_soins", "healer_id", "target", "modifier", "dice", "seed"} <= set(first_aid["schema"]["properties"])
    assert cancel["schema"]["required"] == ["type", "damage"]
    assert {"already_applied", "damage_id"} <= set(cancel["schema"]["properties"])
    assert actions["damage"]["gm_only"] is True


# --- the level-up body: the level of each field, said as data ----------------------------------

# GC-L1 (level 2), GC-L2 (3), GC-L3 (4), GC-L4 (5), GC-L5 (6 and above): the rulebook's levels
GC_LEVELS = {
    "mode": {"min": 2, "max": 2},
    "stats": {"min": 2, "max": 2},
    "stat": {"min": 3, "max": 3},
    "pool": {"min": 4, "max": 4},
    "transfers": {"min": 5, "max": 5},
    "changes": {"min": 6},
}
GC_CHOICE = {
    "mode": "one_d20",
    "stats": ("force",),
    "stat": "force",
    "pool": "hp",
    "transfers": (("force", "agilite", 1),),
    "changes": (("force", 1),),
}


def test_gc_l1_l5_each_level_up_field_says_its_levels_in_x_level_as_the_rules_apply_them(client):
    """`x-level` `{min, max?}` on each field of one level only, in the catalogue and in openapi.json;
    none on the fields of every level-up; and the rules refuse a field exactly outside its levels."""
    from app.rules.errors import RuleError
    from app.rulesets.great_cosmos.rules.levels import Choices, check_choices
    from tests.rulesets.great_cosmos.test_rules_levels import progress

    schema = client.get("/v1/rulesets/great-cosmos").json()["operations"]["schemas"]["level_up"]
    levels = {name: p["x-level"] for name, p in schema["properties"].items() if "x-level" in p}
    assert levels == GC_LEVELS
    doc = client.get("/openapi.json").json()
    body = doc["paths"]["/v1/characters/{character_id}/level-ups"]["post"]["requestBody"]["content"]
    documented = [s for s in body["application/json"]["schema"].get("oneOf", [body["application/json"]["schema"]])]
    [ref] = [s["$ref"] for s in documented if "LevelUp" in s.get("$ref", "") and "GreatCosmos" in s["$ref"]]
    component = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert {n: p["x-level"] for n, p in component["properties"].items() if "x-level" in p} == GC_LEVELS
    for name, at in GC_LEVELS.items():
        for level in range(2, 9):
            try:
                check_choices(level, Choices(chance_bonus_pool="hp", **{name: GC_CHOICE[name]}), progress(level - 1))
                refused = ""
            except RuleError as exc:
                refused = str(exc)
            applies = at["min"] <= level <= at.get("max", level)
            assert ("does not apply" not in refused) is applies, (name, level, refused)
