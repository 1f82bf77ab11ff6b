"""The rulesets catalogue (public: no token needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.services import catalogue

router = APIRouter(prefix="/v1/rulesets", tags=["rulesets"])


@router.get("", summary="The four rulesets")
def list_rulesets() -> dict[str, Any]:
    return {"items": catalogue.list_rulesets(), "next_cursor": None}


@router.get("/{ruleset}", summary="A ruleset: stats, difficulties, options, sheet schema")
def get_ruleset(ruleset: str) -> dict[str, Any]:
    return catalogue.describe(ruleset)
