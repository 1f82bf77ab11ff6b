"""The rulesets catalogue: what a client needs to build a character, a test and a fight form.

`GET /v1/rulesets/{id}` is the ruleset's own description (`RulesetAdapter.describe`) plus
what the catalogue reads from its models: its campaign options, the JSON Schemas of its
sheet and test body, the operations it offers, and `combat`, what an encounter of it offers
(read from its `EncounterRules`: pools, reactions, initiative, each action type's body).
Each ruleset's answer is its own typed model (`<Ruleset>Ruleset`), one `RulesetDetail`
schema in openapi.json told apart by `id`."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from app.kit.models import union
from app.models.encounters import GM_ACTIONS
from app.rulesets.contract.adapter import Capability, RulesetAdapter
from app.rulesets.contract.combat import EncounterRules
from app.rulesets.contract.ruleset import Ruleset
from app.rulesets.registry import REGISTRY, get


class Described(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RulesetSummary(Described):
    id: str = Field(examples=list(REGISTRY)[:1])  # the first registered ruleset
    title: str


class RulesetPage(Described):
    items: list[RulesetSummary]
    next_cursor: str | None = Field(None, description="Always null: every ruleset is on this page.")


class OptionsSchema(Described):
    defaults: dict[str, Any] = Field(description="Every option's default value.")
    json_schema: dict[str, Any] = Field(alias="schema", description="Their JSON Schema.")


class CharacterActionType(Described):
    """One action `type` of `POST /v1/characters/{id}/actions` in this ruleset."""

    gm_only: bool = Field(description="The GM's only; the others: the character's owner or the GM.")
    json_schema: dict[str, Any] = Field(
        alias="schema", description="The JSON Schema of its body (a client builds its form from it, `$defs` within)."
    )


class RulesetOperations(Described):
    """What the ruleset offers besides tests and odds."""

    level_up: bool
    opposed: bool
    group: bool
    actions: list[str] = Field(description="The `type`s of its character actions (`POST /v1/characters/{id}/actions`).")
    schemas: dict[str, dict[str, Any]] = Field(
        description="Each of `level_up`, `reroll`, `opposed`, `group` it offers -> the JSON Schema of its body "
        "(a client builds its form from it, `$defs` within)."
    )
    character_actions: dict[str, CharacterActionType] = Field(
        description="Each of `actions` -> who may perform it and the JSON Schema of its body (AS-C6 "
        "first aid, AS-H4 cancel damage…)."
    )


class CombatPool(Described):
    """A resource pool: an encounter shows it as `{value, max}` and the GM's heal/damage change it."""

    name: str = Field(examples=["hp"])
    key: str = Field(description="The sheet key of its value (missing from a sheet: at its maximum).")
    max_key: str | None = Field(description="The sheet key of its maximum (null: none).")
    floor: int = Field(description="The lowest value the sheet allows.")


class CombatInitiative(Described):
    dice_order: str = Field(description="The order the table `dice` of `start` are consumed in.")
    reorders_each_round: bool = Field(description="A new round rolls (or reads) the order again (GC-O1).")
    take_11_rule: str | None = Field(description="The rule letting the GM's NPCs take 11 on it (AS-T8), if any.")
    late_rule: str = Field(description="The rule that keeps an entry of the order from acting yet.")


class CombatActionType(Described):
    """One action `type` of `POST /v1/encounters/{id}/actions` in this ruleset."""

    gm_only: bool = Field(
        description="The GM's only (heal, damage, condition); the others: the actor's owner or the GM."
    )
    json_schema: dict[str, Any] = Field(alias="schema", description="The JSON Schema of its body (its `$defs` within).")


class CombatGrid(Described):
    """How a distance between two cells `{x, y}` is counted in this ruleset's encounters."""

    metric: Literal["manhattan"] = Field(description="`manhattan`: |dx| + |dy|, no diagonals.")
    rule: str | None = Field(description="The rule saying so (GC-D1), or null: the ruleset has no grid rule.")
    description: str


class CombatDescription(Described):
    """What an encounter of this ruleset offers (its `EncounterRules`)."""

    pools: list[CombatPool] = Field(description="Its resource pools, the first one deciding who is down.")
    reactions: list[str] = Field(description="What a target may do when attacked (`reaction`).")
    default_reaction: str = Field(description="A combatant's reaction when none is set.")
    multiple_actions: bool = Field(description="Combatants may have several actions a round (`actions`, GC-O3).")
    initiative: CombatInitiative
    grid: CombatGrid = Field(description="How distance is counted on the grid (NPC copies are placed by it).")
    options: OptionsSchema = Field(description="The encounter's options.")
    actions: dict[str, CombatActionType] = Field(description="Each action type -> its body.")


