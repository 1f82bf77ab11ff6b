"""The rulesets catalogue (public: no token needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.boundary import BoundaryRoute
from app.services import catalogue

router = APIRouter(prefix="/v1/rulesets", tags=["rulesets"], route_class=BoundaryRoute)


@router.get("", response_model=catalogue.RulesetPage, summary="The rulesets")
def list_rulesets() -> Any:
    return catalogue.list_rulesets()


@router.get(
    "/{ruleset}",
    response_model=catalogue.RulesetDetail,
    summary="A ruleset: stats, difficulties, options, sheet schema, what its encounters offer",
)
def get_ruleset(ruleset: str) -> Any:
    return catalogue.describe(ruleset)
