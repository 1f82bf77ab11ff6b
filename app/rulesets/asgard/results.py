"""Asgard results: tests (and rerolls), odds, oppositions, cooperations, character actions."""

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
    Outcome,
    Result,
    Tail,
    TestFields,
)
from app.models.results.luck import SuccessOdds

RULESET = "asgard"
Ruleset = Literal["asgard"]
Degree = Literal["none", "facile", "moyen", "difficile", "heroique"]


class AsgardTestSummary(Result):
    """One 3d6 (or 4d6) test inside an action, an opposition or a cooperation (AS-T1..T9)."""

    natural: int | None
    score: int | None
    target: int | None
    outcome: Outcome
    success: bool
    degree: Degree | None = Field(description="AS-T5: the degree an open test reached.")
    skill: str
    skill_value: int
    modifier: int
    base_target: int | None
    close_skill: bool
    heroism_4d6: bool
    take_11: bool
    dice: list[int]
    automatic: Literal["success", "failure"] | None = Field(description="AS-T3: all 1s or three 6s.")


class AsgardHeroismEffects(Result):
    heroism: Change | None = Field(None, description="AS-H1..H6: the heroism spent.")


class AsgardRetryOdds(Result):
    """AS-T4: the exact chances of success compared: the failed attempts' best, the retry's."""

    failed: OddsValue
    retry: OddsValue


class AsgardTestFields(TestFields):
    ruleset: Ruleset
    degree: Degree | None
    effects: AsgardHeroismEffects
    skill: str
    skill_value: int
    modifier: int
    base_target: int | None
    close_skill: bool
    heroism_4d6: bool
    take_11: bool
    dice: list[int]
    automatic: Literal["success", "failure", "difficulty", "retry_without_improvement"] | None = Field(
        description="AS-T3 dice, AS-T2 `automatique` difficulty, or AS-T4 retry without improvement."
    )
    difficulty: str | None
    retry_of: str | None
    improved: bool = Field(
        description="AS-T4: a retry whose exact chance of success beat the failed attempts' "
        "(it rolled); false otherwise."
    )
    retry_odds: AsgardRetryOdds | None = Field(None, description="AS-T4: the chances compared (a retry only).")
    rerolls: str | None = Field(description="AS-H2: the id of the test this one cancels and replaces.")


class AsgardTestResult(Tail, Dice, SuccessOdds, AsgardTestFields, Head):
    """AS-T1..T8: a test, an automatic result or an AS-H2 reroll (`rerolls`: the test it cancels)."""


class AsgardOdds(OddsFields):
    ruleset: Ruleset
    degree: dict[str, OddsValue] | None = Field(None, description="AS-T5: an open test's degrees.")


# --- opposition and cooperation ---------------------------------------------------


class AsgardSideDie(Die):
    side: Literal["a", "b"]
    character_id: str


class _Whose(Result):
    character_id: str


class AsgardOpposedSide(AsgardTestSummary, _Whose):
    effects: AsgardHeroismEffects


class AsgardOpposed(Head):
    kind: Literal["opposed"]
    ruleset: Ruleset
    character_id: str | None = Field(description="Always null: an opposition's characters are its sides'.")
    rolls: list[AsgardSideDie]
    winner: Literal["a", "b"]
    decided_by: Literal["automatic", "score", "skill", "defender"]
    winner_character_id: str
    margin: int
    rerolls: str | None = Field(None, description="AS-H2: the opposition this one cancels (one side rolled again).")
    rerolled_for: str | None = Field(None, description="AS-H2: the character whose side was rolled again.")
    a: AsgardOpposedSide
    b: AsgardOpposedSide


class AsgardOpposedResult(Tail, AsgardOpposed):
    """AS-T9: a's test against b's (ties go to b)."""


class AsgardParticipantDie(Die):
    participant: int
    character_id: str


class AsgardCooperator(AsgardTestSummary, _Whose):
    leader: bool
    adjustment: int
    effects: AsgardHeroismEffects


class AsgardGroup(Head):
    kind: Literal["group"]
    mode: Literal["cooperation"]
    ruleset: Ruleset
    character_id: str | None = Field(description="Always null: a group's characters are its participants'.")
    rolls: list[AsgardParticipantDie]
    skill: str
    difficulty: str | None
    modifier: int
    leader: int
    leader_character_id: str
    participants: list[AsgardCooperator]
    adjustment: int
    score: int | None
    target: int | None
    outcome: Outcome
    success: bool
    degree: Degree | None
    rerolls: str | None = Field(None, description="AS-H2: the cooperation this one cancels (rolled again whole).")
    rerolled_for: str | None = Field(None, description="AS-H2: the participant who spent the heroism point.")


class AsgardGroupResult(Tail, AsgardGroup):
    """AS-T6 cooperation: the best leads, +1/−1 for each other participant."""


# --- character actions --------------------------------------------------------------


class AsgardMalEnPoint(Result):
    """AS-C5: the resistance and volonte checks at 0 vitality."""

    damage: int
    resistance: AsgardTestSummary
    dying: bool
    dies_in_rounds: int | None
    volonte: AsgardTestSummary
    unconscious_rounds: int | None


class AsgardHarmEffects(Result):
    vitality: Change
    mal_en_point: AsgardMalEnPoint | None = Field(None, description="AS-C5, when vitality reached 0.")


class AsgardActionEffects(Result):
    """What an action changed (each only when it did)."""

    heroism: Change | None = None
    vitality: Change | None = None
    mal_en_point: AsgardMalEnPoint | None = None
    progression: Change | None = None