class CatalogueFields(Described):
    """What the catalogue adds to a ruleset's own description."""

    options: OptionsSchema = Field(description="The campaign's options.")
    sheet_schema: dict[str, Any] = Field(description="The JSON Schema of a character's sheet.")
    test_request_schema: dict[str, Any] = Field(description="The JSON Schema of a test's body.")
    operations: RulesetOperations
    combat: CombatDescription


def _prefix(ruleset: str) -> str:
    return "".join(part.capitalize() for part in ruleset.split("-"))


def _model(ruleset: Ruleset) -> type[BaseModel]:
    """`<Ruleset>Ruleset`: the ruleset's description model with the catalogue's fields, its `id` a literal."""
    described = type(ruleset.adapter.describe())
    its_id: Any = Literal[ruleset.id]  # a literal of a run-time value
    return create_model(
        f"{_prefix(ruleset.id)}Ruleset",
        __base__=(CatalogueFields, described),
        __doc__=f"`GET /v1/rulesets/{ruleset.id}`: {ruleset.adapter.title}.",
        id=(its_id, ...),
    )


DETAILS: dict[str, type[BaseModel]] = {r.id: _model(r) for r in REGISTRY.values()}
RulesetDetail = union("RulesetDetail", list(DETAILS.values()), "id")


def combat(rules: EncounterRules) -> CombatDescription:
    """The encounter side of the catalogue, as `rules` declares it."""
    models = rules.action_models()
    return CombatDescription(
        pools=[CombatPool(name=p.name, key=p.key, max_key=p.max_key, floor=p.floor) for p in rules.pools],
        reactions=list(rules.reactions),
        default_reaction=rules.default_reaction,
        multiple_actions=rules.multiple_actions,
        initiative=CombatInitiative(
            dice_order=rules.dice_order,
            reorders_each_round=rules.reorders_each_round,
            take_11_rule=rules.take_11_rule,
            late_rule=rules.late_rule,
        ),
        grid=CombatGrid(metric=rules.grid.metric, rule=rules.grid.rule, description=rules.grid.description),
        options=OptionsSchema(
            defaults=rules.Options().model_dump(mode="json"), json_schema=rules.Options.model_json_schema()
        ),
        actions={
            kind: CombatActionType(gm_only=kind in GM_ACTIONS, json_schema=model.model_json_schema())
            for kind, model in models.items()
        },
    )


def summary(adapter: RulesetAdapter) -> RulesetSummary:
    return RulesetSummary(id=adapter.id, title=adapter.title)


def _tagged(model: type[BaseModel]) -> dict[str, Any]:
    """A character action's body schema, its `type` required (the service requires the tag, a default
    or not, as openapi.json's union member says)."""
    schema = model.model_json_schema()
    if "type" in schema.get("properties", {}) and "type" not in schema.get("required", []):
        schema["required"] = [*schema.get("required", []), "type"]
    return schema


BODIES = (Capability.LEVEL_UP, Capability.REROLL, Capability.OPPOSED, Capability.GROUP)  # one body each


@cache  # made once per ruleset (an unknown one raises: nothing kept)
def describe(ruleset: str) -> dict[str, Any]:
    """The ruleset's catalogue entry, checked by its model (UnknownRuleset, 404, when it is not
    registered); as JSON, the same every time (do not change it)."""
    found = get(ruleset)
    adapter = found.adapter
    return (
        DETAILS[found.id]
        .model_validate(
            {
                **adapter.describe().model_dump(),
                "options": OptionsSchema(
                    defaults=adapter.Options().model_dump(mode="json"), json_schema=adapter.Options.model_json_schema()
                ),
                "sheet_schema": adapter.Sheet.model_json_schema(),
                "test_request_schema": adapter.TestRequest.model_json_schema(),
                "operations": RulesetOperations(
                    level_up=adapter.supports(Capability.LEVEL_UP),
                    opposed=adapter.supports(Capability.OPPOSED),
                    group=adapter.supports(Capability.GROUP),
                    actions=sorted(adapter.actions),
                    schemas={
                        c.value: adapter.request_model(c).model_json_schema() for c in BODIES if adapter.supports(c)
                    },
                    character_actions={
                        kind: CharacterActionType(gm_only=action.gm_only, json_schema=_tagged(action.model))
                        for kind, action in sorted(adapter.actions.items())
                    },
                ),
                "combat": combat(found.combat),
            }
        )
        .model_dump(mode="json", by_alias=True)
    )


def list_rulesets() -> RulesetPage:
    return RulesetPage(items=[summary(r.adapter) for r in REGISTRY.values()])
