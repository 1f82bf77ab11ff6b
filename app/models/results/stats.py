"""The statistics' wire (`GET /v1/campaigns/{cid}/stats`)."""

from __future__ import annotations

from pydantic import Field

from app.models.results.common import Result


class ObservedExpected(Result):
    observed: int
    expected: float = Field(description="The sum of each test's exact probability of it, as rolled.")


class StatsOutcomes(Result):
    super_critical_success: ObservedExpected
    critical_success: ObservedExpected
    success: ObservedExpected
    failure: ObservedExpected
    critical_failure: ObservedExpected
    super_critical_failure: ObservedExpected


class StatsSuccesses(Result):
    observed: int
    expected: float = Field(description="Σ p: the sum of each test's exact probability of success (p_success).")
    sd: float = Field(description="sqrt(Σ p(1 − p)): the exact standard deviation of the number of successes.")
    luck: float | None = Field(
        description="(observed − expected) / sd: 0 is as lucky as the odds, +2 very lucky, −2 very unlucky; "
        "null when sd is 0 (no test with odds, or only certain ones)."
    )


class StatsDie(Result):
    count: int
    mean: float | None
    expected_mean: float | None = Field(description="A fair dN's mean, (N + 1) / 2.")


class StatsFigures(Result):
    tests: int = Field(description="Every test counted, those without odds included.")
    tests_without_odds: int = Field(
        description="Tests logged without their figures (before they were recorded, and AS-H2 rerolls): "
        "counted here and in `tests`, in nothing else."
    )
    outcomes: StatsOutcomes
    successes: StatsSuccesses
    dice: dict[str, StatsDie] = Field(description="The tests' dice by type (`d100`, `d10`, …).")


class CharacterStats(StatsFigures):
    character_id: str | None


class CampaignStats(Result):
    campaign_id: str
    character_id: str | None
    since: str | None
    campaign: StatsFigures
    characters: list[CharacterStats]
