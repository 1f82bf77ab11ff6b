"""Rulebook D100's turn rules in a fight (rulebook-d100.md RB-F3, RB-F4, and the README's
"Actions per turn"): which rules grant an action beyond the turn's one, and a critical
dodge's free attack. Pure: stdlib and app.kit only.

A turn holds one action (README "Actions per turn"); RB-F4's critical initiative is an extra
action before round 1 (its own slot of the order, so its own turn) and RB-F3's free attack is
the dodger's, taken at once. The free attack is kept in the dodger's bookkeeping of the current
turn (`turn[FREE_ATTACK]`), which a new turn starts afresh: it lapses when the turn changes."""

from __future__ import annotations

# the rules granting an action beyond the turn's one, named when a second action is refused
MORE_ACTIONS = (
    "RB-F4 a critical initiative's extra action before round 1",
    "RB-F3 a critical dodge's free attack (`free_attack: true`)",
)
