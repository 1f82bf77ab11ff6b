"""The dice of one encounter action, each tagged with whose it is (`by`, a combatant id).

The pure rules take one `DiceSource`; `CombatDice.of(combatant_id)` hands them a
view of it whose every die is recorded as that combatant's. Rules that name the
entity in the purpose (`tie:<id>`, GC-O2) are read back the same way.

Each die comes from the source of whoever it is for (API.md "Provenance
and who may enter which die"): the GM's request gives every die (its `seed` or table
`dice`); a player's, only those of the combatants it controls; the others are the
server's dice (its dice epoch's, `EpochClaim`), never the player's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from app.kit.models import RollingRequest
from app.rules.dice import DiceSource, EpochClaim, Roll, dice_source
from app.rules.errors import DiceNeeded
from app.services.encounters.store import Fight
from app.services.provenance import check_caller_dice, provenance
from app.services.records import Principal

# the rules' own purposes, as an action shows them
PURPOSES = {
    "tie": "tiebreak",
    "initiative_roll_off": "tiebreak",
    "initiative tiebreak": "tiebreak",
    "initiative roll-off": "tiebreak",
}


class _Routed(DiceSource):
    """The action's dice, one record of them in the order consumed, each die drawn from the
    caller's source (its seed or table dice) when the caller controls whose it is (`controls`;
    None: the caller controls every die), else from the server's (its epoch's numbers). Whose a
    die is: the combatant rolling it (`who`, set by `_Combatant`), else the one its purpose names."""

    def __init__(self, caller: DiceSource, controls: Callable[[str | None], bool] | None, server: EpochClaim | None):
        super().__init__()
        self.caller, self.server, self.controls = caller, dice_source(server=server), controls
        self.who: str | None = None

    def _draw_one(self, faces: int, purpose: str) -> Roll:
        who = self.who or purpose.partition(":")[2] or None
        mine = self.controls is None or self.controls(who)
        return (self.caller if mine else self.server)._draw_one(faces, purpose)

    def _next(self, faces: int, purpose: str) -> int:
        return self._draw_one(faces, purpose).value

    def finish(self) -> None:
        """The caller's table dice, all used (the server's are never left over)."""
        self.caller.finish()


def _controlled(fight: Fight, player_id: str | None, combatant_id: str | None) -> bool:
    """Whether the player controls this combatant: its character is the player's."""
    found = fight.some([combatant_id])
    character = fight.character_of(found[0]) if found else None
    return character is not None and character.player_id == player_id


class _Combatant(DiceSource):
    """A view of the action's dice: what it rolls is recorded as one combatant's."""

    def __init__(self, owner: CombatDice, who: str):
        self.rolls = owner.source.rolls  # shared: mark()/since() see the whole action
        self.max_dice = owner.source.max_dice
        self._owner, self._who = owner, who

    def roll(self, faces: int, purpose: str) -> int:
        source = self._owner.source
        source.who = self._who
        try:
            value = source.roll(faces, purpose)
        except DiceNeeded as exc:
            exc.extra["needed"]["by"] = self._who
            raise
        finally:
            source.who = None
        self._owner.by[len(self.rolls) - 1] = self._who
        return value

    def roll_many(self, count: int, faces: int, purpose: str) -> list[int]:
        return [self.roll(faces, purpose) for _ in range(count)]

    def roll_sum(self, count: int, faces: int, purpose: str) -> int:
        return sum(self.roll_many(count, faces, purpose))


class CombatDice:
    """The dice of one action (`source`), whose each die is (`by`: index -> combatant id), and
    how the caller's were made (`provenance`: the entry's provenance fields)."""

    def __init__(
        self,
        *,
        seed: int | None = None,
        dice: list[int] | None = None,
        controls: Callable[[str | None], bool] | None = None,
        server: EpochClaim | None = None,
    ):
        self.source = _Routed(dice_source(seed=seed, dice=dice, server=server), controls, server)
        self.by: dict[int, str] = {}
        self.provenance = provenance(seed=seed, table=dice is not None)

    @classmethod
    def for_caller(
        cls, principal: Principal, req: RollingRequest, fight: Fight, server: EpochClaim | None
    ) -> CombatDice:
        """The request's `seed`/`dice` give every die of the GM's action, and
        of a player's only the dice of the combatants it controls (the rest are the server's: the
        unit of work's epoch claim, `server`; None where nothing is logged, a plan); a
        player's `seed` or `dice` is a 403 unless the campaign's `players_may_enter_dice`."""
        check_caller_dice(principal, fight.campaign_options, seed=req.seed, dice=req.dice)
        chosen = req.seed is not None or req.dice is not None  # else every die is the server's anyway
        controls = partial(_controlled, fight, principal.player_id) if chosen and not principal.is_gm else None
        return cls(seed=req.seed, dice=req.dice, controls=controls, server=server)

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
            exc.detail = (
                f"die #{needed['index'] + 1} is missing: the rule needs a {needed['die']} for "
                f"{needed['purpose']!r}" + (f" of combatant {needed['by']}" if needed["by"] else "") + " next"
            )
            exc.args = (exc.detail,)
            raise

    def rolls(self) -> list[dict[str, Any]]:
        """API.md: `[{die, value, purpose, by}]` in the order consumed."""
        out = []
        for index, roll in enumerate(self.source.rolls):
            purpose, _, named = roll.purpose.partition(":")
            entry = {
                "die": roll.die,
                "value": roll.value,
                "purpose": PURPOSES.get(purpose, purpose),
                "by": self.by.get(index) or named or None,
            }
            if roll.dropped:
                entry["dropped"] = True
            if roll.epoch is not None:
                entry["epoch"], entry["k"] = roll.epoch, roll.k
            out.append(entry)
        return out
