"""The dice of one encounter action, each tagged with whose it is (`by`, a combatant id).

The pure rules take one `DiceSource`; `CombatDice.of(combatant_id)` hands them a
view of it whose every die is recorded as that combatant's. Rules that name the
entity in the purpose (`tie:<id>`, GC-O2) are read back the same way."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from app.rules.dice import DiceSource, dice_source
from app.rules.errors import DiceNeeded

# the rules' own purposes, as an action shows them
PURPOSES = {"tie": "tiebreak", "initiative_roll_off": "tiebreak", "initiative tiebreak": "tiebreak",
            "initiative roll-off": "tiebreak"}


class _Combatant(DiceSource):
    """A view of the action's dice: what it rolls is recorded as one combatant's."""

    def __init__(self, owner: CombatDice, who: str):
        self.rolls = owner.source.rolls  # shared: mark()/since() see the whole action
        self.max_dice = owner.source.max_dice
        self._owner, self._who = owner, who

    def roll(self, faces: int, purpose: str) -> int:
        try:
            value = self._owner.source.roll(faces, purpose)
        except DiceNeeded as exc:
            exc.extra["needed"]["by"] = self._who
            raise
        self._owner.by[len(self.rolls) - 1] = self._who
        return value

    def roll_many(self, count: int, faces: int, purpose: str) -> list[int]:
        return [self.roll(faces, purpose) for _ in range(count)]

    def roll_sum(self, count: int, faces: int, purpose: str) -> int:
        return sum(self.roll_many(count, faces, purpose))


class CombatDice:
    def __init__(self, *, seed: int | None = None, dice: list[int] | None = None):
        self.source = dice_source(seed=seed, dice=dice)
        self.by: dict[int, str] = {}

    def of(self, combatant_id: str) -> DiceSource:
        return _Combatant(self, combatant_id)

    def mark(self) -> int:
        return self.source.mark()

    def tag(self, start: int, owners: Iterable[str]) -> None:
        """The dice from `start` on, in order, belong to `owners` (rules that do not say whose)."""
        for index, who in enumerate(owners, start=start):
            self.by[index] = who

    def finish(self) -> None:
        self.source.finish()

    @contextmanager
    def explained(self) -> Iterator[None]:
        """A missing table die (422) names its purpose as `rolls` does, and whose it is."""
        try:
            yield
        except DiceNeeded as exc:
            needed = exc.extra["needed"]
            purpose, _, named = needed["purpose"].partition(":")
            needed["purpose"] = PURPOSES.get(purpose, purpose)
            needed.setdefault("by", named or None)
            exc.detail = (f"die #{needed['index'] + 1} is missing: the rule needs a {needed['die']} for "
                          f"{needed['purpose']!r}" + (f" of combatant {needed['by']}" if needed["by"] else "") + " next")
            exc.args = (exc.detail,)
            raise

    def rolls(self) -> list[dict[str, Any]]:
        """API.md: `[{die, value, purpose, by}]` in the order consumed."""
        out = []
        for index, roll in enumerate(self.source.rolls):
            purpose, _, named = roll.purpose.partition(":")
            entry = {"die": roll.die, "value": roll.value, "purpose": PURPOSES.get(purpose, purpose),
                     "by": self.by.get(index) or named or None}
            if roll.dropped:
                entry["dropped"] = True
            out.append(entry)
        return out
