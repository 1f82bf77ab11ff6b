"""What the per-ruleset fight tests (tests/rulesets/*/test_combat.py) share: the `table`
fixture (tests/api/test_encounters.py), setting a fight up and starting it with table
dice, an attack with table dice, a step of an action by its rule id, the combatants'
pools by name, and a state normalised for an exact comparison (ids → names, no times)."""

from __future__ import annotations

from typing import Any

from tests.api.test_encounters import Table, ids, table

__all__ = ["Table", "attack", "ids", "names_of", "new_round", "normalised", "pools", "setup", "step", "table"]


def setup(t: Table, *people: tuple[str, dict, str], start: list[int] | None = None) -> tuple[str, dict[str, str]]:
    """An encounter of these (name, sheet, kind), a PC being Alice's, started with these table dice
    (not started when `start` is None): (its id, combatant names → ids)."""
    s = t.encounter(
        [
            {"character_id": t.character(name, sheet, kind=kind, player=t.alice if kind == "pc" else None)}
            for name, sheet, kind in people
        ]
    )
    if start is not None:
        t.start(s["id"], dice=start)
    return s["id"], ids(s)


def attack(t: Table, eid: str, actor: str, target: str, dice: list[int], status: int = 201, **body: Any) -> dict:
    """The GM's attack of `actor` on `target` with these table dice (the extras of `body` added)."""
    return t.act(eid, {"type": "attack", "actor_id": actor, "target_id": target, "dice": dice, **body}, status=status)


def new_round(t: Table, eid: str) -> None:
    """`next-turn` until the round wraps (the GM's): one action per turn (README "Actions per turn"),
    so a combatant's next action waits for its next turn."""
    while not any(c["field"] == "round" for c in t.next_turn(eid)["changes"]):
        pass


def step(action: dict, rule: str, what: str | None = None) -> dict:
    """The action's first step of this rule id (and this `what`, when given)."""
    return next(s for s in action["steps"] if s["rule"] == rule and (what is None or s["what"] == what))


def pools(t: Table, eid: str, pool: str) -> dict[str, int]:
    """Combatant name → the value of its pool `pool` (`hp`, `pe`, `vitality`…), as the GM reads it."""
    return {c["name"]: c["resources"][pool]["value"] for c in t.state(eid)["combatants"]}


def normalised(value: Any, names: dict[str, str]) -> Any:
    """The state with ids replaced by names and timestamps blanked, for an exact comparison."""
    if isinstance(value, dict):
        return {k: ("<ts>" if k.endswith("_at") else normalised(v, names)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v, names) for v in value]
    if isinstance(value, str) and value in names:
        return names[value]
    return value


def names_of(t: Table, state: dict) -> dict[str, str]:
    """id → name of the encounter, its campaign, Alice, each combatant and its character."""
    out = {state["id"]: "<encounter>", state["campaign_id"]: "<campaign>", t.alice.id: "<alice>"}
    for c in state["combatants"]:
        out[c["id"]], out[c["character_id"]] = c["name"], c["name"] + ":character"
    return out
