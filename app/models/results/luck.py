"""The exact probability of success a test was rolled with."""

from __future__ import annotations

from pydantic import Field

from app.models.results.common import OddsValue, Result


class SuccessOdds(Result):
    """`p_success` (API.md "Provenance and who may enter which die"): the test's exact
    probability of success as it was rolled, the `success` the odds route gives for the same
    body. A test result puts it after its own fields, before its dice (`class XTestResult(Tail,
    Dice, SuccessOdds, XTestFields, Head)`); entries logged before it existed have none."""

    p_success: OddsValue = Field(
        None,  # type: ignore[assignment]  # set by the test use case, absent from older entries
        description="The exact probability of success the test was rolled with (the odds route's `success` "
        "for the same body); absent from entries logged before it was recorded.",
        examples=[{"probability": "67/100", "p": 0.67}],
    )
