"""Dice epochs on the wire (API.md "Verifiable server dice (commit, then reveal)")."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from app.kit.models import Strict
from app.models.results.common import Result

MAX_SALTS = 16


def _printable(value: str) -> str:
    # a salt is joined to the others with "\n" in the message each die is derived from: a line break (or
    # any other control character) inside one would make two salt lists give the same message
    if not value.isprintable():
        raise ValueError("a salt is printable characters only (no control character, no line break)")
    return value


Salt = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_printable)]


class SaltCreate(Strict):
    salt: Salt = Field(description="1–64 printable characters, mixed into every die of the epoch.")


class DiceEpochPublic(Result):
    """A dice epoch: every server die of the campaign is number `k` of one, derived from its secret
    seed by HMAC-SHA256 (the derivation: API.md, docs/verify.md). The commitment is public from the
    start, the seed once the GM reveals the epoch."""

    id: str
    campaign_id: str
    commitment: str = Field(description="Lowercase hex SHA-256 of the seed's 32 bytes.")
    salts: list[str] = Field(description="In the order added (each mixed into every die's message).")
    started_at: str = Field(json_schema_extra={"format": "date-time"})
    revealed_at: str | None = Field(json_schema_extra={"format": "date-time"})
    dice: int = Field(description="How many server dice the log holds under this epoch (hidden GM rolls included).")
    seed: str | None = Field(None, description="The 32-byte seed in lowercase hex: present once revealed.")
    imported: bool = Field(False, description="Present (true) on an epoch an imported bundle carried.")


class DiceEpochList(Result):
    items: list[DiceEpochPublic] = Field(description="Newest first.")


class DiceEpochRevealed(DiceEpochPublic):
    """The epoch just revealed (its seed), and the campaign's new current epoch."""

    next: DiceEpochPublic
