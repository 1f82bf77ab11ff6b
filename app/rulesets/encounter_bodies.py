"""The setup and turn bodies the encounter routes take, every ruleset's in one: the shared fields
(app.models.encounters, `…Base`) and each ruleset's own (its `EncounterRules.CombatantCreate`,
`CombatantUpdate`, `StartRequest`, `NextTurnRequest`, in its schemas.py: great-cosmos' GC-O3
`actions` and GC-O2 `chosen_orders`, asgard's AS-T8 `take_11`), each documented there.

A route validates a body with these (openapi.json lists each ruleset's field with its rule); the
use case then reads it as its fight's ruleset's model (`for_ruleset`): a field of another ruleset
sent with anything but its default is a 422 naming whose it is, one sent at its default (an
`"actions": 1` a client sends to every ruleset) is left out, as it always meant nothing there."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, Field, create_model

from app.models.encounters import (
    MAX_COMBATANTS,
    CombatantAddBase,
    CombatantCreateBase,
    CombatantUpdateBase,
    EncounterCreateBase,
    NextTurnRequestBase,
    StartRequestBase,
)
from app.models.validation import InvalidBody
from app.rulesets.registry import RULES

M = TypeVar("M", bound=BaseModel)

# a composed body -> each field a ruleset adds -> the rulesets whose model has it
_OWNERS: dict[type[BaseModel], dict[str, list[str]]] = {}


def _composed(name: str, base: type[BaseModel], own: Iterable[tuple[str, type[BaseModel]]]) -> type[BaseModel]:
    """`base` with every ruleset's own fields after its own: a subclass of each ruleset's model."""
    models: dict[type[BaseModel], list[str]] = {}
    for ruleset, model in own:
        if model is not base:
            models.setdefault(model, []).append(ruleset)
    bases = tuple(models) or (base,)
    composed = create_model(name, __base__=bases, __module__=__name__, __doc__=base.__doc__)
    _OWNERS[composed] = {
        field: [r for model, rulesets in models.items() if field in model.model_fields for r in rulesets]
        for field in composed.model_fields.keys() - base.model_fields.keys()
    }
    return composed


def for_ruleset(model: type[M], data: BaseModel, ruleset: str, where: str = "") -> M:
    """`data` (a composed body, validated) as `ruleset`'s `model`: a 422 for a field of another
    ruleset's sent with a value other than its default (`where`: the body path of `data`)."""
    owners = _OWNERS.get(type(data), {})
    for name in sorted(data.model_fields_set & owners.keys() - model.model_fields.keys()):
        if getattr(data, name) != type(data).model_fields[name].get_default(call_default_factory=True):
            raise InvalidBody(
                f"{ruleset} has no `{name}`: it is a field of {', '.join(owners[name])}",
                field=f"{where}.{name}" if where else name,
                code="unsupported_operation",
            )
    kept = data.model_fields_set & model.model_fields.keys()
    # validated already, by a subclass of `model` (the same fields): built, not validated again
    return model.model_construct(_fields_set=kept, **{name: getattr(data, name) for name in model.model_fields})


_RULES = list(RULES.items())

if TYPE_CHECKING:  # each as its shared model: what a use case may read before `for_ruleset`
    CombatantCreate = CombatantCreateBase
    CombatantUpdate = CombatantUpdateBase
    StartRequest = StartRequestBase
    NextTurnRequest = NextTurnRequestBase
    CombatantAdd = CombatantAddBase
    EncounterCreate = EncounterCreateBase
else:
    CombatantCreate = _composed("CombatantCreate", CombatantCreateBase, ((r, c.CombatantCreate) for r, c in _RULES))
    CombatantUpdate = _composed("CombatantUpdate", CombatantUpdateBase, ((r, c.CombatantUpdate) for r, c in _RULES))
    StartRequest = _composed("StartRequest", StartRequestBase, ((r, c.StartRequest) for r, c in _RULES))
    NextTurnRequest = _composed("NextTurnRequest", NextTurnRequestBase, ((r, c.NextTurnRequest) for r, c in _RULES))
    CombatantAdd = create_model(
        "CombatantAdd",
        __base__=(CombatantCreate, CombatantAddBase),
        __module__=__name__,
        __doc__=CombatantAddBase.__doc__,
    )
    _OWNERS[CombatantAdd] = _OWNERS[CombatantCreate]
    EncounterCreate = create_model(
        "EncounterCreate",
        __base__=EncounterCreateBase,
        __module__=__name__,
        combatants=(list[CombatantCreate], Field(default_factory=list, max_length=MAX_COMBATANTS)),
    )

__all__ = [
    "CombatantAdd",
    "CombatantCreate",
    "CombatantUpdate",
    "EncounterCreate",
    "NextTurnRequest",
    "StartRequest",
    "for_ruleset",
]