class AsgardAction(Head):
    """id, kind, type, ruleset, character_id, the action's own fields, then its `effects`."""

    kind: Literal["action"]
    type: str
    ruleset: Ruleset
    character_id: str


class AsgardFallFields(AsgardAction):
    type: Literal["fall"]
    metres: float
    voluntary: bool
    damage_dice: list[int]
    tests: list[AsgardTestSummary]
    cancelled: list[int]
    damage: int
    effects: AsgardHarmEffects


class AsgardFallResult(Tail, Dice, AsgardFallFields):
    """AS-C8."""


class AsgardFireFields(AsgardAction):
    type: Literal["fire"]
    size: Literal["torch", "campfire", "blaze"]
    rounds: int
    damage_per_round: list[int]
    damage: int
    effects: AsgardHarmEffects


class AsgardFireResult(Tail, Dice, AsgardFireFields):
    """AS-C9."""


class AsgardAsphyxiaRound(Result):
    round: int
    test: AsgardTestSummary | None
    damage: int | None


class AsgardAsphyxiaFields(AsgardAction):
    type: Literal["asphyxia"]
    from_round: int
    rounds: list[AsgardAsphyxiaRound]
    out_of_breath: bool
    next_round: int
    damage: int
    effects: AsgardHarmEffects


class AsgardAsphyxiaResult(Tail, Dice, AsgardAsphyxiaFields):
    """AS-C10."""


class AsgardDamageFields(AsgardAction):
    type: Literal["damage"]
    amount: int
    protection: int
    damage: int
    effects: AsgardHarmEffects


class AsgardDamageResult(Tail, Dice, AsgardDamageFields):
    """AS-C3 then AS-C5."""


class AsgardMalEnPointFields(AsgardAction):
    type: Literal["mal_en_point"]
    effects: AsgardActionEffects


class AsgardMalEnPointResult(Tail, Dice, AsgardMalEnPointFields):
    """AS-C5 checks for a character already at 0 vitality."""


class AsgardFirstAidFields(AsgardAction):
    type: Literal["first_aid"]
    healer_id: str | None
    test: AsgardTestSummary
    effects: AsgardActionEffects


class AsgardFirstAidResult(Tail, Dice, AsgardFirstAidFields):
    """AS-C6."""


class AsgardRestFields(AsgardAction):
    type: Literal["rest"]
    healer_id: str | None
    test: AsgardTestSummary | None
    gain: int
    effects: AsgardActionEffects


class AsgardRestResult(Tail, Dice, AsgardRestFields):
    """AS-C7."""


class AsgardChaseFields(AsgardAction):
    type: Literal["chase"]
    mode: Literal["foot", "vehicle", "mount"]
    test: AsgardTestSummary
    step: int
    progression: int
    effects: AsgardActionEffects


class AsgardChaseResult(Tail, Dice, AsgardChaseFields):
    """AS-C12: one chase turn."""


class AsgardHeroicEffectFields(AsgardAction):
    type: Literal["heroic_effect"]
    asset: str
    heroic_effect: str | None
    effects: AsgardActionEffects


class AsgardHeroicEffectResult(Tail, Dice, AsgardHeroicEffectFields):
    """AS-H3."""


class AsgardCancelDamageFields(AsgardAction):
    type: Literal["cancel_damage"]
    damage: int
    already_applied: bool
    damage_id: str | None = None
    lost: int | None = None  # the vitality the blow took (given back, never more): damage already applied
    effects: AsgardActionEffects


class AsgardCancelDamageResult(Tail, Dice, AsgardCancelDamageFields):
    """AS-H4."""


class AsgardProtectAllyFields(AsgardAction):
    type: Literal["protect_ally"]
    ally_id: str
    amount: int
    protection: int
    damage: int
    effects: AsgardActionEffects


class AsgardProtectAllyResult(Tail, Dice, AsgardProtectAllyFields):
    """AS-H5."""


# --- combat (encounter actions, roll-log entries of kind `combat`) --------------------------


class AsgardCombatStep(CombatStep):
    rule: str = Field(pattern=rule_ids("AS"), examples=["AS-C1", "turn"])


class AsgardCombatEntry(CombatFields):
    """A Asgard encounter action, also its roll-log entry (`kind: "combat"`)."""

    ruleset: Ruleset
    type: Literal["attack", "heroism_reroll", "start", "next_turn", "revert", "heal", "damage", "condition", "join"]
    steps: list[AsgardCombatStep]


ACTION_RESULTS: list[type[AsgardAction]] = [
    AsgardFallResult,
    AsgardFireResult,
    AsgardAsphyxiaResult,
    AsgardDamageResult,
    AsgardMalEnPointResult,
    AsgardFirstAidResult,
    AsgardRestResult,
    AsgardChaseResult,
    AsgardHeroicEffectResult,
    AsgardCancelDamageResult,
    AsgardProtectAllyResult,
]

RESULTS: dict[str, list[type[BaseModel]]] = {
    "test": [AsgardTestResult],
    "odds": [AsgardOdds],
    "reroll": [AsgardTestResult, AsgardOpposedResult, AsgardGroupResult],  # AS-H2: what was rolled again
    "opposed": [AsgardOpposedResult],
    "group": [AsgardGroupResult],
    "action": list(ACTION_RESULTS),
    "combat": [AsgardCombatEntry],
}
