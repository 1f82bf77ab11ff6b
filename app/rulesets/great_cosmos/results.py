"""Great Cosmos results: tests (stats and intuition), odds, level-ups."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.models.results.combat import CombatFields, CombatStep, rule_ids
from app.models.results.common import (
    Change,
    Dice,
    Die,
    Head,
    OddsFields,
    OddsValue,
    Result,
    Tail,
    TestFields,
)
from app.models.results.luck import SuccessOdds

RULESET = "great-cosmos"
Ruleset = Literal["great-cosmos"]
Stat = Literal["force", "esprit", "charisme", "agilite", "precision", "chance", "intuition"]
Pool = Literal["hp", "mp"]


class GreatCosmosKarmaEffect(Change):
    """GC-K1..K5: the stored karma before and after; `used` is the karma the test ran with
    (absent for an intuition test, which has no karma)."""

    used: int | None = None
    locked: bool | None = Field(None, description="GC-K5: a special posture locks the karma.")


class GreatCosmosTestEffects(Result):
    karma: GreatCosmosKarmaEffect


class GreatCosmosAdvantage(Result):
    """GC-P5: the Illumination's advantage d6 (stored with the posture) a d100 test applied."""

    die: int = Field(ge=1, le=6)
    effect: Literal["none", "no_hp_mp_cost", "extra_positive_effect", "bonus_10", "bonus_20", "extra_action"]
    bonus: int = Field(description="Added to the test's target: +10 (bonus_10), +20 (bonus_20), else 0.")


class GreatCosmosDisadvantage(Result):
    """GC-P7: the Sépulcrale backlash's disadvantage d6 (stored on the sheet while it runs) a d100 test applied."""

    die: int = Field(ge=1, le=6)
    effect: Literal["none", "hp_mp_cost_doubled", "extra_negative_effect", "malus_10", "malus_20", "action_cancelled"]
    malus: int = Field(description="Added to the test's target: -10 (malus_10), -20 (malus_20), else 0.")


class GreatCosmosTestFields(TestFields):
    ruleset: Ruleset
    stat: Stat
    modifier: int
    karma_die: int | None = Field(description="The d10 of GC-K2..K4, when karma applied.")
    advantage: GreatCosmosAdvantage | None = Field(
        None,
        description="GC-P5: during an Illumination, its advantage d6 (its +10/+20 is in `target`); null "
        "otherwise and for intuition.",
    )
    disadvantage: GreatCosmosDisadvantage | None = Field(
        None,
        description="GC-P7: during a Sépulcrale backlash, its disadvantage d6 (its -10/-20 is in `target`); "
        "null otherwise and for intuition.",
    )
    effects: GreatCosmosTestEffects
    intuition: Literal["good", "bad"] | None = Field(None, description="GC-T3: only on an intuition test.")


class GreatCosmosTestResult(Tail, Dice, SuccessOdds, GreatCosmosTestFields, Head):
    """GC-T1..T3, GC-K1..K5: one d100 test of a stat (karma d10) or d6 of intuition."""


class GreatCosmosChanceTest(GreatCosmosTestFields):
    """GC-L6: the chance test of a level-up, shaped like a test result (not logged on its own)."""

    rolls: list[Die]


class GreatCosmosOdds(OddsFields):
    ruleset: Ruleset
    karma_after: dict[str, OddsValue] | None = Field(
        None, description="The stored karma after the test, by value (absent for intuition)."
    )


class GreatCosmosLevelUpTransfer(Result):
    from_: str = Field(alias="from")
    to: str
    points: int


class GreatCosmosLevelUpChoices(Result):
    """The choices the request made (only those given)."""

    mode: Literal["two_d10", "one_d20"] | None = None
    stats: list[str] | None = None
    stat: str | None = None
    pool: Pool | None = None
    transfers: list[GreatCosmosLevelUpTransfer] | None = None
    light: int | None = None
    dark: int | None = None
    changes: dict[str, int] | None = None
    chance_bonus_pool: Pool


class GreatCosmosLevelChange(Result):
    field: str = Field(examples=["stats.force", "hp_max"])
    before: int | bool
    after: int | bool
    dice: list[int]


class GreatCosmosChanceBonus(Result):
    pool: Pool
    dice: list[int]
    total: int


class GreatCosmosLevelUp(Head):
    kind: Literal["level_up"]
    character_id: str
    ruleset: Ruleset
    rule: str = Field(examples=["GC-L1"])
    level: Change
    choices: GreatCosmosLevelUpChoices
    changes: list[GreatCosmosLevelChange]
    chance_test: GreatCosmosChanceTest
    chance_bonus: GreatCosmosChanceBonus | None


class GreatCosmosLevelUpResult(Tail, Dice, GreatCosmosLevelUp):
    """GC-L1..L7: one level more, with every die, choice and before/after value."""


# --- combat (encounter actions, roll-log entries of kind `combat`) --------------------------


class GreatCosmosCombatStep(CombatStep):
    rule: str = Field(pattern=rule_ids("GC"), examples=["GC-P3", "turn"])


class GreatCosmosCombatEntry(CombatFields):
    """A Great Cosmos encounter action, also its roll-log entry (`kind: "combat"`)."""

    ruleset: Ruleset
    type: Literal[
        "attack",
        "move",
        "dash",
        "posture",
        "final_skill",
        "start",
        "next_turn",
        "revert",
        "heal",
        "damage",
        "condition",
        "join",
    ]
    steps: list[GreatCosmosCombatStep]


RESULTS: dict[str, list[type[BaseModel]]] = {
    "test": [GreatCosmosTestResult],
    "odds": [GreatCosmosOdds],
    "level_up": [GreatCosmosLevelUpResult],
    "combat": [GreatCosmosCombatEntry],
}
