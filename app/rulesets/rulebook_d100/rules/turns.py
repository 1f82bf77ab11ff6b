"""Rulebook D100's turn rules in a fight (rulebook-d100.md RB-F3, RB-F4, and the README's
"Actions per turn"): which rules grant an action beyond the turn's one, and a critical
dodge's free attack. Pure: stdlib and app.kit only.

A turn holds one action (README "Actions per turn"); RB-F4's critical initiative is an extra
action before round 1 (its own slot of the order, so its own turn) and RB-F3's free attack is
the dodger's, taken at once. The free attack is kept in the dodger's bookkeeping of the current
turn (`turn[FREE_ATTACK]`), which a new turn starts afresh: it lapses when the turn changes."""

from __future__ import annotations

from typing import Any

from app.kit.errors import Conflict

FREE_ATTACK = "free_attack"

# the rules granting an action beyond the turn's one, named when a second action is refused
MORE_ACTIONS = (
    "RB-F4 a critical initiative's extra action before round 1",
    "RB-F3 a critical dodge's free attack (`free_attack: true`)",
)


def grant_free_attack(turn: dict[str, Any], attacker_id: str) -> None:
    """RB-F3 (Decision): the dodger's free attack, for the current turn only (once): noted in
    its bookkeeping of this turn, with the attack it dodged."""
    turn[FREE_ATTACK] = attacker_id


def has_free_attack(turn: dict[str, Any]) -> bool:
    return turn.get(FREE_ATTACK) is not None


def take_free_attack(turn: dict[str, Any], combatant_id: str) -> str:
    """RB-F3 (Decision): an attack with `free_attack: true` spends the free attack a critical
    dodge earned in this turn (once; it lapses when the turn changes) and returns whose attack
    was dodged; without one, a 409 (nothing is spent)."""
    dodged = turn.get(FREE_ATTACK)
    if dodged is None:
        raise Conflict(
            f"combatant {combatant_id} has no free attack now: only a critical dodge grants one, "
            "taken at once, before the turn changes (RB-F3)",
            field="free_attack",
            extra={"rule": "RB-F3"},
            code="not_allowed_now",
        )
    del turn[FREE_ATTACK]
    return str(dodged)
