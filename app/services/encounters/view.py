"""What each caller may see of an encounter (API.md, "Visibility"), in one place.

A player never sees a hidden combatant it does not own (nor its dice, steps,
changes or actions) until it is revealed; the resources of combatants it does
not own follow `hp_visibility` (`exact`, `status`, `hidden`); hidden actions
are the GM's. Every read, list and event goes through these functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.models import seen
from app.models.fight_rows import Change, CombatantRow, Step
from app.models.results.common import wire_time
from app.rulesets.contract.combat import EncounterRules
from app.rulesets.registry import get_adapter, rules_for
from app.services.encounters.store import Fight
from app.services.provenance import entry_for_viewer


@dataclass(frozen=True)
class Viewer:
    is_gm: bool
    player_id: str | None = None


NOBODY = Viewer(is_gm=False)  # a player owning nothing: what every player may see


@dataclass(frozen=True)
class Scene:
    """What visibility depends on: which combatants are hidden, whose they are, hp_visibility."""

    hidden: frozenset[str]  # combatant ids currently hidden
    owner: dict[str, str | None]  # combatant id -> its character's player
    hp_visibility: str
    naming: tuple[str, ...] = ()  # the counters naming a combatant (the ruleset's `naming_counters`)
    naming_steps: tuple[str, ...] = ()  # the step fields naming combatants (its `naming_step_fields`)

    @classmethod
    def of(cls, fight: Fight, owners: dict[str, str | None], combatants: list[CombatantRow] | None = None) -> Scene:
        """The scene of these combatants (default: all of the fight's)."""
        combatants = fight.combatants if combatants is None else combatants
        return cls(
            hidden=frozenset(c["id"] for c in combatants if c["hidden"]),
            owner={c["id"]: owners.get(c["character_id"]) for c in combatants},
            hp_visibility=fight.options.hp_visibility,
            naming=fight.rules.naming_counters,
            naming_steps=fight.rules.naming_step_fields,
        )

    def owns(self, viewer: Viewer, combatant_id: str | None) -> bool:
        return viewer.player_id is not None and self.owner.get(combatant_id or "") == viewer.player_id

    def sees(self, viewer: Viewer, combatant_id: str | None) -> bool:
        """GM: everything; a player: combatants not hidden, or its own. Unknown ids (removed) are not shown."""
        if viewer.is_gm or combatant_id is None:
            return True
        if combatant_id not in self.owner:
            return False
        return combatant_id not in self.hidden or self.owns(viewer, combatant_id)

    def exact(self, viewer: Viewer, combatant_id: str | None) -> bool:
        return viewer.is_gm or self.hp_visibility == "exact" or self.owns(viewer, combatant_id)


def status(value: int, maximum: int | None) -> str:
    """API.md: full → unhurt, above half → wounded, above 0 → bloodied, 0 → down. A pool full
    at 0 (a maximum of 0: a character without magic) is unhurt, not down."""
    if maximum is not None and value >= maximum:
        return "unhurt"
    if value <= 0:
        return "down"
    if maximum is None:
        return "unhurt"
    return "wounded" if value * 2 > maximum else "bloodied"


def resources(scene: Scene, viewer: Viewer, combatant_id: str, exact: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each pool `{value, max}` (`{value}` for a pool without a maximum: `max` is never null),
    `{status}`, or none, as `hp_visibility` lets this viewer see it."""
    if scene.exact(viewer, combatant_id):
        return {name: {k: v for k, v in r.items() if v is not None} for name, r in exact.items()}
    if scene.hp_visibility == "hidden":
        return {}
    return {name: {"status": status(r["value"], r["max"])} for name, r in exact.items()}


def quiet_change(ruleset: str, changed: list[tuple[Any, Any]]) -> Callable[[str], bool]:
    """Whether these characters' changes (before, after) leave what the other players see of them in
    a fight of a given `hp_visibility` as it was (a `status` fight's words, a `hidden` fight's none):
    then those players are not told (`shown.move`)."""
    rules, adapter = rules_for(ruleset), get_adapter(ruleset)

    def face(character: Any, hp_visibility: str) -> tuple[Any, ...]:
        sheet = adapter.parse_sheet(character.sheet)
        shown = (character.name, character.kind, character.player_id, rules.is_down(sheet), rules.posture(sheet))
        if hp_visibility == "hidden":
            return shown
        pools = rules.resources(sheet)
        if hp_visibility == "status":
            return (*shown, sorted((name, status(r["value"], r["max"])) for name, r in pools.items()))
        return (*shown, sorted((name, r["value"], r["max"]) for name, r in pools.items()))

    return lambda hp_visibility: all(face(a, hp_visibility) == face(b, hp_visibility) for a, b in changed)


# --- the state ---------------------------------------------------------------------------


def combatant_state(fight: Fight, c: CombatantRow, scene: Scene, viewer: Viewer) -> dict[str, Any]:
    rules = fight.rules
    ch = fight.character_of(c)
    sheet = fight.sheet_of(ch) if ch else None
    out = {
        "id": c["id"],
        "character_id": c["character_id"],
        "name": ch.name if ch else None,
        "kind": ch.kind if ch else None,
        "player_id": ch.player_id if ch else None,
        "side": c["side"],
        "hidden": c["hidden"],
        "position": c["position"],
        "initiative": c["initiative"],
        "actions": c["actions"],
        "down": rules.is_down(sheet) if sheet is not None else True,
        "reaction": c["reaction"] or rules.default_reaction,
        "resources": resources(scene, viewer, c["id"], rules.resources(sheet)) if sheet is not None else {},
        "posture": rules.posture(sheet) if sheet is not None else None,
        "conditions": c["conditions"],
        "counters": counters_view({k: v for k, v in (c["counters"] or {}).items() if k != "turn"}, scene, viewer),
    }
    if viewer.is_gm:
        out["initiative_override"] = c["initiative_override"]
    return out


def counters_view(counters: dict[str, Any] | None, scene: Scene, viewer: Viewer) -> dict[str, Any] | None:
    """The counters without those naming a combatant the viewer does not see."""
    if viewer.is_gm or not counters:
        return counters
    return {k: v for k, v in counters.items() if k not in scene.naming or scene.sees(viewer, v)}


def order_view(order: list[dict[str, Any]], scene: Scene, viewer: Viewer) -> list[dict[str, Any]]:
    if viewer.is_gm:
        return order
    return [
        {**e, "parallel_with": [p for p in e["parallel_with"] if scene.sees(viewer, p)]}
        for e in order
        if scene.sees(viewer, e["combatant_id"])
    ]


def current_view(current: dict[str, Any] | None, scene: Scene, viewer: Viewer) -> dict[str, Any] | None:
    if current is None or viewer.is_gm:
        return current
    shown = [cid for cid in current.get("combatant_ids", []) if scene.sees(viewer, cid)]
    return {"slot": current["slot"], "combatant_id": shown[0] if shown else None, "combatant_ids": shown}


def version_for(encounter: Any, viewer: Viewer) -> int:
    """The encounter's `version` as this viewer reads it: the GM's counts every change, a player's
    those it was told of (`seen`)."""
    row = encounter if isinstance(encounter, dict) else encounter._mapping
    if viewer.is_gm:
        return int(row["version"])
    return seen.of(row["player_versions"], viewer.player_id, int(row["version"]))


def state(fight: Fight, scene: Scene, viewer: Viewer) -> dict[str, Any]:
    """The fight as this viewer sees it. A player's `version` counts what it was told of, and its
    `updated_at` is the fight's `created_at`: a change it may not see moves neither."""
    enc = fight.encounter
    return {
        "id": enc["id"],
        "campaign_id": enc["campaign_id"],
        "name": enc["name"],
        "status": enc["status"],
        "round": enc["round"],
        "version": version_for(enc, viewer),
        "options": enc["options"],
        "combatants": [
            combatant_state(fight, c, scene, viewer) for c in fight.combatants if scene.sees(viewer, c["id"])
        ],
        "order": order_view(enc["turn_order"], scene, viewer),
        "current": current_view(enc["current_turn"], scene, viewer),
        "metadata": enc["client_metadata"],
        "created_at": wire_time(enc["created_at"]),
        "updated_at": wire_time(enc["updated_at" if viewer.is_gm else "created_at"]),
    }


def summary(row: Any, viewer: Viewer) -> dict[str, Any]:
    """A fight of the list, its version and time as this viewer reads them (`state`)."""
    return {
        "id": row.id,
        "campaign_id": row.campaign_id,
        "name": row.name,
        "status": row.status,
        "round": row.round,
        "version": version_for(row, viewer),
        "metadata": row.client_metadata,
        "created_at": wire_time(row.created_at),
        "updated_at": wire_time(row.updated_at if viewer.is_gm else row.created_at),
    }


# --- actions -------------------------------------------------------------------------------


def action(
    body: dict[str, Any], scene: Scene, viewer: Viewer, versions: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The action as this viewer may see it, or None when it may not see it at all. `versions`: the
    players' versions it made (`models.seen`): a player's `encounter_version` is its own."""
    if viewer.is_gm:
        return body
    # hidden by the GM: unseen until published (`dice_epochs.publish`: the roll log shows it then too)
    if (body.get("hidden") and not body.get("published_at")) or not (
        scene.sees(viewer, body.get("actor_id")) and scene.sees(viewer, body.get("target_id"))
    ):
        return None
    return {
        **entry_for_viewer(body, is_gm=False),  # a seed is the GM's (API.md)
        "encounter_version": seen.of(versions, viewer.player_id, body["encounter_version"]),
        "rolls": [r for r in body["rolls"] if scene.sees(viewer, r.get("by"))],
        "steps": [_step(s, scene, viewer) for s in body["steps"] if scene.sees(viewer, s.get("combatant_id"))],
        "changes": [v for v in (_change(c, scene, viewer) for c in body["changes"]) if v is not None],
    }


def _step(step: Step, scene: Scene, viewer: Viewer) -> Mapping[str, Any]:
    shown: Mapping[str, Any] = step
    if not viewer.is_gm and any(k in step for k in scene.naming_steps):  # AS-C11 members, GC-P6 a provoker…
        shown = {**step, **{k: _seen_ids(step.get(k), scene, viewer) for k in scene.naming_steps if k in step}}
    if "resource" in shown and not scene.exact(viewer, shown.get("combatant_id")):
        return {k: v for k, v in shown.items() if k not in ("amount", "before", "after", "excess")}
    return shown


def _seen_ids(value: Any, scene: Scene, viewer: Viewer) -> Any:
    """A step field naming combatants as this viewer may read it: the ids it sees (one it does not
    see: null)."""
    if isinstance(value, list):
        return [v for v in value if scene.sees(viewer, v)]
    return value if value is None or scene.sees(viewer, value) else None


def _change(change: Change, scene: Scene, viewer: Viewer) -> Mapping[str, Any] | None:
    cid = change.get("combatant_id")
    if not scene.sees(viewer, cid):
        return None
    if change.get("resource") and not scene.exact(viewer, cid):
        if scene.hp_visibility == "hidden":
            return None
        return {
            **change,
            "before": {"status": status(change["before"], change.get("max"))},
            "after": {"status": status(change["after"], change.get("max"))},
            "max": None,
        }
    if change["field"] == "order":
        return {
            **change,
            "before": order_view(change["before"] or [], scene, viewer),
            "after": order_view(change["after"] or [], scene, viewer),
        }
    if change["field"] == "current":
        return {
            **change,
            "before": current_view(change["before"], scene, viewer),
            "after": current_view(change["after"], scene, viewer),
        }
    if change["field"] == "counters":
        return {
            **change,
            "before": counters_view(change["before"], scene, viewer),
            "after": counters_view(change["after"], scene, viewer),
        }
    return change


def referenced(body: dict[str, Any], rules: EncounterRules) -> set[str] | None:
    """The combatants whose visibility `action` consults for this body (None: every one, when it
    changed the turn order, which a player sees filtered whole); the ruleset's counters and step
    fields naming combatants included (`naming_counters`, `naming_step_fields`)."""
    naming = rules.naming_counters
    ids = {body.get("actor_id"), body.get("target_id")}
    ids.update(r.get("by") for r in body["rolls"])
    for s in body["steps"]:
        ids.add(s.get("combatant_id"))
        for key in rules.naming_step_fields:
            value = s.get(key)
            ids.update(value if isinstance(value, list) else [value])
    for change in body["changes"]:
        if change["field"] == "order":
            return None
        ids.add(change.get("combatant_id"))
        if change["field"] == "current":
            for value in (change["before"], change["after"]):
                ids.update((value or {}).get("combatant_ids", []))
        if change["field"] == "counters":
            for value in (change["before"], change["after"]):
                ids.update(v for k, v in (value or {}).items() if k in naming)
    return {i for i in ids if i is not None}


def players_see_all(body: dict[str, Any], scene: Scene) -> bool:
    """Whether every player may see the whole action (the generic roll log then shows it to them,
    as it shows every entry: without its seed)."""
    return action(body, scene, NOBODY) == entry_for_viewer(body, is_gm=False)
